#!/usr/bin/env bash
# Session 17 call C (one H200, no build): int17d (main b118cef + sm90fwds17 5d46b87 + sm90bwds17 dc99c6d) built here
# for sm_90a and carried; sm90fwd's round-2 mcast (CTA-scope remote releases) with its round-1 job, sm90bwd's
# measurement job (default and cudnn only), then every GPU test.
R=$OUT/C; mkdir -p $R; export DEADLINE=${DEADLINE:-400}
export B=${B:-build-loc} USEBIN=${USEBIN:-out/binD17.txz}
source out/common15.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi.csv 2>&1
for j in ${JOBS:-sm90fwd sm90bwd}; do
  f=results/h200/s17/calls/job1-$j.sh; [ -f $f ] || { echo "no $f"; continue; }
  TN=40 JT=${JT:-90} runjob r2-$j $f
done
TAILN=6 step gputests 120 $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
