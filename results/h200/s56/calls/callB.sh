#!/usr/bin/env bash
# Session 56, call B (prepared for a later session; one Hopper GPU; issue 13): the probe k0short (kOptK0Ahead, call A's
# k0ahead, on launches whose work tiles are at most 4 K/V tiles long: seq_k <= 512) under the rule written in
# docs/perf-notes.md, "Session 56", before the call. Call A (results/h100/s56/A) read k0ahead level over ten rows of
# 7-12 K/V tiles a work tile and 1.034x (1.014 / 1.050 / 1.039 by round) on its one row of 4; these rows are fresh.
# The sm90 forward's GPU tests under k0short (their short cases: 500 x 300, 320, GQA 512, ...); memcheck and racecheck
# (80 s each) of a short GQA case no config names; the kernels' stack frames; then ab_probe (scripts/call_step.sh, the
# house rule, torch-cudnn beside): three interleaved rounds def / k0short on eight rows drawn with seed 5757 before the
# call (batch 1-16, 1-16 kv heads, groups 1-8, at most 32 q heads, N 200-512, d 64 / 128, causal or not, bf16 / fp16)
# and three controls k0short leaves as built (N 640, 1024 and 2048: more than 4 K/V tiles a work tile).
set -uo pipefail
export DEADLINE=${DEADLINE:-500}
source scripts/call_step.sh
call_begin $OUT/B; mkdir -p $R/ab $R/specs
step tests-k0short 100 env FB_SM90_FWD_PROBE=k0short $gt "flash-sm90 meets*,[sched],*seq_q*,[sm90fwd]"
echo "tests-k0short: $(grep -E 'passed|failed' $R/tests-k0short.log | tail -2 | tr '\n' ' ')"
for row in 16,32,8,237,128,bf16,false 11,32,16,412,128,fp16,true 9,32,16,373,64,fp16,true \
           12,32,16,268,128,fp16,true 12,32,8,376,64,bf16,false 14,32,8,489,128,fp16,false \
           11,32,16,324,64,bf16,true 8,32,16,493,64,fp16,false; do
  IFS=, read -r b h kv n d dt c <<< "$row"
  ab_spec $R/specs k0s-b$b-h$h-kv$kv-n$n-d$d-$dt-c${c:0:1} $b $h $kv $n $d $dt $c fwd
done
ab_spec $R/specs k0sctl-b8-h16-kv4-n640-d128-bf16-cf 8 16 4 640 128 bf16 false fwd
ab_spec $R/specs k0sctl-b8-h16-kv16-n1024-d64-bf16-ct 8 16 16 1024 64 bf16 true fwd
ab_spec $R/specs k0sctl-b4-h16-kv8-n2048-d128-fp16-cf 4 16 8 2048 128 fp16 false fwd
ab_spec $R san 3 12 4 300 128 bf16 false fwd
for tool in memcheck racecheck; do
  step $tool 80 env FB_SM90_FWD_PROBE=k0short compute-sanitizer --tool $tool --error-exitcode 9 $fb run $R/san.json \
    --warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/$tool.json
  tail -1 $R/$tool.log
done
cuobjdump --dump-resource-usage $fb 2>/dev/null | grep -A1 "flash_sm90_fwd_kernel.*Lj\(24599\|28697\)E" |
  grep -o "STACK:[0-9]*" | sort | uniq -c | tee $R/stack.txt
ab_probe $R/specs 3 k0short FB_SM90_FWD_PROBE=k0short 'k0s-*' 'k0sctl-*'
call_end B
