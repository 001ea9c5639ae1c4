BUILD=$BUILD bash scripts/flashmqa_h200.sh $OUTDIR
