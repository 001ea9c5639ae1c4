# Session 14 call A, flashbwd (issue 13; ~50 s, BUDGET 58): the portable flash backward's GQA head split with up
# to 16 query-head subsets under the causal mask at d = 64 too (probe `cap16`; flash_bwd.cu max_head_split())
# against the default (16 at d = 128, 8 at d = 64), beside FlashAttention-2 (torch-flash, scripts/peers.py
# --backends flash on the same spec), interleaved: standard, cap16, FA2, cap16, standard, standard, cap16.
# Session 13's call A found 16 and 8 level at d = 64 (32/1 N = 16k, to 0.02%), but on the row-major split
# kernels (`split`); since call B the d = 64 split reduces dQ into the tiled accumulator (+7.9-9.1%), and this
# asks the question again on that kernel.
# Rows (the spec written below, all six timed): bf16, d = 64, causal, 16k tokens, one K/V head, 16/32/48 query
# heads at N = 8k (batch 2) and 16k (batch 1). The model's S, default / cap16: 16/1 8k 8 / 8 (control: cap16
# runs what the default runs, so its r:cap16 is the run's noise), 16/1 16k 8 / 16 (one head a unit), 32/1 8k
# and 16k 8 / 16, 48/1 8k and 16k 8 / 16 (3 heads a unit). Non-causal rows: the rule never changes them.
# Every timed row verified against the fp64 reference in each variant's first run.
# Checks: the GPU tests [flash_split] under cap16 (forced splits 1-32 at d = 64 and 128, verified; and the
# automatic split of causal 32/1 at 16k keys: 16 at d = 64 and 128 under cap16 on a 132-SM device, which
# proves the probe acts), and `flashbench verify --pass bwd` (both masks) under cap16 on three odd d = 64 MQA
# shapes whose causal split it changes: bf16 32/1 of 1025 keys (8 -> 16), fp16 40/1 of 1999 keys (8 -> 10: 4
# heads a unit), bf16 48/1 b2 of 1500 keys (8 -> 16: 3 heads a unit).
mkdir -p "$OUTDIR" && spec=$(cd "$OUTDIR" && pwd)/spec-s14.json
cat > "$spec" <<'JSON'
{
  "name": "flashbwd-s14-cap16-d64",
  "description": "Session 14 call A (flashbwd): causal MQA rows at d = 64 where the probe cap16 lets flash's GQA head split take 16 (or 16/1 N = 8k: the same split, control), bf16, 16k tokens, verified.",
  "seq": [8192, 16384],
  "tokens": 16384,
  "heads": [16, 32, 48],
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
SPEC=$spec ROWS= PROBES="cap16" TEST_PROBES="cap16:[flash_split]" VERIFY_VARIANTS="cap16" \
  VERIFY_SHAPES="--seq 1025 --heads 32 --kv-heads 1 --dim 64 --dtype bf16;--seq 1999 --heads 40 --kv-heads 1 --dim 64 --dtype fp16;--seq 1500 --batch 2 --heads 48 --kv-heads 1 --dim 64 --dtype bf16" \
  VERIFY_DEFAULT=1 PAIRS=3 BUDGET=58 BUILD=$BUILD scripts/flashbwd_s12.sh "$OUTDIR"
# Ship rule (session 14, after this call): cap16 becomes the d = 64 default (max_head_split(): the causal cap of
# 16 at both head dims; `cap16` removed, `cap8` then the old rule everywhere) only if r:cap16 >= 1.01 on at least
# two of the five changed rows, >= 0.995 on every changed row, and the control within 1.000 +- 0.005; else the
# word is removed and d = 64 keeps 8 (a second level result on the tiled split closes the question).
