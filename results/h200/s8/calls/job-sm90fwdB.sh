FILTER='n(512|1024|4096|16384)-d128-bf16-causal' BUDGET_S=50 BUILD=$BUILD bash scripts/sm90fwd_h200.sh $OUTDIR/sm90fwd noxtile nol2small
