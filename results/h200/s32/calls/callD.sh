#!/usr/bin/env bash
# Session 32, call D (issue 13): after call C a host-only refactor (tail_candidate(), flash_sm90_bwd.cu: the query
# tail's and the shared tail's common preconditions in one place; kernels unchanged): the backward's GPU tests at
# d = 64 and 128 ([bwd64], [bwd128], [bwd_gqa]) on the new binaries, and [bwd64] under FB_SM90_BWD_SHARE=on.
R=$OUT/D; mkdir -p $R; export DEADLINE=${DEADLINE:-200}
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
step tests-bwd 120 $gt "[bwd64],[bwd128],[bwd_gqa]" --durations yes
step tests-share-on 60 env FB_SM90_BWD_SHARE=on $gt "[bwd64]"
for k in bwd share-on; do echo "tests-$k: $(grep -E 'passed|failed' $R/tests-$k.log | tail -2 | tr '\n' ' ')"; done
tar czf $OUT/D.tgz -C $OUT D && rm -rf $R; echo "done t=$((SECONDS-t0))"
