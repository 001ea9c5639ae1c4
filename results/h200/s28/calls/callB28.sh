#!/usr/bin/env bash
# Session 28, call B (one H200; issue 13). Main's binaries plus the uncommitted probe words copylate and vlate
# (commit.txt), built on the lead's machine and carried. Call A's ncu of the portable d = 128 forward at batch 3 x 12
# heads N = 1280 found our KV step ~6% more warp samples than FlashAttention-2's, with stalls at the step's start that
# FA2's loop does not have: the next K/V tile's 16 cp.async a thread queue ahead of S's ldmatrix (mio) and S's
# ldmatrix waits to reuse a register the copies read as an address (long scoreboard). copylate issues the next tile's
# K and V copies after S (before its softmax), vlate V's alone. Three interleaved rounds (shipped, copylate, vlate) of
# late-grid.json (16k tokens, N 512-16k), late-odd.json (batch 3 / 12 x 12 heads, N 1280-6000) and late-unnamed.json
# (batch 5 x 20 heads, N 1536 / 3300, fp16: no config names them), bf16 unless said, causal or not, every row
# verified; FlashAttention-2 (scripts/peers.py torch-flash) beside them in round 1.
# Rule, written before the call: a class (non-causal / causal) takes a variant if its rows' geomeans over the three
# rounds have a geomean >= 1.005 and none is below 0.985; of two that pass, the higher geomean.
R=$OUT/B; mkdir -p $R; export DEADLINE=${DEADLINE:-420}
set -uo pipefail
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {  # step NAME MAX_SECONDS CMD...: skipped when under MAX/2 is left
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt $(( max / 2 )) ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; timeout -k 3 $max "$@" < /dev/null > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"
}
tar xJf out/b.txz
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
fb=$src/build-dev/flashbench
cat out/commit.txt > $R/commit.txt 2>/dev/null
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 \
  > $R/smi.csv 2>&1 &
smi=$!
c=results/h200/s28/calls
for s in late-grid late-odd late-unnamed; do
  step peers-$s 60 python3 scripts/peers.py $c/$s.json --backends flash -o $R/peers-$s.json
done
for r in 1 2 3; do
  for s in late-grid late-odd late-unnamed; do
    step def-$s-$r 40 $fb run $c/$s.json --no-ceilings -q -o $R/def-$s-$r.json
    step copylate-$s-$r 40 env FB_FLASH_FWD_PROBE=copylate $fb run $c/$s.json --no-ceilings -q \
      -o $R/copylate-$s-$r.json
    step vlate-$s-$r 40 env FB_FLASH_FWD_PROBE=vlate $fb run $c/$s.json --no-ceilings -q -o $R/vlate-$s-$r.json
  done
done
kill $smi
python3 $c/late_table.py $R > $R/table.txt 2>&1
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
tar xzf $OUT/B.tgz -O B/table.txt 2>/dev/null | tail -40
