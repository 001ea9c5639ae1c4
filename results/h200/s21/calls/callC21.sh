#!/usr/bin/env bash
# Session 21 call C (one H200): int21 = main + the helpers' session-21 branches (fp32s21: fp16pair128w2 /
# fp16pair128w2a, the d = 128 non-causal fp32 backward with two warpgroups; sm90bwds21: `edges`, the d = 128 16-bit
# backward's block edges), binaries built on the lead's machine for sm_90a and carried as in call B. Their jobs under
# their pre-registered rules (docs/perf-notes.md), then every GPU test with the defaults.
R=$OUT/C; mkdir -p $R; export DEADLINE=${DEADLINE:-420}
set -uo pipefail
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {  # name, limit (s), command...: the limit cut to what is left; skipped under 20 s
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt 20 ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; timeout -k 3 $max "$@" > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"; tail -n ${TAILN:-25} $R/$name.log
}
tar xJf out/b.txz && echo "unpacked binaries (t=$((SECONDS-t0)))"
src=$(cat out/srcdir.txt 2>/dev/null || echo /work/main)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
B=$src/build-dev; export BUILD=$B
cat out/commit.txt > $R/commit.txt 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi0.csv 2>&1
S=results/h200/s21/calls
TAILN=45 step fp32 96 env OUTDIR=$R/fp32 bash $S/job2-fp32.sh
TAILN=45 step sm90bwd 88 env BUDGET=82 OUTDIR=$R/sm90bwd bash $S/job2-sm90bwd.sh
TAILN=6 step gputests 150 $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
rm -f $R/*/ncu-query.txt
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
