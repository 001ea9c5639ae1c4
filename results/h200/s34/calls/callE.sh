#!/usr/bin/env bash
# Session 34, call E (issue 13): main's final binaries (commit.txt = HEAD; the short last query tile the default on
# causal passes since call D, a host-only dispatch change). The [bwd128] GPU tests as shipped ([sm90_short] checks that
# its causal N = 4096 rows take the short step by default) and [bwd_gqa]; then the grid's causal d = 128 N = 4096 / 8192
# backward rows (`shortc-grid.json`) as shipped, with torch-cudnn beside them, twice.
R=$OUT/E; mkdir -p $R; export DEADLINE=${DEADLINE:-200}
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
step tests-bwd128 60 $gt "[bwd128]"
step tests-gqa 40 $gt "[bwd_gqa]"
for t in bwd128 gqa; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
c=results/h200/s34/calls
for r in 1 2; do
  step fb-$r 20 $fb run $c/shortc-grid.json --no-ceilings -q -o $R/fb-$r.json
  step peers-$r 30 python3 scripts/peers.py $c/shortc-grid.json --backends cudnn -o $R/peers-$r.json
done
python3 scripts/ratios.py --round $R/fb-1.json $R/peers-1.json --round $R/fb-2.json $R/peers-2.json \
  --pair flash-sm90:torch-cudnn > $R/rounds.txt 2>&1
cat $R/rounds.txt | tail -8
tar czf $OUT/E.tgz -C $OUT E && rm -rf $R; echo "done t=$((SECONDS-t0))"
