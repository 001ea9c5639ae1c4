#!/usr/bin/env bash
# Session 18 call B (one H200, no build): int18b (main + the engineers' branches) built here for sm_90a and carried:
# every GPU test first (also the rerun F18's path-broken step needed: the same default kernels as main 7f48c15), then
# each engineer's job.
R=$OUT/B; mkdir -p $R; export DEADLINE=${DEADLINE:-560}
export B=${B:-build-loc} USEBIN=${USEBIN:-out/binI18b.txz}
source out/common15.sh
cat out/commit.txt > $R/commit.txt 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi.csv 2>&1
TAILN=6 step gputests 150 $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
for j in ${JOBS:-sm90bwd sm90fwd2 sm90fwd}; do
  f=results/h200/s18/calls/job1-$j.sh; [ -f $f ] || { echo "no $f"; continue; }
  TN=45 JT=${JT:-85} runjob $j $f
done
rm -f $R/*/ncu-query.txt
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
