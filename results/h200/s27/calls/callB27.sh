#!/usr/bin/env bash
# Session 27 call B (one H200; issue 13). Main's binaries (commit.txt), built on the lead's machine and carried.
# The portable backward's GQA/MQA head split on groups larger than 8 query heads a K/V head (40 / 1 non-causal
# N = 4500 read 0.969x FlashAttention-2 in session 26's call D): the model caps non-causal splits at 8 (causal d = 128
# at 16) and takes the largest split within 5% of its fastest. Every split of the group (each divisor, the whole group
# and one head a unit included) forced with FB_FLASH_BWD_SPLIT, and the model's pick, on eight shapes no config names
# (bigsplit-*.json: groups 12-40, d = 64 and 128, causal or not), beside torch-flash; the pick and the peer a second
# time at the end. Every row verified.
R=$OUT/B; mkdir -p $R; export DEADLINE=${DEADLINE:-330}
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
c=results/h200/s27/calls
divisors() { local g=$1 d; for ((d = 1; d <= g; ++d)); do (( g % d == 0 )) && echo -n "$d "; done; }
for f in $c/bigsplit-*.json; do
  s=$(basename $f .json); s=${s#bigsplit-}
  h=$(python3 -c "import json,sys; j=json.load(open('$f')); print(j['heads'] // j['kv_heads'])")
  step peers-$s-1 40 python3 scripts/peers.py $f --backends flash -o $R/peers-$s-1.json
  step ship-$s-1 30 $fb run $f --no-ceilings -q -o $R/ship-$s-1.json
  for k in $(divisors $h); do
    step split$k-$s-1 30 env FB_FLASH_BWD_SPLIT=$k $fb run $f --no-ceilings -q -o $R/split$k-$s-1.json
  done
done
for f in $c/bigsplit-*.json; do
  s=$(basename $f .json); s=${s#bigsplit-}
  step ship-$s-2 30 $fb run $f --no-ceilings -q -o $R/ship-$s-2.json
  step peers-$s-2 40 python3 scripts/peers.py $f --backends flash -o $R/peers-$s-2.json
done
python3 $c/bigsplit_table.py $R | tee $R/table.txt
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
