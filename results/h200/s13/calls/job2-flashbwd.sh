# Session 13, round 2 for the final call (data for the next session; no default changes; ~30 s): the d = 64
# causal MQA rows, where flash's GQA head split still reduces dQ by rows (`split`, kDqRed2) and the call-A
# row 32/1 N = 16k is 0.970x FlashAttention-2 (the d = 64 MHA causal kernel, tiled dQ, is 1.054x there), with
# the probe `splittile` (the split kernels with the tiled dQ accumulator at d = 64 too; the d = 128 default
# since session 12) against the default, beside FA2 (torch-flash, peers.py on the same spec), interleaved.
# Rows: bf16, d = 64, causal, 16k tokens, 8 and 32 query heads on one K/V head, N 1k/4k/16k (the head split
# runs on all six). The GPU tests [flash_split] under splittile first; every timed row verified in each
# variant's first run.
mkdir -p "$OUTDIR" && spec=$(cd "$OUTDIR" && pwd)/spec-s13-d64.json
cat > "$spec" <<'JSON'
{
  "name": "flashbwd-s13-d64-mqa",
  "description": "Session 13 round 2 (flashbwd): causal MQA at d = 64 (the head split runs on every row), bf16, 16k tokens, verified; the default beside the probe splittile (tiled dQ under the split).",
  "seq": [1024, 4096, 16384],
  "tokens": 16384,
  "heads": [8, 32],
  "kv_heads": [1],
  "head_dim": [64],
  "dtype": ["bf16"],
  "causal": [true],
  "pass": ["bwd"],
  "kernels": ["flash"],
  "warmup": 3,
  "reps": 10,
  "seed": 42,
  "verify": true
}
JSON
SPEC=$spec PROBES="splittile" TEST_PROBES="splittile:[flash_split]" VERIFY_VARIANTS= VERIFY_DEFAULT=1 PAIRS=2 \
  BUDGET=35 BUILD=$BUILD scripts/flashbwd_s12.sh "$OUTDIR"
