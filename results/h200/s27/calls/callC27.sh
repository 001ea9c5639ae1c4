#!/usr/bin/env bash
# Session 27 call C (one H200; issue 13). Main's binaries (commit.txt), built on the lead's machine and carried.
# Call B found the portable backward's non-causal head split capped at 8 subsets 1.126x slower than the fastest
# split at 40 q / 1 kv heads N = 4500 (0.965x FlashAttention-2 as picked, 1.087x at 20 subsets), its model's times
# within 4.12-4.31 us a step over every split there. Three rules for non-causal d = 128 (gsplit-picks.tsv, from
# common/head_split.h on 132 SMs): R1 the cap lifted to the group (largest within 5% of the fastest, as now), R2 the
# cap lifted and the fastest modelled split, R3 the cap lifted and the largest within 2%. On 13 shapes no config
# names and no earlier call timed (groups 9-64; gsplit-*.json), each distinct pick forced (FB_FLASH_BWD_SPLIT), two
# interleaved rounds, every row verified, torch-flash beside them once. The binaries carry R1 (max_head_split(): the
# non-causal d = 128 cap is the group): `ship` (no split forced) each round shows the launcher's pick, and the GPU
# tests [bwd_gqa] run first (the forced splits and the new cap check).
# Rule, written before the call: the rule with the highest geomean of old time / its time over the 13 rows (each row
# the mean of its two rounds) ships if that geomean is >= 1.01 and no row is below 0.98; else none ships.
R=$OUT/C; mkdir -p $R; export DEADLINE=${DEADLINE:-420}
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
c=results/h200/s27/calls
step tests 120 $src/build-dev/tests/flashbench_gpu_tests "[bwd_gqa]"
tail -3 $R/tests.log
for r in 1 2; do
  grep -v '^#' $c/gsplit-picks.tsv | while IFS=$'\t' read -r s a b d e; do
    for k in $(printf '%s\n' $a $b $d $e | sort -nu); do
      step split$k-$s-$r 30 env FB_FLASH_BWD_SPLIT=$k $fb run $c/gsplit-$s.json --no-ceilings -q -o $R/split$k-$s-$r.json
    done
    step ship-$s-$r 30 $fb run $c/gsplit-$s.json --no-ceilings -q -o $R/ship-$s-$r.json
    [ $r = 1 ] && step peers-$s 40 python3 scripts/peers.py $c/gsplit-$s.json --backends flash -o $R/peers-$s.json
  done
done
python3 $c/gsplit_table.py $R $c/gsplit-picks.tsv | tee $R/table.txt
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
