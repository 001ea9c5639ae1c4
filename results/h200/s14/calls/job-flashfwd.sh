# Session 14, flashfwd (~50 s on a built tree, <= 65 s by its guards; env BUILD, OUTDIR): the per-block work before
# and after the KV loop at d = 128. Session 13's round-2 profile (results/h200/s13/callB/r2-flashfwd/, ncu
# SourceCounters of the shipped kernel and FA2's at N = 512 bf16) had the KV loop level with FA2's in samples and the
# whole ~6% gap outside it: prologue + epilogue 15.8% of our samples against 9.6% of FA2's (prologue 864 SASS
# instructions against 256; epilogue four serial per-row chains: quad sum, IEEE divide with a slow-path branch, the
# accurate log2f, a branch around each LSE store; O stored with a division and a branch per 16-byte chunk).
# Probes (kernels/flash/flash_fwd_config.h; the KV loop is the default's, no local access in it):
#   pro     : kFwdLeanPrologue: the Q tile copied as the K/V tiles are (one address, compile-time offsets) and the
#             L2 prefetch target worked out after Q, K_0, V_0 are in flight (d = 128 kernel: 2832 SASS instructions
#             against the shipped 3104, prologue 609 against 872)
#   epi,pro : kFwdLeanEpi too: the rows' quad sums side by side, 1 / sum and the LSE's log2 on the MUFU, no branch
#             per row, one LSE store per lane, O's stores predicated at compile-time offsets (2216 instructions,
#             after the loop 475 against 1037). epi alone is not built (ptxas spilled a P value in every KV step)
# Runs: shipped, pro, shipped, epi+pro, shipped (each probe between two shipped runs), every row verified; the
# [flashfwd] GPU tests under both probe settings (the shipped kernels are unchanged: no shipped test step); FA2
# (torch-flash) on the same specs; then, if the job is under 40 s, Nsight Compute (WarpStateStats, SchedulerStats,
# ...) on one launch of the shipped kernel and one under epi,pro at d = 128 N = 512 bf16 (FA2's is session 13's).
# Rows (flash times 15): d = 128 MHA non-causal N = 512 / 1k / 2k / 4k bf16 + fp16 (the rows behind FA2); d = 64
# non-causal N = 512 / 1k bf16 + fp16 (the probes take d = 64 launches too); causal controls d = 128 N = 512 / 2k
# bf16 and d = 64 N = 1k bf16 (the probes' bits apply to causal launches as well). Two forward-only specs (24 cases,
# torch-flash times all of them). Variants start only before 30 s, the ncu pair only before 40 s, each ncu step cut
# at 11 s.
mkdir -p "$OUTDIR"
python3 - configs/flashfwd-h200.json "$OUTDIR" <<'PY' || exit 2
import json, sys
base = json.load(open(sys.argv[1]))
d128, d64 = dict(base), dict(base)
d128.update(name="flashfwd-s14-d128", seq=[512, 1024, 2048, 4096], head_dim=[128], dtype=["bf16", "fp16"],
            causal=[False, True],
            description="configs/flashfwd-h200.json's d = 128 rows N = 512-4096 (job-flashfwd.sh, s14; flash times "
                        "the non-causal ones and causal N = 512 / 2k bf16)")
d64.update(name="flashfwd-s14-d64", seq=[512, 1024], head_dim=[64], dtype=["bf16", "fp16"], causal=[False, True],
           description="configs/flashfwd-h200.json's d = 64 rows N = 512 / 1k (job-flashfwd.sh, s14; flash times "
                       "the non-causal ones and causal N = 1k bf16)")
for name, s in (("d128", d128), ("d64", d64)):
    s["pass"] = ["fwd"]
    json.dump(s, open(f"{sys.argv[2]}/spec-{name}.json", "w"), indent=1)
PY
CONFIG="$OUTDIR/spec-d128.json $OUTDIR/spec-d64.json" GROUP=1 BUDGET_S=30 \
  TESTS="pro epi,pro" NCU=1 NCU_BY=40 NCU_TIMEOUT=11 NCU_VARIANT=epi,pro NCU_FA2=0 \
  FILTER='h16-kv16-n(512|1024|2048|4096)-d128-(bf16|fp16)-full|h16-kv16-n(512|2048)-d128-bf16-causal|h32-kv32-n(512|1024)-d64-(bf16|fp16)-full|h32-kv32-n1024-d64-bf16-causal' \
  scripts/flashfwd_h200.sh "$OUTDIR" pro epi,pro
