OUTDIR=${OUTDIR:?}
$BUILD/tests/flashbench_gpu_tests "[fp8pad]" > $OUTDIR/fp8pad-gpu-tests.log 2>&1; t=$?; grep -E "^fp8pad verify|FAILED" -A3 $OUTDIR/fp8pad-gpu-tests.log | cut -c1-200 | head -60; tail -n 3 $OUTDIR/fp8pad-gpu-tests.log; echo "SUMMARY fp8verify: gpu tests [fp8pad] rc=$t (0 = all pass)"
