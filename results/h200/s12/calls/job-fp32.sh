# Session 12 call A, fp32 (issue 15, flash-sm90 fp32 backward; <= 65 s): d = 64 naive (exact FP32) / default /
# probes hilo, hilo8, hilo_dqperm (FB_SM90_FP32_BWD_PROBE) timed and verified; [sm90tf32] under each probe; racecheck of the
# d = 128 backward, default vs racebar. Run with BUILD=<build dir> OUTDIR=<dir>.
scripts/fp32s12_h200.sh "$OUTDIR" "$BUILD"
