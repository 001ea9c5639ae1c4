#!/usr/bin/env bash
# PREPARED in session 26 for session 27, NOT RUN (issue 13). Carry main's binaries (commit.txt = HEAD) as in calls
# E-J. Session 26's calls H and I found the portable backward's non-causal GQA head split better modelled with the
# unsplit grid's last partial wave under its tail split (10 of 11 rows 1.016-1.100x) except 32 q / 4 kv heads, batch
# 2, N = 2800 (0.952x: the whole group ran 4.9 us a modelled step where the others ran 4.2-4.5). This call measures the
# tail split itself on 17 non-causal d = 128 GQA shapes (calls G-I's): the shipped pick, the whole group with its tail
# split (FB_FLASH_BWD_SPLIT=1) and without (FB_FLASH_BWD=notail), two interleaved rounds (tail_table.py), to fit what
# a tail unit costs before the head-split model counts the tail (common/head_split.h unsplit_query_tail with units
# that cut the walk anywhere, as model_tail_split_choice's whole_tiles = false).
R=$OUT/K; mkdir -p $R; export DEADLINE=${DEADLINE:-300}
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
c=results/h200/s26/calls
specs="bwdsplit-b1-h56-kv8-n3500 bwdsplit-b2-h24-kv4-n3000 bwdsplit-b2-h40-kv8-n2000 bwdsplit-b2-h40-kv8-n4500
  bwdsplit-b3-h20-kv4-n1800 bwdsplit-b4-h32-kv8-n1500 hsplit-d128-b1-h24-kv8-n9000 hsplit-d128-b1-h36-kv4-n6500
  hsplit-d128-b1-h40-kv8-n3300 hsplit-d128-b1-h48-kv8-n5000 hsplit-d128-b2-h24-kv4-n5120 hsplit-d128-b2-h28-kv4-n2300
  hsplit-d128-b2-h32-kv4-n2800 hsplit-d128-b2-h48-kv16-n2600 hsplit-d128-b2-h56-kv8-n2100 hsplit-d128-b3-h28-kv4-n1500
  hsplit-d128-b4-h40-kv8-n1100"
for r in 1 2; do
  for s in $specs; do
    step ship-$s-$r 30 $fb run $c/$s.json --filter -full- --no-ceilings -q -o $R/ship-$s-$r.json
    step whole-$s-$r 30 env FB_FLASH_BWD_SPLIT=1 $fb run $c/$s.json --filter -full- --no-ceilings -q -o $R/whole-$s-$r.json
    step notail-$s-$r 30 env FB_FLASH_BWD=notail $fb run $c/$s.json --filter -full- --no-ceilings -q \
      -o $R/notail-$s-$r.json
  done
done
python3 $c/tail_table.py $R | tee $R/table.txt
tar czf $OUT/K.tgz -C $OUT K && rm -rf $R; echo "done t=$((SECONDS-t0))"
