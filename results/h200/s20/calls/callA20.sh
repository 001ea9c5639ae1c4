#!/usr/bin/env bash
# Session 20 call A (one H200): main adf748c built on the device for sm_90a (flashbench, the GPU tests and the
# known-order MMA probe); session 19's two prepared jobs under their pre-registered rules (docs/perf-notes.md):
# job1-sm90fwd-static.sh (flash-sm90 forward, `static` at d = 128 non-causal N <= 640: flips
# FwdDefaults::kShortStaticHeadDim if it passes) and job1-fp32mma.sh (fp16 vs TF32 tensor-core MMA chains in a known
# order: gates an fp16-pair fp32 backward), then every GPU test (the tests added since session 19's call C included).
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-560}
export B=${B:-build-dev} EXTRA_TARGETS="flashbench_mma_probe"
source out/common15.sh
cat out/commit.txt > $R/commit.txt 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi0.csv 2>&1
S=results/h200/s20/calls
TN=45 JT=75 runjob sm90fwd-static $S/job1-sm90fwd-static.sh
TN=3 JT=45 runjob fp32mma $S/job1-fp32mma.sh
TAILN=6 step gputests 200 $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
echo "=== fp32mma table"; cat $R/fp32mma/table.txt 2>/dev/null | tail -80
echo "=== sm90fwd-static table"; cat $R/sm90fwd-static/table.txt 2>/dev/null | head -40
rm -f $R/*/ncu-query.txt
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
