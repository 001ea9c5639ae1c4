#!/usr/bin/env bash
# Session 11 call A, sm90bwd (issue 13): the flash-sm90 d = 128 backward's probes poly3 and dvhalves
# (FB_SM90_BWD128, flash_sm90_bwd_traits.h) beside the default and the in-binary cudnn, <= 65 s:
#   mha/  [bwd128] + GQA/MQA verification under each probe, then bf16 non-causal N 1024/4096/16384 and
#         causal 2048/16384 (configs/sm90bwd-h200.json, every row verified): default + cudnn, poly3,
#         dvhalves, default + cudnn again (~40 s);
#   gqa/  32 q / 8 kv heads, d = 128: causal N = 4096 and non-causal N = 16384 (configs/mqabwd-h200.json
#         with verify on: every row verified; the default picks no head split there, so the probes run
#         the same kernel shape) (~14 s);
#   ncu/  if >= 9 s of the 63 s are left: one launch of the default kernel (8 heads, N = 4096, non-causal)
#         under Nsight Compute: warp states, source counters (stall reasons by SASS line), pipes, shared
#         memory; the report and its details/source pages as text.
# Run with BUILD=<build dir> OUTDIR=<dir>.
t0=$SECONDS
budget=63
CASES='n(1024|4096|16384)-d128-bf16-full|n(2048|16384)-d128-bf16-causal' VARIANTS="poly3 dvhalves" \
  TEST_VARIANTS="poly3 dvhalves" ROUNDS=1 BUILD=$BUILD scripts/sm90bwd_h200.sh "$OUTDIR/mha"
mkdir -p "$OUTDIR/gqa"
python3 -c "import json, sys; s = json.load(open(sys.argv[1])); s['verify'] = True; json.dump(s, open(sys.argv[2], 'w'))" \
  configs/mqabwd-h200.json "$OUTDIR/gqa/spec-verified.json"
CONFIG="$OUTDIR/gqa/spec-verified.json" CASES='h32-kv8-n4096-d128-bf16-causal|h32-kv8-n16384-d128-bf16-full' \
  VARIANTS="poly3 dvhalves" TEST_VARIANTS="" ROUNDS=1 BUILD=$BUILD scripts/sm90bwd_h200.sh "$OUTDIR/gqa"
left=$((budget - (SECONDS - t0)))
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
if [ "$left" -ge 9 ] && [ -x "$ncu" ]; then
  mkdir -p "$OUTDIR/ncu"
  timeout $((left - 1)) "$ncu" -f -o "$OUTDIR/ncu/flash-b4h8n4096" -k regex:flash_sm90_bwd_kernel --launch-count 1 \
    --section WarpStateStats --section SourceCounters --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section SchedulerStats --section SpeedOfLight \
    "$BUILD/flashbench" run configs/mqabwd-h200.json --kernels flash-sm90 --filter 'b4-h8-kv8-n4096-d128-bf16-full' \
    --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q >"$OUTDIR/ncu/ncu.log" 2>&1
  echo "ncu rc=$? $((SECONDS - t0))s" >&2
  rep="$OUTDIR/ncu/flash-b4h8n4096.ncu-rep"
  if [ -f "$rep" ]; then
    "$ncu" -i "$rep" --page details >"$OUTDIR/ncu/details.txt" 2>&1
    "$ncu" -i "$rep" --page source --csv --print-source sass >"$OUTDIR/ncu/source-sass.csv" 2>&1 || true
    grep -E "Duration|Tensor|Issue Slots Busy|Warp Cycles Per Issued|Stall|Shared|No Eligible" "$OUTDIR/ncu/details.txt" | head -30
  fi
else
  echo "ncu skipped (${left}s left)" >&2
fi
echo "== mha (TFLOP/s; ratios)"; cat "$OUTDIR/mha/table.txt"
echo "== gqa"; cat "$OUTDIR/gqa/table.txt"
echo "job-sm90bwd: $((SECONDS - t0))s"
