#!/usr/bin/env bash
# Session 44, call I (one H200; issue 13), prepared in session 44 for a later call: the probe long1h (flash-sm90's causal
# d = 128 head split into one-head units where those are long, FB_SM90_BWD_SPLIT=long1h; the rule in
# docs/perf-notes.md, "Session 44", written before the call). The binaries of commit.txt.
# 1. [sm90_long1h] as built and under long1h, [bwd_gqa] and [sm90_big8] under long1h.
# 2. Three interleaved rounds of the default and long1h (the order reversed in round 2), flash-sm90 alone in each
#    process, on long1h44-* (eight drawn causal d = 128 rows, two controls) and session 40's three u1long rows (call D's
#    `s8` rows); torch-cudnn once per spec (peers.py with its launch hold).
set -uo pipefail
export DEADLINE=${DEADLINE:-540}
source scripts/call_step.sh  # call_begin, step, smi_start/stop, ab_rounds, peers_once, call_end
call_begin $OUT/I; mkdir -p $R/ab $R/specs
cp results/h200/s44/calls/long1h44*.json $R/specs/
cp results/h200/s40/calls/u1long-b2-h48-kv6-n6800.json results/h200/s40/calls/u1long-b8-h8-kv1-n8500.json \
  results/h200/s40/calls/u1long-b4-h8-kv1-n7900.json $R/specs/
step tests-built 60 $gt "[sm90_long1h]"
step tests-long1h 120 env FB_SM90_BWD_SPLIT=long1h $gt "[sm90_long1h],[bwd_gqa],[sm90_big8]"
for t in built long1h; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
specs=$(cd $R/specs && ls *.json | sed 's/\.json$//' | tr '\n' ' ')
smi_start
ab_rounds $R/ab $R/specs 3 "$specs" def=X=1 long1h=FB_SM90_BWD_SPLIT=long1h
peers_once $R/ab $R/specs "$specs" cudnn
smi_stop
# BASE = def: default time / long1h time, above 1: long1h faster
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn def long1h > $R/table.txt 2>&1
cut -c1-200 $R/table.txt
# The rule, written before the call (docs/perf-notes.md, "Session 44"): long1h becomes the default for causal d = 128
# splits if the eleven rows' geomean is >= 1.01 with none under 0.99 and the controls read 0.99-1.01, every row verified
# (scripts/ab_rule.py judges it: exit 0 met; added in session 45, before the call)
python3 scripts/ab_rule.py $R/ab --spec-dir $R/specs --kernel flash-sm90 --base def --variant long1h --rounds 3 \
  --rows 'long1h44-b*' --rows 'u1long-*' --controls 'long1h44ctl-*' --min-geomean 1.01 --min-row 0.99 \
  --control-band 0.99:1.01 --json $R/rule.json > $R/rule.txt 2>&1; echo "rule rc=$?"
tail -6 $R/rule.txt | cut -c1-150
call_end I
