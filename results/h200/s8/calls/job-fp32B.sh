bash scripts/fp32s8_h200.sh "$OUTDIR/fp32" "$BUILD"
