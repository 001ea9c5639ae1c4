#!/usr/bin/env bash
# Session 28, call G (one H200; issue 13): a first reading of the kmid probe (branch fwdkmid28, commit.txt) with the
# session's last device minutes: `[flashfwd]` under kmid, then kmid against the default, three interleaved rounds of
# late-grid.json and late-odd.json (call B's shapes), no peers. The full protocol is callG29.sh (held-out shapes,
# FlashAttention-2 beside them, racecheck); rule as there: a class takes kmid at a geomean >= 1.005, no row < 0.985.
R=$OUT/G; mkdir -p $R; export DEADLINE=${DEADLINE:-150}
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
c=results/h200/s28/calls
step test-kmid 40 env FB_FLASH_FWD_PROBE=kmid $src/build-dev/tests/flashbench_gpu_tests "[flashfwd]"
for r in 1 2 3; do
  for s in late-grid late-odd; do
    step def-$s-$r 20 $fb run $c/$s.json --no-ceilings -q -o $R/def-$s-$r.json
    step kmid-$s-$r 20 env FB_FLASH_FWD_PROBE=kmid $fb run $c/$s.json --no-ceilings -q -o $R/kmid-$s-$r.json
  done
done
python3 $c/late_table.py $R def kmid > $R/table.txt 2>&1
echo "test-kmid: $(grep -E 'test cases' $R/test-kmid.log | tail -1)"
tar czf $OUT/G.tgz -C $OUT G && rm -rf $R; echo "done t=$((SECONDS-t0))"
tar xzf $OUT/G.tgz -O G/table.txt 2>/dev/null | grep -v "^case\|^$" | cut -c1-100
