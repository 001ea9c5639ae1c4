#!/usr/bin/env bash
# Session 12 call A, sm90bwd (issue 13): the flash-sm90 d = 128 backward with 80 queries a step under a
# causal mask and in the GQA head split (FB_SM90_BWD128=q80c: the mask's compares inline; q80cm: behind
# a branch on the steps that need them; both run 80 queries on every d = 128 pass, head splits too;
# flash_sm90_bwd_traits.h kBwd128Q80Mask) beside the default (64 queries a step under the mask) and the
# in-binary cudnn, <= 65 s:
#   1. [bwd128] + GQA/MQA verification under q80c and q80cm (odd lengths around 80-query tiles, seq_q !=
#      seq_k both ways, causal and not; MQA shapes the launcher splits); a probe that fails is not timed;
#      every step is cut at 17 s;
#   2. seven bf16 d = 128 causal cases, every row verified, 16k tokens: 16 heads N 1024/4096/16384, GQA
#      32 q / 8 kv heads N 4096/16384 (no head split), MQA 32 q / 1 kv head N 4096/16384 (the launcher
#      splits the query heads: the probes run the 80-query split kernel with the same split): default +
#      cudnn, q80c, q80cm, the default again (one spec: configs/sm90bwd-h200.json with heads 16/32 and
#      kv_heads 1/8/16, written to OUTDIR);
#   3. if >= 9 s of the 63 s are left: one launch of q80c's causal kernel (16 heads, N = 4096) under
#      Nsight Compute (warp states, source counters, pipes); the report and its details page as text.
# Run with BUILD=<build dir> OUTDIR=<dir>.
t0=$SECONDS
budget=63
mkdir -p "$OUTDIR"
python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
del s['model_dim']
s.update(name='sm90bwd-s12', heads=[16, 32], kv_heads=[1, 8, 16], dtype=['bf16'], causal=[True],
         seq=[1024, 4096, 16384])
json.dump(s, open(sys.argv[2], 'w'), indent=1)" configs/sm90bwd-h200.json "$OUTDIR/spec-s12.json"
CONFIG="$OUTDIR/spec-s12.json" \
  CASES='h16-kv16-n(1024|4096|16384)-d128-bf16-causal|h32-kv(8|1)-n(4096|16384)-d128-bf16-causal' \
  VARIANTS="q80c q80cm" TEST_VARIANTS="q80c q80cm" ROUNDS=1 PEER2=0 STEP_TIMEOUT=17 BUILD=$BUILD \
  scripts/sm90bwd_h200.sh "$OUTDIR" >"$OUTDIR/steps.log" 2>&1
left=$((budget - (SECONDS - t0)))
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
if [ "$left" -ge 9 ] && [ -x "$ncu" ]; then
  mkdir -p "$OUTDIR/ncu"
  FB_SM90_BWD128=q80c timeout $((left - 1)) "$ncu" -f -o "$OUTDIR/ncu/q80c-b4h16n4096-causal" \
    -k regex:flash_sm90_bwd_kernel --launch-count 1 \
    --section WarpStateStats --section SourceCounters --section ComputeWorkloadAnalysis \
    --section SchedulerStats --section SpeedOfLight \
    "$BUILD/flashbench" run "$OUTDIR/spec-s12.json" --kernels flash-sm90 --filter 'h16-kv16-n4096-d128-bf16-causal' \
    --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q >"$OUTDIR/ncu/ncu.log" 2>&1
  echo "ncu rc=$? at $((SECONDS - t0)) s"
  rep="$OUTDIR/ncu/q80c-b4h16n4096-causal.ncu-rep"
  if [ -f "$rep" ]; then
    "$ncu" -i "$rep" --page details >"$OUTDIR/ncu/details.txt" 2>&1
    grep -E "Duration|Issue Slots Busy|Warp Cycles Per Issued|No Eligible|Tensor" "$OUTDIR/ncu/details.txt" | head -12
  fi
else
  echo "ncu skipped (${left} s left)"
fi
grep -E "rc=" "$OUTDIR/steps.log"
cat "$OUTDIR/table.txt"
echo "job-sm90bwd: $((SECONDS - t0)) s"
