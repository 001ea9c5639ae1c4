# Session 15, fp32 (issue 15, flash-sm90 fp32 backward d = 64; prepared in session 14 round 3, <= 65 s, budget 62):
# naive (exact FP32) / default / probes dqg2 (session 14's, re-measured) and roles (NEW, never run: 64-query tiles,
# consumer 0 S^T / P / dV, consumer 1 dP^T / dS / dK, each half of dQ^T; FB_SM90_FP32_BWD_PROBE) on
# configs/h200-fp32-sm90.json's d = 64 backward rows (non-causal N 1024 / 4096 / 8192, causal 4096), naive in every
# process so that every row, the probes' too, is verified against fp64 by the strict FP32 rule (O, LSE, dQ, dK, dV),
# two rounds; [sm90tf32] under each probe first (a probe whose tests hang is left out of the timing); racecheck and
# synccheck of roles (d = 64, N = 130, GQA), then ncu of roles and the default (N = 4096, source counters), while
# time is left; table last (OUTDIR/table.txt).
# Run with BUDGET=<s, default 62> BUILD=<build dir> OUTDIR=<dir>.
scripts/fp32s15_h200.sh "$OUTDIR" "$BUILD"
