# Session 13, flashfwd (~45 s on a built tree; env BUILD, OUTDIR): the d = 128 non-causal forward rows still behind
# FlashAttention-2 (session 12's final sweep: MHA N = 512-4096 bf16 0.971-0.984x, fp16 0.976-0.997x; GQA 32 query
# heads on 8 / 1 K/V heads N = 1k 0.989 / 0.992x), where session 12's ncu pair (N = 512 bf16) had ours latency-bound:
# 25% fewer instructions than FA2's kernel but issuing on 31% of cycles against 44%, stall `wait` 2.37 against 1.33
# and short_scoreboard 0.89 against 0.35 per issued instruction. Probes (kernels/flash/flash_fwd_config.h):
#   expv  : the step's exponentials after the V wait, key block by key block between the P V HMMAs (kFwdExpPV)
#   expv2 : expv with key block 0's exponentials before the V wait (kFwdExpFirst)
# Runs: shipped, expv, shipped, expv2, shipped (each probe between two shipped runs), every row verified; [flashfwd]
# GPU tests under each probe (the shipped kernels are unchanged: no shipped test step); FA2 (torch-flash) on the
# same cases; then Nsight Compute on one launch of the shipped kernel and one under expv2 at N = 512 bf16 (the
# same metrics as session 12's pair; FA2's own profile is in results/h200/s12/final/r2-flashfwd/, not rerun).
# One causal row as a control (the probes' bits apply to causal launches too): 32 query heads on 8 K/V heads N = 1k.
# Sizing (session 12's first job ran into its 62 s limit: its filter matched the GQA spec's backward rows): the
# two specs below hold only forward rows, 8 MHA + 4 GQA cases (flash times 11 of them, torch-flash, which takes a
# whole spec, all 12); variants start only before 30 s, the ncu pair only before 48 s.
mkdir -p "$OUTDIR"
python3 - configs/flashfwd-h200.json configs/gqa-h200.json "$OUTDIR" <<'PY' || exit 2
import json, sys
mha, gqa = (json.load(open(f)) for f in sys.argv[1:3])
mha.update(name="flashfwd-s13-mha", seq=[512, 1024, 2048, 4096], head_dim=[128], dtype=["bf16", "fp16"],
           causal=[False], description="configs/flashfwd-h200.json's d = 128 non-causal rows N = 512-4096 (job-flashfwd.sh, s13)")
gqa.update(name="flashfwd-s13-gqa", seq=[1024], heads=[32], kv_heads=[8, 1], causal=[False, True], kernels=["flash"],
           description="configs/gqa-h200.json's 32-query-head rows at N = 1024 (job-flashfwd.sh, s13)")
for name, s in (("mha", mha), ("gqa", gqa)):
    s["pass"] = ["fwd"]
    json.dump(s, open(f"{sys.argv[3]}/spec-{name}.json", "w"), indent=1)
PY
CONFIG="$OUTDIR/spec-mha.json $OUTDIR/spec-gqa.json" GROUP=1 BUDGET_S=30 TESTS="expv expv2" \
  NCU=1 NCU_BY=48 NCU_VARIANT=expv2 NCU_FA2=0 \
  FILTER='h16-kv16-n(512|1024|2048|4096)-d128-(bf16|fp16)-full|h32-kv[18]-n1024-d128-bf16-full|h32-kv8-n1024-d128-bf16-causal' \
  scripts/flashfwd_h200.sh "$OUTDIR" expv expv2
