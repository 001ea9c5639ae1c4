#!/usr/bin/env bash
# Session 37, call E (one H200; issue 13): the binaries of commit.txt (flash's causal GQA backward in plane groups, the
# default since call D). Every GPU test; compute-sanitizer memcheck of a non-dividing flash plane group
# (san-flashpg.json); the GQA grids (configs/gqa-h200.json, d = 128; configs/gqa-d64-h200.json) beside torch-cudnn and
# FlashAttention-2, one round each.
R=$OUT/E; mkdir -p $R; export DEADLINE=${DEADLINE:-500}
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
c=results/h200/s37/calls
step tests-all 200 $gt
echo "tests-all: $(grep -E 'passed|failed' $R/tests-all.log | tail -2 | tr '\n' ' ')"
step san-memcheck 60 compute-sanitizer --tool memcheck --error-exitcode 9 $fb run $c/san-flashpg.json --no-ceilings \
  -q -o $R/san-memcheck.json
pkill -9 -f compute-sanitizer; pkill -9 -f build-dev/flashbench; sleep 2
tail -2 $R/san-memcheck.log
for g in gqa-h200 gqa-d64-h200; do
  step fb-$g 90 $fb run configs/$g.json -q -o $R/$g.json
  step peers-$g 80 python3 scripts/peers.py configs/$g.json --backends flash,cudnn -o $R/peers-$g.json
  [ -f $R/$g.json ] && [ -f $R/peers-$g.json ] && python3 scripts/ratios.py --round $R/$g.json $R/peers-$g.json \
    --pair flash-sm90:torch-cudnn --pair flash:torch-flash > $R/ratios-$g.txt 2>&1
  echo "== $g"; grep -A4 "^summary" $R/ratios-$g.txt | cut -c1-200; grep "causal-bwd" $R/ratios-$g.txt | tail -12
done
tar czf $OUT/E.tgz -C $OUT E && rm -rf $R; echo "done t=$((SECONDS-t0))"
