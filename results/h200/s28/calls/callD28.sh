#!/usr/bin/env bash
# Session 28, call D (one H200; issue 13): call C's timing again. In call C the sanitizer steps ran past their time
# limits and were stopped, but the timeout stopped only sanitize.sh: compute-sanitizer's flashbench kept running on
# the GPU beside the steps after it (FlashAttention-2 read ~2x slower than ours at N >= 4096, one round-1 row 0.517x),
# so call C's timings are not used. Same binaries (commit.txt), same specs and rules as call C: novlate against the
# d = 128 default on the held-out conf128-* shapes (three interleaved rounds), vlate64 against the d = 64 default on
# late64-* (three rounds), FlashAttention-2 beside them; then racecheck and synccheck on a smaller spec, last, with
# every process of the step stopped at its limit.
R=$OUT/D; mkdir -p $R; export DEADLINE=${DEADLINE:-300}
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
# A warm machine may still run call C's orphaned sanitizer: stop it first, and record what the GPU ran.
nvidia-smi --query-compute-apps=pid,process_name --format=csv > $R/apps-start.txt 2>&1
pkill -9 -f compute-sanitizer; pkill -9 -f build-dev/flashbench; sleep 1
nvidia-smi --query-compute-apps=pid,process_name --format=csv > $R/apps-after-kill.txt 2>&1
c=results/h200/s28/calls
for s in conf128-mha conf128-gqa late64-grid late64-odd; do
  step peers-$s 40 python3 scripts/peers.py $c/$s.json --backends flash -o $R/peers-$s.json
done
for r in 1 2 3; do
  for s in conf128-mha conf128-gqa; do
    step def-$s-$r 30 $fb run $c/$s.json --no-ceilings -q -o $R/def-$s-$r.json
    step novlate-$s-$r 30 env FB_FLASH_FWD_PROBE=novlate $fb run $c/$s.json --no-ceilings -q -o $R/novlate-$s-$r.json
  done
  for s in late64-grid late64-odd; do
    step def-$s-$r 30 $fb run $c/$s.json --no-ceilings -q -o $R/def-$s-$r.json
    step vlate64-$s-$r 30 env FB_FLASH_FWD_PROBE=vlate64 $fb run $c/$s.json --no-ceilings -q -o $R/vlate64-$s-$r.json
  done
done
mkdir -p $R/d128 $R/d64
cp $R/*-conf128-*.json $R/d128/ 2>/dev/null; cp $R/*-late64-*.json $R/d64/ 2>/dev/null
{ python3 $c/late_table.py $R/d128 novlate def; echo; python3 $c/late_table.py $R/d64 def vlate64; } \
  > $R/table.txt 2>&1
rm -rf $R/d128 $R/d64
step san 100 bash scripts/sanitize.sh -e $fb -s $c/late-san2.json -t "racecheck synccheck" $R/san.json
pkill -9 -f compute-sanitizer; pkill -9 -f build-dev/flashbench
echo "san: $(tail -4 $R/san.log | tr '\n' ' ')"
tar czf $OUT/D.tgz -C $OUT D && rm -rf $R; echo "done t=$((SECONDS-t0))"
tar xzf $OUT/D.tgz -O D/table.txt 2>/dev/null | grep -v "^case\|^$" | cut -c1-120
