#!/usr/bin/env bash
# Session 36, call E (one H200; issue 13): the final binaries (commit.txt). [sm90_pgroup] (its rows now shapes no head
# split takes, each checked to run the plane-group order) as built and under pgl2; compute-sanitizer memcheck of a
# widened, non-dividing plane group (san-pgroup.json); the GQA d = 64 grid (configs/gqa-d64-h200.json, its causal
# backward rows the ones session 36 changes) beside torch-cudnn and FlashAttention-2, two rounds.
R=$OUT/E; mkdir -p $R; export DEADLINE=${DEADLINE:-520}
set -uo pipefail
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {  # step NAME MAX_SECONDS CMD...: skipped when under MAX/2 is left; the step's process group stopped at MAX
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt $(( max / 2 )) ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; setsid timeout -k 3 $max "$@" < /dev/null > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"
}
tar xJf out/b.txz
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
fb=$src/build-dev/flashbench
gt=$src/build-dev/tests/flashbench_gpu_tests
cat out/commit.txt > $R/commit.txt 2>/dev/null
c=results/h200/s36/calls
step tests-pgroup 60 $gt "[sm90_pgroup]"
step tests-pgroup-pgl2 60 env FB_SM90_BWD64=pgl2 $gt "[sm90_pgroup]"
for t in pgroup pgroup-pgl2; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
step san-memcheck 120 compute-sanitizer --tool memcheck --error-exitcode 9 $fb run $c/san-pgroup.json --no-ceilings -q \
  -o $R/san-memcheck.json
pkill -9 -f compute-sanitizer; pkill -9 -f build-dev/flashbench; sleep 2
tail -3 $R/san-memcheck.log
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 \
  > $R/smi.csv 2>&1 &
smi=$!
for r in 1 2; do
  step fb-gqa64-$r 90 $fb run configs/gqa-d64-h200.json -q -o $R/gqa-d64-h200-$r.json
  step peers-gqa64-$r 80 python3 scripts/peers.py configs/gqa-d64-h200.json --backends flash,cudnn \
    -o $R/peers-gqa-d64-h200-$r.json
done
kill $smi
args=""
for r in 1 2; do [ -f $R/gqa-d64-h200-$r.json ] && [ -f $R/peers-gqa-d64-h200-$r.json ] && \
  args="$args --round $R/gqa-d64-h200-$r.json $R/peers-gqa-d64-h200-$r.json"; done
python3 scripts/ratios.py $args --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash \
  > $R/rounds-gqa-d64.txt 2>&1
echo "== gqa64"; grep -A8 "^summary" $R/rounds-gqa-d64.txt; grep "causal-bwd" $R/rounds-gqa-d64.txt | head -12
tar czf $OUT/E.tgz -C $OUT E && rm -rf $R; echo "done t=$((SECONDS-t0))"
