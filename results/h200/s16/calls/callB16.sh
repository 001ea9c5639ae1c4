#!/usr/bin/env bash
# Session 16 call B (one H200, no build): int16b (main + the helpers' round-2 heads) built here for sm_90a and
# carried; the whole GPU test suite, each helper's round-2 job, the lead's clock/power job.
R=$OUT/B; mkdir -p $R; export DEADLINE=${DEADLINE:-560}
export B=${B:-build-loc} USEBIN=${USEBIN:-out/binB16.txz}
source out/common15.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi.csv 2>&1
TAILN=6 step gputests 150 $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
for j in ${JOBS:-sm90fwd sm90bwd}; do
  f=results/h200/s16/calls/job2-$j.sh; [ -f $f ] || { echo "no $f"; continue; }
  TN=30 JT=85 runjob r2-$j $f
done
TN=12 JT=40 runjob clock128 results/h200/s16/calls/job-clock128.sh
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
