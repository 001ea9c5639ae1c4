# Session 13 call B (round 2, data for session 14), fp32 (issue 15, flash-sm90 fp32 backward d = 64; <= 40 s): naive
# (exact FP32) / default / probe trunc (FB_SM90_FP32_BWD_PROBE=trunc: Q's and dO's hi is the raw tile, truncated by
# the wgmma; the producer's split writes lo only and its transposes read the raw tile: 32 KB a tile less shared-memory
# traffic) on configs/h200-fp32-sm90.json's d = 64 backward rows, every row verified, two rounds; [sm90tf32] under
# trunc; each output's error against fp64, default vs trunc; ncu default vs trunc while time is left; table last.
# Run with BUDGET=<s, default 38> BUILD=<build dir> OUTDIR=<dir>.
scripts/fp32s13r2_h200.sh "$OUTDIR" "$BUILD"
