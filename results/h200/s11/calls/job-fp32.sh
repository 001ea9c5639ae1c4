scripts/fp32s11_h200.sh "$OUTDIR" "$BUILD"
