bash scripts/cudnn_fp8_diag_h200.sh $OUTDIR
