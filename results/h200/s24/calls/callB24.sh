#!/usr/bin/env bash
# Session 24 call B (one H200; issue 13): the query tail's A/B again, clean. Call A's first round was void: its
# racecheck step timed out and the sanitizer's flashbench kept the GPU busy under the first "off" runs (2x their
# round-2 times). Binaries built on the lead's machine for sm_90a (out/b.txz; commit in commit.txt: call A's kernels
# plus the d = 64 non-causal head-split rule, session 23's prepared job, MET in call A).
#  1. GPU tests [bwd128], [bwd64], [bwd_gqa] (the head-split choice moved at d = 64; the split kernels are unchanged).
#  2. A/B, two interleaved rounds (off = FB_SM90_BWD_QTAIL=off, on = the default, torch-cudnn per spec in turn):
#     qtail-grid.json (issue 13's d = 128 non-causal rows, bf16 + fp16), qtail-mha.json, qtail-gqa.json. Rule (call A's,
#     written before call A): keep the query tail on by default if on / off >= 1.01x in geomean over the split cases of
#     the three specs and both rounds (grid N = 1k is not split: a control), and no case below 0.98x in both rounds.
#     Prediction (the model): grid +0.8 / +1.4 / +1.9 / +2.3% at N = 2k / 4k / 8k / 16k; mha +8.1 / +3.9 / +1.4%
#     (20 heads N = 1536 / 3000 / 6144), +3.7 / +1.2 / +0.2% (40 heads); gqa +5.6 / +7.5%. Call A's clean round: mha
#     0.996-1.033x, gqa 1.020 / 1.031x.
#  3. Last (nothing timed after it): compute-sanitizer racecheck, synccheck, initcheck on sanitize-qtail1.json under
#     FB_SM90_BWD_QTAIL=3 (memcheck was clean in call A).
R=$OUT/B; mkdir -p $R; export DEADLINE=${DEADLINE:-570}
set -uo pipefail
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {  # step NAME MAX_SECONDS CMD...: skipped when under MAX/2 is left
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt $(( max / 2 )) ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; timeout -k 3 $max "$@" > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"
}
tar xJf out/b.txz
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
fb=$src/build-dev/flashbench
cat out/commit.txt > $R/commit.txt 2>/dev/null
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 > $R/smi.csv 2>&1 &
smi=$!
c=results/h200/s24/calls
step tests 150 $src/build-dev/tests/flashbench_gpu_tests "[bwd128],[bwd64],[bwd_gqa]"
tail -2 $R/tests.log
for r in 1 2; do
  for s in grid mha gqa; do
    step off-$s-$r 60 env FB_SM90_BWD_QTAIL=off $fb run $c/qtail-$s.json --no-ceilings -q -o $R/off-$s-$r.json
    step on-$s-$r 60 $fb run $c/qtail-$s.json --no-ceilings -q -o $R/on-$s-$r.json
    step peers-$s-$r 60 python3 scripts/peers.py $c/qtail-$s.json --backends cudnn -o $R/peers-$s-$r.json
  done
done
python3 $c/qtail_table.py $R grid mha gqa | tee $R/table.txt
for t in synccheck initcheck racecheck; do
  step san-$t 200 env FB_SM90_BWD_QTAIL=3 scripts/sanitize.sh -e $fb -s $c/sanitize-qtail1.json -t $t $R/san-$t.json
  grep -A2 "^tool" $R/san-$t.log
done
kill $smi
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
