scripts/fp32s8_race_h200.sh "$OUTDIR/race" "$BUILD" > "$OUTDIR/race.out" 2>&1; scripts/fp32s8_h200.sh "$OUTDIR/time" "$BUILD" 2>&1 | tail -n 14; tail -n 34 "$OUTDIR/race.out"
