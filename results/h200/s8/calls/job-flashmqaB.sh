CONFIG=configs/flashmqa64-h200.json FILTER=causal TESTS=0 BUILD=$BUILD bash scripts/flashmqa_h200.sh $OUTDIR
