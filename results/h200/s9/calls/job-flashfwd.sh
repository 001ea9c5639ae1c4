bash scripts/flashfwd_h200.sh "$OUTDIR"
