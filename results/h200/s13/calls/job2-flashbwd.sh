# Session 13 call B (round 2: data for session 14, no default changes; <= 40 s, BUDGET 38): the portable flash
# backward on MQA at d = 64, where flash's GQA head split still reduces dQ by rows (`split`, kDqRed2) and call A's
# causal 32/1 N = 16k row was 0.970x FlashAttention-2 with 8 or 16 subsets alike (the d = 64 MHA causal kernel,
# tiled dQ, is 1.054x there in the final sweep). The probe `splittile` (the split kernels with the tiled dQ
# accumulator at d = 64 too, as the d = 128 default since session 12; ptxas 20/20 B spill against `split`'s 8/8)
# against the default on the causal rows, beside FA2 (torch-flash, scripts/peers.py --backends flash on the same
# spec), interleaved: standard, splittile, FA2, splittile, standard. Rows: bf16, d = 64, 16k tokens, 8 and 32
# query heads on one K/V head; causal N 1k/4k/16k (the head split runs on all six: S = 2/2/8 and 2/4/8), plus the
# two non-causal N = 16k rows under the default only (no split there: the unsplit tiled kernel's MQA rate beside
# FA2, not measured since session 8's 0.95x). The GPU tests [flash_split] under splittile first (forced splits
# 1-32 incl. d = 64 shapes, verified); every timed row verified in each variant's first run.
mkdir -p "$OUTDIR" && spec=$(cd "$OUTDIR" && pwd)/spec-s13-d64.json
cat > "$spec" <<'JSON'
{
  "name": "flashbwd-s13-d64-mqa",
  "description": "Session 13 round 2 (flashbwd): MQA at d = 64, bf16, 16k tokens, verified; the default beside the probe splittile (tiled dQ under the head split) on the causal rows.",
  "seq": [1024, 4096, 16384],
  "tokens": 16384,
  "heads": [8, 32],
  "kv_heads": [1],
  "head_dim": [64],
  "dtype": ["bf16"],
  "causal": [false, true],
  "pass": ["bwd"],
  "kernels": ["flash"],
  "warmup": 3,
  "reps": 10,
  "seed": 42,
  "verify": true
}
JSON
SPEC=$spec ROWS='causal|n16384' PROBES="splittile:causal" TEST_PROBES="splittile:[flash_split]" VERIFY_VARIANTS= \
  VERIFY_DEFAULT=1 PAIRS=2 BUDGET=38 BUILD=$BUILD scripts/flashbwd_s12.sh "$OUTDIR"
# After call B (results/h200/s13/callB/r2-flashbwd/: splittile +7.9-9.1% on all six rows) the tiled split became
# the default at d = 64 too and the word `splittile` was removed: to rerun this A/B, use PROBES="splitrows:causal"
# (the row-major split kernels; r < 1 where the default is faster).
