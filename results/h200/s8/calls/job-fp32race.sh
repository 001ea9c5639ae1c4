bash scripts/fp32s8_race_h200.sh "$OUTDIR/fp32race" "$BUILD"
