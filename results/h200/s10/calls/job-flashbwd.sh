BUILD=$BUILD scripts/flashbwd_s10.sh $OUTDIR
