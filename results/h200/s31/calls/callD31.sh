#!/usr/bin/env bash
# Session 31, call D (issue 13, sanitizers). Carry main's binaries (commit.txt = HEAD; kFwdKvTail the d = 128
# non-causal default). racecheck and synccheck of the portable forward where its tail runs in pieces (the pieces'
# counter flag in shared memory, the merge after the block barriers): batch 3 x 4 heads, 2900 queries on 256 keys
# (san-kv-*.json: 264 + 12 blocks, each tail tile in 2 pieces of 2 K/V tiles); memcheck of the same run; then
# racecheck of a longer split (fp16 batch 2 x 7 heads N = 2600, 8 pieces a tail tile) while time is left.
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
c=results/h200/s31/calls
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
one="--warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q"
for tool in memcheck synccheck racecheck; do
  step san-$tool 90 $san --tool $tool --error-exitcode 9 $fb run $c/san-kv-b3-h4-q2900-k256.json $one \
    -o $R/san-$tool.json
  echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san-$tool.log | tail -1)"
  pkill -9 -f compute-sanitizer; pkill -9 -f build-dev/flashbench
done
step san-racecheck-n2600 120 $san --tool racecheck --error-exitcode 9 $fb run $c/kv-b2-h7-n2600-fp16.json $one \
  -o $R/san-racecheck-n2600.json
echo "racecheck n2600: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san-racecheck-n2600.log | tail -1)"
pkill -9 -f compute-sanitizer; pkill -9 -f build-dev/flashbench
tar czf $OUT/D.tgz -C $OUT D && rm -rf $R; echo "done t=$((SECONDS-t0))"
