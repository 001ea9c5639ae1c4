bash scripts/sm90fwd_h200.sh "$OUTDIR"
