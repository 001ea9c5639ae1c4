#!/usr/bin/env bash
# Session 21 call B (one H200): main with fp16pair128 as the d = 128 non-causal fp32 backward default (ccfcf08 on),
# binaries built on the lead's machine for sm_90a and carried (out/b.txz: build-dev/ with flashbench, the GPU tests,
# the fault fixture and the example plug-in; the tests hold that machine's paths, so the checkout is linked there).
# The fp32 sweep beside its peers (issue 15's table), shapes no config names, memcheck / synccheck of the tiled set,
# every GPU test and [sm90tf32] under tf32pair (ctest gpu_sm90tf32_tf32pair).
R=$OUT/B; mkdir -p $R; export DEADLINE=${DEADLINE:-545}
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
fb=$B/flashbench
TAILN=2 step fp32 50 $fb run configs/fp32-h200.json -q -o $R/fp32-h200.json
TAILN=2 step peersfp32 40 python3 scripts/peers.py configs/fp32-h200.json --backends efficient,math -o $R/peers-fp32-h200.json
python3 scripts/ratios.py $R/fp32-h200.json --pair flash-sm90:naive --pair flash:naive > $R/sum-fp32.txt 2>&1; grep -A8 "^summary" $R/sum-fp32.txt
TAILN=14 step oddshapes 80 bash results/h200/s21/calls/oddshapes21.sh $R
TAILN=8 step san-tiled 100 bash scripts/sanitize.sh -e $fb -s configs/sanitize-tiled.json -t "memcheck synccheck" $R/san-tiled.json
TAILN=4 step tf32pair 40 env FB_SM90_FP32_BWD_PROBE=tf32pair $B/tests/flashbench_gpu_tests "[sm90tf32]"
TAILN=6 step gputests 200 $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
