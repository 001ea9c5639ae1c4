# Session 14 call A, fp32 (issue 15, flash-sm90 fp32 backward d = 64; <= 65 s; prepared in session 13, branch fp3214):
# naive (exact FP32) / default / probe dotfirst (FB_SM90_FP32_BWD_PROBE=dotfirst: the producer transposes dO before Q,
# a barrier after each; the consumers start dV's wgmmas once dO^T is written, dK's once Q^T is) on
# configs/h200-fp32-sm90.json's d = 64 backward rows, every row verified against fp64, two rounds; [sm90tf32] under
# dotfirst (the strict FP32 rule); dK / dV bits against the default; ncu default vs dotfirst with the source counters
# (the stall samples at each mbarrier wait: t_ready, qt_ready, qd_empty, raw_full, ...) and racecheck under dotfirst
# while time is left; table last (OUTDIR/table.txt).
# Run with BUDGET=<s, default 63> BUILD=<build dir> OUTDIR=<dir>.
scripts/fp32s14_h200.sh "$OUTDIR" "$BUILD"
