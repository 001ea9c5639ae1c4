#!/usr/bin/env bash
# Session 29, call D (one H200; issue 13): shapes no config names and no earlier call timed, after sessions 25-29's
# changes (`unnamed-d64.json`: batch 3 x 20 heads d = 64 N 1750 / 5100; `unnamed-d128.json`: batch 2 x 12 heads d = 128
# N 3400 / 9100; `unnamed-gqa.json`: batch 2, 28 q / 4 kv heads, d = 128, N 2450; bf16, causal or not, forward and
# backward), flash and flash-sm90 as shipped beside torch-flash and torch-cudnn, two interleaved rounds; per-round
# ratios and "behind in every round" by scripts/ratios.py --round. Binaries built on the lead's machine (commit.txt).
R=$OUT/D; mkdir -p $R; export DEADLINE=${DEADLINE:-260}
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
cat out/commit.txt > $R/commit.txt 2>/dev/null
c=results/h200/s29/calls
for r in 1 2; do
  for s in unnamed-d64 unnamed-d128 unnamed-gqa; do
    step fb-$s-$r 50 $fb run $c/$s.json -q -o $R/fb-$s-$r.json
    step peers-$s-$r 50 python3 scripts/peers.py $c/$s.json --backends flash,cudnn -o $R/peers-$s-$r.json
  done
done
pkill -9 -f build-dev/flashbench
for s in unnamed-d64 unnamed-d128 unnamed-gqa; do
  python3 scripts/ratios.py --round $R/fb-$s-1.json $R/peers-$s-1.json --round $R/fb-$s-2.json $R/peers-$s-2.json \
    --pair flash-sm90:torch-cudnn --pair flash:torch-flash > $R/rounds-$s.txt 2>&1
  echo "== $s"; grep -A6 "^summary" $R/rounds-$s.txt | cut -c1-150
done
tar czf $OUT/D.tgz -C $OUT D && rm -rf $R; echo "done t=$((SECONDS-t0))"
