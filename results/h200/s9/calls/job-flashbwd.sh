BUILD=$BUILD bash scripts/flashbwd_h200.sh $OUTDIR/flashbwd
