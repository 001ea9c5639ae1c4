#!/usr/bin/env bash
# Session 22 call C (one H200): main's final code after a test-only change (two GPU test files build their
# AttentionParams with Case::params()): those tests ('[w2f]', '[bwd_gqa]') and, while time is left, every GPU test.
R=$OUT/C; mkdir -p $R
set -uo pipefail
t0=$SECONDS
tar xJf out/b.txz
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
B=$src/build-dev
cat out/commit.txt > $R/commit.txt 2>/dev/null
for t in "[w2f]" "[bwd_gqa]"; do
  timeout -k 3 60 $B/tests/flashbench_gpu_tests "$t" > "$R/tests-${t//[\[\]]/}.log" 2>&1
  echo "== $t rc=$? (t=$((SECONDS - t0)))"; grep -E "test cases|FAILED" "$R/tests-${t//[\[\]]/}.log" | tail -2
done
timeout -k 3 120 $B/tests/flashbench_gpu_tests > $R/gputests.log 2>&1
echo "== gputests rc=$? (t=$((SECONDS - t0)))"; grep -E "test cases|assertions" $R/gputests.log | tail -1
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
