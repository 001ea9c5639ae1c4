#!/usr/bin/env bash
# Session 26 call H (one H200; issue 13). Main plus the head-split model change (common/head_split.h
# unsplit_plane_major, tail_whole_tiles; flash_bwd.cu head_split()), built on the lead's machine and carried,
# uncommitted until measured (commit.txt). Call G found flash's backward GQA head split picking the slower of split
# and unsplit on 5 of 12 shapes; the new model (the unsplit causal grid placed plane-major as kHeadMajorCausal runs it,
# the unsplit non-causal d = 128 grid's last wave under its tail split) picks the faster on all 12. This call checks
# it on shapes held out from that fit (none in call G; one in a config: 32 / 8 heads N = 4096 at 16k tokens), d = 128
# and 64, on every row where the two models differ (hsplit-flips.tsv, 23 rows): the new default against the old
# model's split forced (FB_FLASH_BWD_SPLIT), two interleaved rounds; FlashAttention-2 beside them once at the end.
# Rule, written before the call: ship if the rows' combined ratios (old time / new time, geomean of the two rounds)
# have a geomean >= 1.02 and none is below 0.97; rows the new pick loses are quoted with the rest.
R=$OUT/H; mkdir -p $R; export DEADLINE=${DEADLINE:-420}
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
c=results/h200/s26/calls
step tests 150 $src/build-dev/tests/flashbench_gpu_tests "[bwd_gqa]"
tail -n 3 $R/tests.log
for r in 1 2; do
  grep -v '^#' $c/hsplit-flips.tsv | while read spec mask old new; do
    step new-$spec-$mask-$r 30 $fb run $c/$spec.json --filter "-$mask-" --no-ceilings -q -o $R/new-$spec-$mask-$r.json
    step old-$spec-$mask-$r 30 env FB_FLASH_BWD_SPLIT=$old $fb run $c/$spec.json --filter "-$mask-" --no-ceilings -q \
      -o $R/old-$spec-$mask-$r.json
  done
done
python3 $c/hsplit_table.py $R $c/hsplit-flips.tsv > $R/table.txt 2>&1; cat $R/table.txt
for spec in $(grep -v '^#' $c/hsplit-flips.tsv | cut -f1 | sort -u); do
  step peers-$spec 20 python3 scripts/peers.py $c/$spec.json --backends flash -o $R/peers-$spec.json
done
python3 $c/hsplit_table.py $R $c/hsplit-flips.tsv > $R/table.txt 2>&1; tail -n 2 $R/table.txt
kill $smi
tar czf $OUT/H.tgz -C $OUT H && rm -rf $R; echo "done t=$((SECONDS-t0))"
