#!/usr/bin/env bash
# Session 21 call A (one H200): main's binaries built on the lead's machine for sm_90a and carried (out/b.txz -> out/b); session
# 20's two prepared jobs under their pre-registered rules (fp16pair128: the fp32 backward at d = 128 non-causal on
# fp16 hi/lo pairs; pipe2: the d = 128 backward as two half-batch passes on three streams), then every GPU test with
# the session-20 defaults (fp16pair at d = 64 had run only under its word), then the fp32 sweep beside its peers.
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-540}
export B=${B:-out/b}
set -uo pipefail
t0=$SECONDS
[ -f out/b.txz ] && tar xJf out/b.txz -C out && echo "unpacked binaries (t=$((SECONDS-t0)))"
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {  # name, limit (s), command...: the limit cut to what is left; skipped under 20 s
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt 20 ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; timeout -k 3 $max "$@" > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"; tail -n ${TAILN:-25} $R/$name.log
}
runjob() {  # name, job script: OUTDIR=$R/name, BUILD=$B, limit JT
  local name=$1 job=$2
  TAILN=${TN:-40} step $name ${JT:-100} env BUILD=$B OUTDIR=$R/$name bash $job
}
cat out/commit.txt > $R/commit.txt 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi0.csv 2>&1
ldd $B/flashbench | grep -E "not found|fmt|cudnn|cublas" > $R/ldd.txt 2>&1; cat $R/ldd.txt
fb=$B/flashbench; S=results/h200/s21/calls
TN=45 JT=96 runjob fp32 $S/job1-fp32.sh
TN=40 JT=64 runjob sm90bwd $S/job1-sm90bwd.sh
TAILN=6 step gputests 200 $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
TAILN=2 step fp32 50 $fb run configs/fp32-h200.json -q -o $R/fp32-h200.json
TAILN=2 step peersfp32 40 python3 scripts/peers.py configs/fp32-h200.json --backends efficient,math -o $R/peers-fp32-h200.json
python3 scripts/ratios.py $R/fp32-h200.json --pair flash-sm90:naive --pair flash:naive > $R/sum-fp32.txt 2>&1; grep -A8 "^summary" $R/sum-fp32.txt
rm -f $R/*/ncu-query.txt
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
