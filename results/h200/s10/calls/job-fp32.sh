scripts/fp32s10_h200.sh "$OUTDIR" "$BUILD"
