# Session 13 call A, fp32 (issue 15, flash-sm90 fp32 backward; <= 65 s): d = 64 naive (exact FP32) / default /
# probes lofrag, lofragdq (FB_SM90_FP32_BWD_PROBE: lo*hi of S^T / dP^T's first four k8 steps with A = K lo / V lo from
# registers) and dslate (dS's stores to shared memory, and the barrier before them, issued under dV's first wgmmas
# instead of ahead of dV / dK) timed and verified; [sm90tf32] under each probe; dK / dV bits against the default;
# racecheck of the d = 64 race case under dslate, then ncu default vs dslate (vs lofragdq) while time is left.
# Run with BUDGET=<s, default 63> BUILD=<build dir> OUTDIR=<dir>.
scripts/fp32s13_h200.sh "$OUTDIR" "$BUILD"
