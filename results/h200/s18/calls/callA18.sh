#!/usr/bin/env bash
# Session 18 call A (one H200, no build): main 25373ed built here for sm_90a and carried; session 17's prepared
# pairq job twice (two readings of each setting), the lead's fp16/bf16 clock + ncu job, then every GPU test.
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-540}
export B=${B:-build-loc} USEBIN=${USEBIN:-out/binM18.txz}
source out/common15.sh
echo "main 25373ed (built on the CPU machine, carried)" > $R/commit.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi.csv 2>&1
TN=45 JT=80 runjob pairq1 results/h200/s17/calls/job2-sm90fwd-pairq.sh
TN=45 JT=80 runjob pairq2 results/h200/s17/calls/job2-sm90fwd-pairq.sh
TN=40 JT=100 runjob fp16clk18 results/h200/s18/calls/job-fp16clk18.sh
TAILN=6 step gputests 150 $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
rm -f $R/*/ncu-query.txt
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
