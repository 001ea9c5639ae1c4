#!/usr/bin/env bash
# Session 57, call A (one Hopper GPU; issue 13): the probe k0rec (flash-sm90's forward: the producer issues the next
# work tile's Q and K_0 inside this tile's last K/V step, before that step's V, keeping one tile in registers;
# kOptK0Rec, produce_ring_k0_rec in flash_sm90_block.cuh) under the rule written in docs/perf-notes.md, "Session 57",
# before the call. Session 56's k0ahead (the same order, two tiles in the producer's registers, a 40-byte stack frame)
# gained only on its one row at 4 K/V tiles a work tile (1.034x); k0rec's kernels build without a frame or spill.
# The sm90 forward's GPU tests under k0rec; memcheck of a case no config names (GQA, partial tiles, several work
# tiles a block) at d = 128 and 64; the kernels' resource usage; then ab_probe (scripts/call_step.sh, the house rule,
# torch-cudnn beside): three interleaved rounds def / k0rec over eight short forward rows (at most 4 K/V tiles a work
# tile) and five mid rows (5-12), drawn with seed 5757 before the call (batch 1-8, 1-16 kv heads, groups 1, 2, 4, 8,
# at most 32 q heads, d 64 / 128, causal or not, bf16 / fp16, at least 264 work tiles), and call A's three long
# controls of session 56. The mid rows' check is a second reading of the same files (scripts/ab_rule.py).
set -uo pipefail
export DEADLINE=${DEADLINE:-560}
source scripts/call_step.sh
call_begin $OUT/A; mkdir -p $R/ab $R/specs
step tests-k0rec 100 env FB_SM90_FWD_PROBE=k0rec $gt "flash-sm90 meets*,[sched],*seq_q*,[sm90fwd]"
echo "tests-k0rec: $(grep -E 'passed|failed' $R/tests-k0rec.log | tail -2 | tr '\n' ' ')"
for row in 5,22,11,375,128,bf16,false 5,20,5,474,64,fp16,false 6,13,13,490,128,bf16,false 7,28,14,441,128,fp16,false \
           3,30,15,298,128,fp16,true 7,20,5,494,64,bf16,true 7,32,16,417,64,bf16,false 8,32,4,359,128,bf16,false; do
  IFS=, read -r b h kv n d dt c <<< "$row"
  ab_spec $R/specs k0r-b$b-h$h-kv$kv-n$n-d$d-$dt-c${c:0:1} $b $h $kv $n $d $dt $c fwd
done
for row in 6,8,4,1056,64,bf16,false 7,12,3,1062,64,fp16,false 7,24,3,777,64,fp16,false 4,16,4,1251,128,fp16,true \
           8,32,16,866,128,fp16,true; do
  IFS=, read -r b h kv n d dt c <<< "$row"
  ab_spec $R/specs k0rmid-b$b-h$h-kv$kv-n$n-d$d-$dt-c${c:0:1} $b $h $kv $n $d $dt $c fwd
done
ab_spec $R/specs k0rctl-b2-h16-kv16-n8192-d128-bf16-cf 2 16 16 8192 128 bf16 false fwd
ab_spec $R/specs k0rctl-b2-h16-kv4-n8192-d64-bf16-ct 2 16 4 8192 64 bf16 true fwd
ab_spec $R/specs k0rctl-b4-h8-kv8-n4096-d64-fp16-cf 4 8 8 4096 64 fp16 false fwd
for d in 128 64; do
  ab_spec $R san-d$d 3 12 4 700 $d bf16 false fwd
  step memcheck-d$d 40 env FB_SM90_FWD_PROBE=k0rec compute-sanitizer --tool memcheck --error-exitcode 9 $fb run \
    $R/san-d$d.json --warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/memcheck-d$d.json
  tail -1 $R/memcheck-d$d.log
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
        if k and int(k.group(1)) & 40960 in (8192, 40960):  # fastlse's variants, with and without kOptK0Rec
            f = dict(re.findall(r"(REG|STACK|LOCAL):(\d+)", line))
            print(f"kOpt {k.group(1)} {fn[:60]}... REG {f.get('REG')} STACK {f.get('STACK')} LOCAL {f.get('LOCAL')}")
        fn = None
PY
rm -f $R/resources-all.txt
ab_probe $R/specs 3 k0rec FB_SM90_FWD_PROBE=k0rec 'k0r-*' 'k0rctl-*'
# The mid rows: level or better (geomean >= 0.995, none below 0.98) decides the scope if the short rule is met.
python3 scripts/ab_rule.py $R/ab --spec-dir $R/specs --kernel flash-sm90 --base def --variant k0rec --rounds 3 \
  --rows 'k0rmid-*' --controls 'k0rctl-*' --min-geomean 0.995 --min-row 0.98 --control-band 0.97:1.03 \
  --controls-geomean-band 0.99:1.01 --json $R/mid.json > $R/mid.txt 2>&1
echo "mid-k0rec rc=$?"
cut -c1-150 $R/mid.txt
call_end A
