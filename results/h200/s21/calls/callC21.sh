#!/usr/bin/env bash
# Session 21 call C (one H200): int21 = main + the helpers' session-21 branches (fp32s21: fp16pair128w2 /
# fp16pair128w2a, the d = 128 non-causal fp32 backward with two warpgroups; sm90bwds21: `edges`, the d = 128 16-bit
# backward's block edges), binaries built on the lead's machine for sm_90a and carried as in call B. Their jobs under
# their pre-registered rules (docs/perf-notes.md), every GPU test with the defaults, then (one machine start fewer)
# the sweeps a shipped word changes, run under that word beside the peers: the fp32 sweep if job2-fp32 names a new
# default; the bf16 / fp16 issue-13 grids and the d = 128 GQA grid if job2-sm90bwd says SHIPS.
R=$OUT/C; mkdir -p $R; export DEADLINE=${DEADLINE:-540}
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
src=$(cat out/srcdir.txt)  # the source folder the carried binaries were built in (their tests hold its paths)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
B=$src/build-dev; export BUILD=$B
cat out/commit.txt > $R/commit.txt 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi0.csv 2>&1
S=results/h200/s21/calls
TAILN=45 step fp32 96 env OUTDIR=$R/fp32 bash $S/job2-fp32.sh
TAILN=45 step sm90bwd 88 env BUDGET=82 OUTDIR=$R/sm90bwd bash $S/job2-sm90bwd.sh
TAILN=6 step gputests 95 $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
fb=$B/flashbench
w=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('new_default') or '')" $R/fp32/summary.json 2>/dev/null)
if [ -n "$w" ]; then
  echo "fp32: $w named the new default: the fp32 sweep under it"
  TAILN=2 step fp32sweep 45 env FB_SM90_FP32_BWD_PROBE=$w $fb run configs/fp32-h200.json -q -o $R/fp32-h200.json
  TAILN=2 step peersfp32 40 python3 scripts/peers.py configs/fp32-h200.json --backends efficient,math -o $R/peers-fp32-h200.json
  python3 scripts/ratios.py $R/fp32-h200.json --pair flash-sm90:naive --pair flash:naive > $R/sum-fp32.txt 2>&1; grep -A8 "^summary" $R/sum-fp32.txt
fi
if grep -q "^verdict: SHIPS" $R/sm90bwd/table.txt 2>/dev/null; then
  echo "sm90bwd: edges ships: the 16-bit grids under it"
  TAILN=2 step issue13 100 env FB_SM90_BWD128=edges $fb run configs/issue13-h200.json -q -o $R/issue13-h200.json
  TAILN=2 step peers13 90 python3 scripts/peers.py configs/issue13-h200.json --backends flash,cudnn -o $R/peers-issue13-h200.json
  TAILN=2 step gqa 95 env FB_SM90_BWD128=edges $fb run configs/gqa-h200.json --kernels flash,flash-sm90,cudnn -q -o $R/gqa-h200.json
  TAILN=2 step peersgqa 60 python3 scripts/peers.py configs/gqa-h200.json --backends flash,cudnn -o $R/peers-gqa-h200.json
  for f in issue13-h200 gqa-h200; do [ -f $R/$f.json ] && python3 scripts/ratios.py $R/$f.json $R/peers-$f.json --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash > $R/sum-$f.txt 2>&1; grep -A12 "^summary" $R/sum-$f.txt; done
fi
rm -f $R/*/ncu-query.txt
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
