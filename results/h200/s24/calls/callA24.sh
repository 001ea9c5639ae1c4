#!/usr/bin/env bash
# Session 24 call A (one H200; issue 13): the query tail of flash-sm90's non-causal d = 128 backward (kBwd128QTail,
# flash_sm90_bwd.cu qtail_parts()), its GPU tests and sanitizers, its A/B on shapes no config names, and session 23's
# prepared d = 64 split job. Binaries built on the lead's machine for sm_90a (out/b.txz; commit in commit.txt).
#  1. GPU tests [bwd128] (every d = 128 backward shape; [sm90_qtail] among them) and [flash_tail] (flash's tail split,
#     whose model moved into common/head_split.h unchanged).
#  2. compute-sanitizer memcheck / racecheck / synccheck / initcheck on sanitize-qtail.json under FB_SM90_BWD_QTAIL=3.
#  3. A/B, two interleaved rounds (off = FB_SM90_BWD_QTAIL=off, on = the default, torch-cudnn), qtail-mha.json and
#     qtail-gqa.json, bf16, verified. Rule (written before the run): keep the query tail on by default if on / off is
#     >= 1.01x in geomean over the cases of both specs and rounds, and no case is below 0.98x in both rounds.
#     Prediction (the model): +8% at 5 x 20 heads N = 1536, +4-7% at the GQA rows, +0-4% elsewhere.
#  4. results/h200/s23/calls/job24-split64.sh (its rule and prediction in docs/perf-notes.md, session 23).
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-560}
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
step tests 200 $src/build-dev/tests/flashbench_gpu_tests "[bwd128],[flash_tail]"
tail -3 $R/tests.log
step sanitize 120 env FB_SM90_BWD_QTAIL=3 scripts/sanitize.sh -e $fb -s $c/sanitize-qtail.json $R/sanitize.json
cat $R/sanitize.json 2>/dev/null | head -c 600; echo
for r in 1 2; do
  for s in mha gqa; do
    step off-$s-$r 40 env FB_SM90_BWD_QTAIL=off $fb run $c/qtail-$s.json --no-ceilings -q -o $R/off-$s-$r.json
    step on-$s-$r 40 $fb run $c/qtail-$s.json --no-ceilings -q -o $R/on-$s-$r.json
    step peers-$s-$r 50 python3 scripts/peers.py $c/qtail-$s.json --backends cudnn -o $R/peers-$s-$r.json
  done
done
python3 $c/qtail_table.py $R mha gqa | tee $R/table.txt
if [ "$(left)" -gt 90 ]; then BUILD=$src/build-dev OUTDIR=$R DEADLINE=$(( $(left) - 10 )) bash results/h200/s23/calls/job24-split64.sh > $R/split64.log 2>&1; tail -9 $R/split64.log; else echo "SKIP split64 (no time)"; fi
kill $smi
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
