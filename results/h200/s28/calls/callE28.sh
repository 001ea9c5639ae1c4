#!/usr/bin/env bash
# Session 28, call E (one H200; issue 13): the final binaries (commit.txt: kFwdVAfterS the d = 128 default, the
# probe word novlate; copylate, vlate and vlate64 refused): the whole GPU test suite, and the refused words' message.
R=$OUT/E; mkdir -p $R; export DEADLINE=${DEADLINE:-400}
set -uo pipefail
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {  # step NAME MAX_SECONDS CMD...: skipped when under MAX/2 is left
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
step vlate64 20 env FB_FLASH_FWD_PROBE=vlate64 $fb run results/h200/s28/calls/late-san2.json --no-ceilings -q \
  -o $R/vlate64.json
echo "vlate64: $(cat $R/vlate64.log | head -2)"; ls $R/vlate64.json 2>&1 | head -1
# In two parts, so that one that runs out of time leaves the other's verdict: test_gpu.cpp, then every other file.
step gpu-tests-1 200 $src/build-dev/tests/flashbench_gpu_tests -# "[#test_gpu]" --durations yes
step gpu-tests-2 200 $src/build-dev/tests/flashbench_gpu_tests -# "~[#test_gpu]" --durations yes
for k in 1 2; do echo "gpu-tests-$k: $(grep -E 'test cases|All tests|FAILED' $R/gpu-tests-$k.log | tail -3)"; done
tar czf $OUT/E.tgz -C $OUT E && rm -rf $R; echo "done t=$((SECONDS-t0))"
