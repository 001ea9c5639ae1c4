#!/usr/bin/env bash
# Session 57, call C (prepared for a later session; one Hopper GPU; issue 13): the probe k0try at d = 64 under the rule
# written in docs/perf-notes.md, "Session 57", before the call. Call A read k0rec (the next work tile's Q and K_0
# before the last step's V) at d = 64 0.979-0.991x of the plain order, so it ships at d = 128 only; k0try issues that V
# first where its stage is free already (mbarrier.test_wait; kOptK0Try). The sm90 forward's GPU tests and memcheck
# under `k0rec,k0try`; then three interleaved rounds of def, k0rec (FB_SM90_FWD_PROBE=k0rec) and k0try
# (FB_SM90_FWD_PROBE=k0rec,k0try) over eight d = 64 forwards drawn with seed 5759 before the call (batch 1-8, 1-16 kv
# heads, groups 1, 2, 4, 8, at most 32 q heads, N 256-1536, causal or not, bf16 / fp16, at least 264 work tiles of
# 192 rows) and three d = 64 non-causal long controls whose launches split (neither word changes them); and three
# d = 128 rows (k0try against the default's k0rec there: a reading, no rule).
set -uo pipefail
export DEADLINE=${DEADLINE:-400}
source scripts/call_step.sh
call_begin $OUT/C; mkdir -p $R/ab $R/specs
step tests-k0try 100 env FB_SM90_FWD_PROBE=k0rec,k0try $gt "flash-sm90 meets*,[sched],*seq_q*,[sm90fwd]"
echo "tests-k0try: $(grep -E 'passed|failed' $R/tests-k0try.log | tail -2 | tr '\n' ' ')"
for row in 7,8,1,1362,fp16,false 8,24,6,338,fp16,true 7,8,8,1022,bf16,false 8,6,3,1465,fp16,false \
           8,16,4,503,fp16,false 8,16,16,1212,bf16,false 7,16,16,615,bf16,true 8,10,5,1142,fp16,false; do
  IFS=, read -r b h kv n dt c <<< "$row"
  ab_spec $R/specs k0c-b$b-h$h-kv$kv-n$n-d64-$dt-c${c:0:1} $b $h $kv $n 64 $dt $c fwd
done
ab_spec $R/specs k0cctl-b4-h8-kv8-n4096-d64-fp16-cf 4 8 8 4096 64 fp16 false fwd
ab_spec $R/specs k0cctl-b1-h16-kv16-n16384-d64-bf16-cf 1 16 16 16384 64 bf16 false fwd
ab_spec $R/specs k0cctl-b2-h32-kv32-n8192-d64-bf16-cf 2 32 32 8192 64 bf16 false fwd
ab_spec $R/specs k0c128-b8-h32-kv4-n359-d128-bf16-cf 8 32 4 359 128 bf16 false fwd
ab_spec $R/specs k0c128-b7-h16-kv8-n1271-d128-fp16-cf 7 16 8 1271 128 fp16 false fwd
ab_spec $R/specs k0c128-b7-h16-kv2-n1320-d128-bf16-ct 7 16 2 1320 128 bf16 true fwd
for d in 64 128; do
  ab_spec $R san-d$d 3 12 4 700 $d bf16 false fwd
  step memcheck-d$d 40 env FB_SM90_FWD_PROBE=k0rec,k0try compute-sanitizer --tool memcheck --error-exitcode 9 $fb \
    run $R/san-d$d.json --warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/memcheck-d$d.json
  tail -n 1 $R/memcheck-d$d.log
done
specs=$(cd $R/specs && ls -- *.json | sed 's/\.json$//' | tr '\n' ' ')
list_beside $R/specs "$specs" k0try FB_SM90_FWD_PROBE=k0rec,k0try $R/list.txt
smi_start
ab_rounds $R/ab $R/specs 3 "$specs" def=X=1 k0rec=FB_SM90_FWD_PROBE=k0rec k0try=FB_SM90_FWD_PROBE=k0rec,k0try
smi_stop
# The rule: k0try against def on the d = 64 rows.
python3 scripts/ab_rule.py $R/ab --spec-dir $R/specs --kernel flash-sm90 --base def --variant k0try --rounds 3 \
  --rows 'k0c-*' --controls 'k0cctl-*' --min-geomean 1.01 --min-row 0.98 --control-band 0.97:1.03 \
  --controls-geomean-band 0.99:1.01 --json $R/rule.json > $R/rule.txt 2>&1
echo "rule-k0try rc=$?"
cut -c1-150 $R/rule.txt
# Readings, no rule: k0rec against def at d = 64 (call A's loss again), k0try against def at d = 128 (def is k0rec
# there).
for v in k0rec k0try; do
  rows='k0c-*'
  [ $v = k0try ] && rows='k0c128-*'
  python3 scripts/ab_rule.py $R/ab --spec-dir $R/specs --kernel flash-sm90 --base def --variant $v --rounds 3 \
    --rows "$rows" --controls 'k0cctl-*' --min-geomean 1.0 --min-row 0.5 --control-band 0.97:1.03 \
    --json $R/reading-$v.json > $R/reading-$v.txt 2>&1
  echo "reading-$v:"; grep -E "^  row|^rows" $R/reading-$v.txt | cut -c1-150
done
call_end C
