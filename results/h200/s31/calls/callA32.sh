#!/usr/bin/env bash
# PREPARED in session 31 for session 32, NOT RUN (issue 13). Carry main's binaries (commit.txt = HEAD). Session 31's
# last commit added a GPU test ("a partial last wave without a workspace: the solo tail") that was built but never run
# on a GPU (no device time left): the whole GPU suite on the shipped binaries runs it, then the [flashfwd] tests
# under nokvtail (the solo tail everywhere).
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-300}
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
gt=$src/build-dev/tests/flashbench_gpu_tests
cat out/commit.txt > $R/commit.txt 2>/dev/null
step gpu-tests-1 130 $gt -# "[#test_gpu]" --durations yes
step gpu-tests-2 130 $gt -# "~[#test_gpu]" --durations yes
for k in 1 2; do
  echo "gpu-tests-$k: $(grep -E 'test cases|All tests|FAILED' $R/gpu-tests-$k.log | tail -2 | cut -c1-200 | tr '\n' ' ')"
done
step tests-nokvtail 60 env FB_FLASH_FWD_PROBE=nokvtail $gt "[flashfwd]"
echo "tests-nokvtail: $(grep -E 'passed|failed' $R/tests-nokvtail.log | tail -2 | tr '\n' ' ')"
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
