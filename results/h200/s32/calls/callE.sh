#!/usr/bin/env bash
# Session 32, call E (issue 13). Carry main's binaries (commit.txt = HEAD). The GQA head split's model at d = 64 with
# the shared tail in its unsplit time (HeadSplitModel::unsplit_tail_share; docs/perf-notes.md, "Session 32: the d = 64
# head split against the unsplit grid with its shared tail", rule written there before the call): three interleaved
# rounds of the default and FB_SM90_BWD_SPLIT=<the choice before> on eight shapes whose choice it flips and two
# controls (split64-*.json); [bwd64] and [bwd_gqa] on the new binaries.
R=$OUT/E; mkdir -p $R/ab; export DEADLINE=${DEADLINE:-300}
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
c=results/h200/s32/calls
# shape:split before
rows="b3-h24-kv4-n1536:6 b1-h40-kv8-n2500:5 b4-h12-kv2-n2200:6 b2-h32-kv4-n3000:2 b6-h24-kv4-n1024:2 b8-h6-kv1-n2600:3"
rows="$rows b1-h64-kv8-n3000:2 b5-h12-kv2-n1900:6 ctl-b2-h16-kv2-n3000:4 ctl-b3-h48-kv8-n1800:1"
for r in 1 2 3; do
  for x in $rows; do
    s=${x%%:*}; k=${x##*:}
    step def-$s-$r 30 $fb run $c/split64-$s.json --no-ceilings -q -o $R/ab/def-$s-$r.json
    step old-$s-$r 30 env FB_SM90_BWD_SPLIT=$k $fb run $c/split64-$s.json --no-ceilings -q -o $R/ab/old-$s-$r.json
  done
done
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn old def > $R/table.txt 2>&1
tail -n +2 $R/table.txt | cut -c1-110
step tests 90 $gt "[bwd64],[bwd_gqa]"
echo "tests: $(grep -E 'passed|failed' $R/tests.log | tail -2 | tr '\n' ' ')"
tar czf $OUT/E.tgz -C $OUT E && rm -rf $R; echo "done t=$((SECONDS-t0))"
