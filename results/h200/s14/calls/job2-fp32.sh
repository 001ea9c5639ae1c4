# Session 14 call B (round 2), fp32 (issue 15, flash-sm90 fp32 backward d = 64 non-causal; <= 50 s, budget 47):
# naive (exact FP32) / default / probes dqahead and dqg2 (FB_SM90_FP32_BWD_PROBE; dQ^T = K^T dS^T's cadence: dqahead
# loads the next commit group's K^T fragments before the wait for the previous group, dqg2 runs two k8 steps a group)
# on configs/h200-fp32-sm90.json's d = 64 backward rows (non-causal N 1024 / 4096 / 8192, causal 4096), naive in every
# process so that every row, the probes' too, is verified against fp64 by the strict FP32 rule, two rounds;
# [sm90tf32] under each probe (first); dK / dV / O / LSE bits against the default; ncu of dqahead with the source
# counters while time is left; table last (OUTDIR/table.txt).
# Run with BUDGET=<s, default 47> BUILD=<build dir> OUTDIR=<dir>.
scripts/fp32s14r2_h200.sh "$OUTDIR" "$BUILD"
