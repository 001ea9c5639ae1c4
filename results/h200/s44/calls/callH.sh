#!/usr/bin/env bash
# Session 44, call H (one H200; issue 13): a head split's launches fused (flash-sm90 backward, the probe
# FB_SM90_BWD_LAUNCHES=fused; the rule in docs/perf-notes.md, "Session 44", written before the call). The binaries of
# commit.txt.
# 1. Every GPU test as built (the new [bwd_gqa] case: repeated runs on one workspace), and [bwd_gqa] under
#    FB_SM90_BWD_LAUNCHES=fused; memcheck of a fused split backward (flashbench under compute-sanitizer, one warm-up
#    and one rep on one workspace).
# 2. Which rows split: each spec's --list (workspace bytes) as built and under FB_SM90_BWD_SPLIT=1 (no split).
# 3. Three interleaved rounds of the default and `fused` (the order reversed in round 2), flash-sm90 alone in each
#    process, on fuse44-* (eight drawn GQA/MQA shapes, two MHA controls), hold44-small's backward and session 40's
#    2 x 16 / 4 N = 1300 d = 128 fp16 backward; torch-cudnn once per spec (peers.py with its launch hold).
set -uo pipefail
export DEADLINE=${DEADLINE:-540}
source scripts/call_step.sh  # call_begin, step, smi_*, ab_rounds, peers_once, spec_for, list_beside, call_end
call_begin $OUT/H; mkdir -p $R/ab $R/specs
c=results/h200/s44/calls
cp $c/fuse44*.json $R/specs/
spec_for $c/hold44-small.json $R/specs/hold44-small-bwd.json flash-sm90 bwd
held=held40g-b2-h16-kv4-n1300-d128
spec_for results/h200/s40/calls/$held.json $R/specs/$held.json flash-sm90
step tests-all 200 $gt
step tests-fused 40 env FB_SM90_BWD_LAUNCHES=fused $gt "[bwd_gqa]"
for t in all fused; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
step memcheck 60 env FB_SM90_BWD_LAUNCHES=fused compute-sanitizer --tool memcheck --error-exitcode 9 $fb run $R/specs/fuse44-b1-h8-kv1-n500-d128.json \
  --warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/memcheck.json
tail -3 $R/memcheck.log
specs=$(cd $R/specs && ls *.json | sed 's/\.json$//' | tr '\n' ' ')
list_beside $R/specs "$specs" split=1 FB_SM90_BWD_SPLIT=1 $R/split.txt
cut -c1-160 $R/split.txt
smi_start
ab_rounds $R/ab $R/specs 3 "$specs" def=X=1 fused=FB_SM90_BWD_LAUNCHES=fused
peers_once $R/ab $R/specs "$specs" cudnn
smi_stop
# BASE = def: default time / variant time; above 1: the fused launches faster
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn def fused > $R/table.txt 2>&1
cut -c1-200 $R/table.txt
call_end H
