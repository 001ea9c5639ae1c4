# Session 14 round 2, flashfwd (call B; <= 50 s on a built tree; env BUILD, OUTDIR). Two questions at d = 128:
#   epi,pro : call A's lean prologue + epilogue (kFwdLeanPrologue | kFwdLeanEpi; kernels unchanged since call A, PTX
#             identical) again, three times, each between two shipped runs: call A had +5.9% / +2.2% on causal
#             N = 512 / 2k and +1.9% / +0.9% at non-causal N = 512, level at 1k / 2k, and 0.977 / 0.954 at
#             non-causal 4k where the shipped runs themselves moved 1.8% / 4.2%; the repeats decide whether 4k is a
#             loss (then a causal-only flip, TcLoop::kCausalOpt) or noise (then the whole of TcTiles<128>::kOpt)
#   stag    : NEW, d = 128 non-causal launches only (kFwdStagger): the first wave's second half of blocks (the second
#             block of each SM under breadth-first placement) waits ~3000 cycles (~half a KV step) before its
#             prologue, so an SM's two blocks, whose blocks all have one length and so start wave after wave side
#             by side, run out of phase: one's softmax under the other's HMMAs (issue active 31% against FA2's 44%,
#             tensor pipe 48% at N = 512). Causal launches and d = 64 run the default under this word
# Runs: ship, epi,pro, stag, ship, repeated three times (REPEAT=3, GROUP=2: 10 runs), every row verified; [flashfwd]
# GPU tests under epi,pro and under stag; FA2 (torch-flash) on the spec. Rows (flash times 12, all d = 128, the head dim
# a flip would touch): MHA non-causal N = 512 / 1k / 2k / 4k bf16 + fp16; causal N = 512 bf16 + fp16, 1k and 2k bf16
# (stag's no-op controls, epi,pro's best rows in call A). One forward-only spec (16 cases, torch-flash times all).
# Estimate on the H200: 10 runs x ~2 s, tests 2 x ~5 s, FA2 ~5 s: ~37 s. Variant runs start only before 32 s; no ncu.
mkdir -p "$OUTDIR"
python3 - configs/flashfwd-h200.json "$OUTDIR/spec-r2.json" <<'PY' || exit 2
import json, sys
s = dict(json.load(open(sys.argv[1])))
s.update(name="flashfwd-s14-r2", seq=[512, 1024, 2048, 4096], head_dim=[128], dtype=["bf16", "fp16"],
         causal=[False, True], description="configs/flashfwd-h200.json's d = 128 rows N = 512-4096 (job2-flashfwd.sh, "
         "s14 round 2; flash times the non-causal ones, causal N = 512 bf16 + fp16, 1k and 2k bf16)")
s["pass"] = ["fwd"]
json.dump(s, open(sys.argv[2], "w"), indent=1)
PY
CONFIG="$OUTDIR/spec-r2.json" GROUP=2 REPEAT=3 BUDGET_S=32 TESTS="epi,pro stag" NCU=0 \
  FILTER='h16-kv16-n(512|1024|2048|4096)-d128-(bf16|fp16)-full|h16-kv16-n512-d128-(bf16|fp16)-causal|h16-kv16-n(1024|2048)-d128-bf16-causal' \
  scripts/flashfwd_h200.sh "$OUTDIR" epi,pro stag
