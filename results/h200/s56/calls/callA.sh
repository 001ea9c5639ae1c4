#!/usr/bin/env bash
# Session 56, call A (one Hopper GPU; issue 13): the probe k0ahead (flash-sm90's forward: the producer issues the next
# work tile's Q and K_0 inside this tile's last K/V step, before that step's V; kOptK0Ahead, flash_sm90_block.cuh)
# under the rule written in docs/perf-notes.md, "Session 56", before the call. Session 55's call S found 9.8% of the
# consumers' warp samples at d = 128 N = 512 waiting at a work tile's start for its Q and K_0.
# The sm90 forward's GPU tests under k0ahead; memcheck and racecheck of a case no config names (GQA, partial tiles,
# several work tiles a block); the kernels' resource usage (spills); then ab_probe (scripts/call_step.sh, the house
# rule, torch-cudnn beside): three interleaved rounds def / k0ahead on ten short forward rows drawn with seed 5656
# before the call (batch 1-8, 1-16 kv heads, groups 1-8, at most 32 q heads, N 256-1536, d 64 / 128, causal or not,
# bf16 / fp16) and three controls (long rows, where a work tile has 64 K/V tiles: one boundary in 64 steps; the d = 64
# non-causal one splits, which k0ahead leaves as built).
set -uo pipefail
export DEADLINE=${DEADLINE:-560}
source scripts/call_step.sh
call_begin $OUT/A; mkdir -p $R/ab $R/specs
step tests-k0ahead 100 env FB_SM90_FWD_PROBE=k0ahead $gt "flash-sm90 meets*,[sched],*seq_q*,[sm90fwd]"
echo "tests-k0ahead: $(grep -E 'passed|failed' $R/tests-k0ahead.log | tail -2 | tr '\n' ' ')"
for row in 2,32,8,1030,64,fp16,false 3,32,8,1389,64,fp16,false 8,8,8,1306,64,bf16,true 8,32,4,855,128,bf16,false \
           8,8,4,1413,128,bf16,true 7,32,4,1234,64,bf16,true 8,32,16,501,128,bf16,false 6,16,2,866,64,fp16,false \
           5,16,4,1011,128,bf16,false 4,16,16,1434,128,bf16,true; do
  IFS=, read -r b h kv n d dt c <<< "$row"
  ab_spec $R/specs k0a-b$b-h$h-kv$kv-n$n-d$d-$dt-c${c:0:1} $b $h $kv $n $d $dt $c fwd
done
ab_spec $R/specs k0actl-b2-h16-kv16-n8192-d128-bf16-cf 2 16 16 8192 128 bf16 false fwd
ab_spec $R/specs k0actl-b2-h16-kv4-n8192-d64-bf16-ct 2 16 4 8192 64 bf16 true fwd
ab_spec $R/specs k0actl-b4-h8-kv8-n4096-d64-fp16-cf 4 8 8 4096 64 fp16 false fwd
for d in 128 64; do
  ab_spec $R san-d$d 3 12 4 700 $d bf16 false fwd
  for tool in memcheck racecheck; do
    step $tool-d$d 40 env FB_SM90_FWD_PROBE=k0ahead compute-sanitizer --tool $tool --error-exitcode 9 $fb run \
      $R/san-d$d.json --warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/$tool-d$d.json
    tail -1 $R/$tool-d$d.log
  done
done
cuobjdump --dump-resource-usage $fb > $R/resources-all.txt 2>&1
python3 - $R/resources-all.txt <<'PY' | tee $R/resources.txt
import re, sys
fn = None
for line in open(sys.argv[1]):
    m = re.search(r"Function (\S*flash_sm90_fwd_kernel\S*):", line)
    if m:
        fn = m.group(1)
        continue
    if fn and "REG:" in line:
        k = re.search(r"Lj(\d+)E", fn)
        if k and k.group(1) in ("8215", "24599", "12313", "28697"):
            f = dict(re.findall(r"(REG|STACK|LOCAL):(\d+)", line))
            print(f"kOpt {k.group(1)} {fn[:60]}... REG {f.get('REG')} STACK {f.get('STACK')} LOCAL {f.get('LOCAL')}")
        fn = None
PY
rm -f $R/resources-all.txt
ab_probe $R/specs 3 k0ahead FB_SM90_FWD_PROBE=k0ahead 'k0a-*' 'k0actl-*'
call_end A
