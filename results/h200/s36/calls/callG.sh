#!/usr/bin/env bash
# Session 36, call G (one H200; issue 13): a measurement. Call F's two rows where flash read below FlashAttention-2 in
# its one round (2 x 36 q / 9 kv N = 9000 d = 128 and 4 x 20 / 10 N = 6100 d = 128 fp16, the non-causal forward):
# their specs again, flash and the peers in two more rounds, the same binaries (commit.txt), to tell spread from a loss.
R=$OUT/G; mkdir -p $R; export DEADLINE=${DEADLINE:-300}
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
c=results/h200/s36/calls
specs="unnamed36-b2-h36-kv9-n9000-d128 unnamed36-b4-h20-kv10-n6100-d128"
for r in 2 3; do
  for s in $specs; do
    step fb-$s-$r 40 $fb run $c/$s.json --kernels flash,flash-sm90 --filter full-fwd -q -o $R/fb-$s-$r.json
    step peers-$s-$r 30 python3 scripts/peers.py $c/$s.json --backends flash,cudnn -o $R/peers-$s-$r.json
  done
done
for s in $specs; do
  python3 scripts/ratios.py --round $R/fb-$s-2.json $R/peers-$s-2.json --round $R/fb-$s-3.json $R/peers-$s-3.json \
    --pair flash:torch-flash --pair flash-sm90:torch-cudnn > $R/rounds-$s.txt 2>&1
  grep "full-fwd" $R/rounds-$s.txt
done
tar czf $OUT/G.tgz -C $OUT G && rm -rf $R; echo "done t=$((SECONDS-t0))"
