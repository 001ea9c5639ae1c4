#!/usr/bin/env bash
# Session 30, call D (issue 13). Carry main's binaries (commit.txt = HEAD): solotail removed (the portable forward's
# FwdArgs lost tile_base, its kernels their kSoloTail branch). The whole GPU test suite in two halves, then memcheck
# of the portable forward at session 29's partial-last-wave shape (batch 2 x 12 heads d = 128 N = 3400).
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
step gpu-tests-1 150 $src/build-dev/tests/flashbench_gpu_tests -# "[#test_gpu]" --durations yes
step gpu-tests-2 150 $src/build-dev/tests/flashbench_gpu_tests -# "~[#test_gpu]" --durations yes
for k in 1 2; do echo "gpu-tests-$k: $(grep -E 'test cases|All tests|FAILED' $R/gpu-tests-$k.log | tail -3)"; done
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
step san-memcheck 60 $san --tool memcheck --error-exitcode 9 $fb run results/h200/s29/calls/ragged-fwd.json \
  --filter 'n3400-' --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/san-memcheck.json
echo "memcheck: $(grep -E 'ERROR SUMMARY' $R/san-memcheck.log | tail -1)"
pkill -9 -f compute-sanitizer; pkill -9 -f build-dev/flashbench
tar czf $OUT/D.tgz -C $OUT D && rm -rf $R; echo "done t=$((SECONDS-t0))"
