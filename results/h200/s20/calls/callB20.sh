#!/usr/bin/env bash
# Session 20 call B (one H200): main + the helpers' session-20 branches (fp32s20: the fp32 backward's `fp16pair`
# probe at d = 64 non-causal; sm90fwds20: the Hopper forward's d = 64 small-N probe) built on the device for sm_90a;
# their jobs under their pre-registered rules (docs/perf-notes.md), memcheck of the new fp32 path, every GPU test.
R=$OUT/B; mkdir -p $R; export DEADLINE=${DEADLINE:-575}
export B=${B:-build-dev}
source out/common15.sh
cat out/commit.txt > $R/commit.txt 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi0.csv 2>&1
fb=$B/flashbench; S=results/h200/s20/calls
[ -f $S/job2-fp32.sh ] && TN=40 JT=100 runjob fp32 $S/job2-fp32.sh
[ -f $S/job2-sm90fwd.sh ] && TN=40 JT=70 runjob sm90fwd $S/job2-sm90fwd.sh
[ -f $S/job2-fp32.sh ] && TAILN=4 step memcheck-fp16pair 45 env FB_SM90_FP32_BWD_PROBE=fp16pair compute-sanitizer --tool memcheck --error-exitcode 9 $fb verify --seq 320 --batch 1 --heads 2 --dim 64 --dtype fp32 --causal no --pass all -q
TAILN=6 step gputests 190 $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
echo "=== fp32 table"; tail -40 $R/fp32/table.txt 2>/dev/null
echo "=== sm90fwd table"; tail -40 $R/sm90fwd/table.txt 2>/dev/null
rm -f $R/*/ncu-query.txt
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
