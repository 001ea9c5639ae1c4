#!/usr/bin/env bash
# Session 57, call B (one Hopper GPU; issue 13): k0rec's length at d = 128 under the rule written in
# docs/perf-notes.md, "Session 57", before the call. Call A made kOptK0Rec the default on d = 128 launches whose work
# tiles are at most 4 K/V tiles long; its two d = 128 mid rows (7-10 K/V tiles) read 1.018 / 1.037x. Here
# FB_SM90_FWD_PROBE=k0rec (every length) against the default: eight d = 128 forward rows of 5-16 K/V tiles (N 513-2048)
# drawn with seed 5758 before the call (batch 1-8, 1-16 kv heads, groups 1, 2, 4, 8, at most 32 q heads, causal or
# not, bf16 / fp16, at least 264 work tiles) and three d = 128 short controls (N 256-512, drawn with them), which run
# the same kernel on both sides. First the sm90 forward's GPU tests as built (the default now takes kOptK0Rec).
set -uo pipefail
export DEADLINE=${DEADLINE:-200}
source scripts/call_step.sh
call_begin $OUT/B; mkdir -p $R/ab $R/specs
step tests-def 60 $gt "flash-sm90 meets*,[sched],*seq_q*,[sm90fwd]"
echo "tests-def: $(grep -E 'passed|failed' $R/tests-def.log | tail -2 | tr '\n' ' ')"
for row in 2,10,10,1899,bf16,true 7,16,2,1320,bf16,true 7,16,8,1271,fp16,false 7,26,13,1678,bf16,false \
           8,28,14,1666,bf16,false 8,8,2,1661,fp16,true 7,16,8,2046,bf16,true 6,8,1,703,fp16,false; do
  IFS=, read -r b h kv n dt c <<< "$row"
  ab_spec $R/specs k0b-b$b-h$h-kv$kv-n$n-d128-$dt-c${c:0:1} $b $h $kv $n 128 $dt $c fwd
done
for row in 7,28,7,269,fp16,true 3,24,6,446,bf16,true 4,24,12,271,fp16,true; do
  IFS=, read -r b h kv n dt c <<< "$row"
  ab_spec $R/specs k0bctl-b$b-h$h-kv$kv-n$n-d128-$dt-c${c:0:1} $b $h $kv $n 128 $dt $c fwd
done
specs=$(cd $R/specs && ls -- *.json | sed 's/\.json$//' | tr '\n' ' ')
smi_start
ab_rounds $R/ab $R/specs 3 "$specs" def=X=1 k0rec=FB_SM90_FWD_PROBE=k0rec
smi_stop
python3 scripts/ab_rule.py $R/ab --spec-dir $R/specs --kernel flash-sm90 --base def --variant k0rec --rounds 3 \
  --rows 'k0b-*' --controls 'k0bctl-*' --min-geomean 1.01 --min-row 0.98 --control-band 0.97:1.03 \
  --controls-geomean-band 0.99:1.01 --json $R/rule.json > $R/rule.txt 2>&1
echo "rule-k0rec rc=$?"
cut -c1-150 $R/rule.txt
call_end B
