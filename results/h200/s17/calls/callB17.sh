#!/usr/bin/env bash
# Session 17 call B (one H200): the integration tree (main + the helpers' round-1 branches) built on the device for
# sm_90a (with the GPU tests' fault fixture and example plug-in), then each helper's round-1 job, then every GPU test
# with what time is left.
R=$OUT/B; mkdir -p $R; export DEADLINE=${DEADLINE:-580}
export B=${B:-build-dev} EXTRA_TARGETS="fb_fixture_fault fb_example_cuda"
source out/common15.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi.csv 2>&1
for j in ${JOBS:-sm90fwd sm90bwd}; do
  f=results/h200/s17/calls/job1-$j.sh; [ -f $f ] || { echo "no $f"; continue; }
  TN=40 JT=${JT:-110} runjob r1-$j $f
done
TAILN=6 step gputests 150 $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
