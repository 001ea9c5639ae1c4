BUILD=$BUILD scripts/sm90bwd_h200.sh $OUTDIR/sm90bwd
