#!/usr/bin/env bash
# Session 44, call G (one H200; issue 13): the binaries of commit.txt (95dc217's kernels; long64 the default).
# 1. Every GPU test as built: the first device run of session 43's edited tests ([sm90_long64] expecting long64's
#    splits as built, [sm90_subq] removed); [sm90_long64] under FB_SM90_BWD_SPLIT=nolong64 (its rows run whole).
# 2. The peers' launch hold (scripts/peers.py, session 44): the same peers timed with the hold and without it
#    (--no-launch-hold, the timing before this session), interleaved (the order reversed in round 2), beside
#    flashbench's flash and flash-sm90 once a round, on short rows: the papers' grid at N = 512 / 1024
#    (hold44-grid), one sequence of 16 q / 4 kv heads at N = 512 / 1024 (hold44-small), and session 40's
#    2 x 16 / 4 N = 1300 d = 128 fp16 backward, whose torch-cudnn median swung by a third between rounds in session
#    43's call C (median / min up to 1.38). The peers skip the fp64 reference here (--ref-max-seq 0: timing only).
set -uo pipefail
export DEADLINE=${DEADLINE:-540}
source scripts/call_step.sh  # call_begin, step, smi_start/stop, ab_rounds, peers_once, call_end
call_begin $OUT/G; mkdir -p $R/hold
step tests-all 200 $gt
step tests-nolong64 40 env FB_SM90_BWD_SPLIT=nolong64 $gt "[sm90_long64]"
for t in all nolong64; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
smi_start
specs="results/h200/s44/calls/hold44-small.json results/h200/s44/calls/hold44-grid.json
  results/h200/s40/calls/held40g-b2-h16-kv4-n1300-d128.json"
for r in 1 2; do
  for p in $specs; do
    n=$(basename $p .json)
    step fb-$n-$r 60 $fb run $p --no-ceilings -q -o $R/hold/fb-$n-$r.json
    order="hold nohold"; [ $r = 2 ] && order="nohold hold"
    for v in $order; do
      extra=""; [ $v = nohold ] && extra=--no-launch-hold
      step $v-$n-$r 45 python3 scripts/peers.py $p --backends cudnn,flash --ref-max-seq 0 $extra -o $R/hold/$v-$n-$r.json
    done
  done
done
smi_stop
python3 results/h200/s44/calls/hold_table.py $R/hold > $R/table.txt 2>&1
grep -h "launch hold" $R/hold-*.log $R/*.log 2>/dev/null | head -5
cut -c1-150 $R/table.txt
call_end G
