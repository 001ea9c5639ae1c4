#!/usr/bin/env bash
# Session 17 call A (one H200, no build): main's binaries (e7d6de0, code-identical to c91912f) built here for sm_90a
# and carried; session 16's prepared round-3 jobs (lazyres2; halfdiag / halfgemm), the clock/power + ncu L2 job,
# then the whole GPU test suite with what time is left.
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-575}
export B=${B:-build-loc} USEBIN=${USEBIN:-out/binM16.txz}
source out/common15.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi.csv 2>&1
for j in ${JOBS:-sm90fwd sm90c64}; do
  f=results/h200/s16/calls/job3-$j.sh; [ -f $f ] || { echo "no $f"; continue; }
  TN=30 JT=80 runjob r3-$j $f
done
TN=40 JT=190 runjob clock16 results/h200/s16/calls/job-clock16.sh
TAILN=6 step gputests 150 $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
