# Session 13, flashfwd (~55 s on a built tree; env BUILD, OUTDIR): the forward rows still behind FlashAttention-2
# (session 12's final sweep: d = 128 MHA non-causal N = 512-4096 bf16 0.971-0.984x, fp16 0.976-0.997x; GQA 32 query
# heads on 8 / 1 K/V heads N = 1k 0.989 / 0.992x; d = 64 non-causal N = 512 / 1k bf16 0.991 / 1.000x). At d = 128
# session 12's ncu pair (N = 512 bf16) had ours latency-bound: 25% fewer instructions than FA2's kernel but issuing
# on 31% of cycles against 44%, stall `wait` 2.37 against 1.33 and short_scoreboard 0.89 against 0.35 per issued
# instruction. Probes (kernels/flash/flash_fwd_config.h):
#   expv  : d = 128: the step's exponentials after the V wait, key block by key block between the P V HMMAs
#           (kFwdExpPV); d = 64 runs the default (a noise check there)
#   expv2 : expv with key block 0's exponentials before the V wait (kFwdExpFirst)
#   plane : non-causal launches one plane's query tiles after another (d = 128's order; at d = 64 in place of the
#           L2-sized plane groups), same kernel. Run as one setting with expv2 ("expv2,plane"): each word is a no-op
#           at the other head dim (expv2 at d = 64, plane at d = 128), so the d = 128 rows measure expv2 and the
#           d = 64 rows plane, in one run
# Runs: shipped, expv, shipped, expv2+plane, shipped (each probe between two shipped runs), every row verified;
# [flashfwd] GPU tests under each probe setting (the shipped kernels are unchanged: no shipped test step); FA2
# (torch-flash) on the same cases; then, if the job is under 46 s, Nsight Compute on one launch of the shipped
# kernel and one under expv2 at d = 128 N = 512 bf16 (session 12's metrics; FA2's profile is in
# results/h200/s12/final/r2-flashfwd/, not rerun).
# Causal rows as controls, since expv/expv2 take every launch at d = 128: MHA N = 512 / 2k bf16 and 32 query heads on
# 8 K/V heads N = 1k (flip for causal launches only if they hold).
# Sizing (session 12's first job ran into its 62 s limit: its filter matched the GQA spec's backward rows): three
# forward-only specs, 16 MHA d = 128 + 4 GQA + 6 MHA d = 64 cases (flash times 19 of them, torch-flash, which takes
# a whole spec, all 26); variants start only before 32 s, the ncu pair only before 46 s.
mkdir -p "$OUTDIR"
python3 - configs/flashfwd-h200.json configs/gqa-h200.json "$OUTDIR" <<'PY' || exit 2
import json, sys
mha, gqa = (json.load(open(f)) for f in sys.argv[1:3])
d64 = dict(mha)
mha.update(name="flashfwd-s13-mha", seq=[512, 1024, 2048, 4096], head_dim=[128], dtype=["bf16", "fp16"],
           causal=[False, True],
           description="configs/flashfwd-h200.json's d = 128 rows N = 512-4096 (job-flashfwd.sh, s13; flash times the "
                       "non-causal ones and causal N = 512 / 2k bf16)")
gqa.update(name="flashfwd-s13-gqa", seq=[1024], heads=[32], kv_heads=[8, 1], causal=[False, True], kernels=["flash"],
           description="configs/gqa-h200.json's 32-query-head rows at N = 1024 (job-flashfwd.sh, s13)")
d64.update(name="flashfwd-s13-d64", seq=[512, 1024, 4096], head_dim=[64], dtype=["bf16", "fp16"], causal=[False],
           description="configs/flashfwd-h200.json's d = 64 non-causal rows N = 512 / 1k / 4k (job-flashfwd.sh, s13)")
for name, s in (("mha", mha), ("gqa", gqa), ("d64", d64)):
    s["pass"] = ["fwd"]
    json.dump(s, open(f"{sys.argv[3]}/spec-{name}.json", "w"), indent=1)
PY
CONFIG="$OUTDIR/spec-mha.json $OUTDIR/spec-gqa.json $OUTDIR/spec-d64.json" GROUP=1 BUDGET_S=32 \
  TESTS="expv expv2,plane" NCU=1 NCU_BY=46 NCU_VARIANT=expv2 NCU_FA2=0 \
  FILTER='h16-kv16-n(512|1024|2048|4096)-d128-(bf16|fp16)-full|h16-kv16-n(512|2048)-d128-bf16-causal|h32-kv[18]-n1024-d128-bf16-full|h32-kv8-n1024-d128-bf16-causal|h32-kv32-n(512|1024|4096)-d64-(bf16|fp16)-full' \
  scripts/flashfwd_h200.sh "$OUTDIR" expv expv2,plane
