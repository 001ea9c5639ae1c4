#!/usr/bin/env bash
# Session 11 call A, sm90bwd (issue 13): the flash-sm90 d = 128 backward's probes q80 (80 queries a step,
# non-causal only: causal rows run the default), mbranch and poly3 (FB_SM90_BWD128,
# flash_sm90_bwd_traits.h) beside the default and the in-binary cudnn, <= 65 s:
#   1. [bwd128] + GQA/MQA verification under q80 and mbranch (poly3 is session 9's poly with 3/8 of the
#      exponentials instead of 2/8: the same code, verified by its timed rows); a probe that fails is
#      not timed; every step is cut at 16 s;
#   2. six bf16 d = 128 cases, every row verified, 16k tokens: 16 heads non-causal N 1024/4096/16384,
#      causal 2048/16384, and GQA 32 q / 8 kv heads causal N = 4096 (the default picks no head split
#      there, so the probes run the same kernel shape): default + cudnn, q80, mbranch, poly3, the
#      default again (one spec, configs/sm90bwd-h200.json with heads/kv_heads axes, written to OUTDIR);
#   3. if >= 9 s of the 63 s are left: one launch of the default kernel (16 heads, N = 4096, non-causal)
#      under Nsight Compute: warp states, source counters (stall reasons by SASS line), pipes, shared
#      memory; the report and its details/source pages as text.
# Run with BUILD=<build dir> OUTDIR=<dir>.
t0=$SECONDS
budget=63
mkdir -p "$OUTDIR"
python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
del s['model_dim']
s.update(name='sm90bwd-s11', heads=[16, 32], kv_heads=[8, 16], dtype=['bf16'], seq=[1024, 2048, 4096, 16384])
json.dump(s, open(sys.argv[2], 'w'), indent=1)" configs/sm90bwd-h200.json "$OUTDIR/spec-s11.json"
CONFIG="$OUTDIR/spec-s11.json" \
  CASES='h16-kv16-n(1024|4096|16384)-d128-bf16-full|h16-kv16-n(2048|16384)-d128-bf16-causal|h32-kv8-n4096-d128-bf16-causal' \
  VARIANTS="q80 mbranch poly3" TEST_VARIANTS="q80 mbranch" ROUNDS=1 PEER2=0 STEP_TIMEOUT=16 BUILD=$BUILD \
  scripts/sm90bwd_h200.sh "$OUTDIR" >"$OUTDIR/steps.log" 2>&1
left=$((budget - (SECONDS - t0)))
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
if [ "$left" -ge 9 ] && [ -x "$ncu" ]; then
  mkdir -p "$OUTDIR/ncu"
  timeout $((left - 1)) "$ncu" -f -o "$OUTDIR/ncu/flash-b4h16n4096" -k regex:flash_sm90_bwd_kernel --launch-count 1 \
    --section WarpStateStats --section SourceCounters --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section SchedulerStats --section SpeedOfLight \
    "$BUILD/flashbench" run "$OUTDIR/spec-s11.json" --kernels flash-sm90 --filter 'h16-kv16-n4096-d128-bf16-full' \
    --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q >"$OUTDIR/ncu/ncu.log" 2>&1
  echo "ncu rc=$? at $((SECONDS - t0)) s"
  rep="$OUTDIR/ncu/flash-b4h16n4096.ncu-rep"
  if [ -f "$rep" ]; then
    "$ncu" -i "$rep" --page details >"$OUTDIR/ncu/details.txt" 2>&1
    "$ncu" -i "$rep" --page source --csv --print-source sass >"$OUTDIR/ncu/source-sass.csv" 2>&1
    grep -E "Duration|Issue Slots Busy|Warp Cycles Per Issued|No Eligible|Shared Memory|Tensor" \
      "$OUTDIR/ncu/details.txt" | head -16
  fi
else
  echo "ncu skipped (${left} s left)"
fi
grep -E "rc=" "$OUTDIR/steps.log"
cat "$OUTDIR/table.txt"
echo "job-sm90bwd: $((SECONDS - t0)) s"
