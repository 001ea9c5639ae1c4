# Session 13 call A, flashbwd (issue 13; ~45 s): the portable flash backward's GQA head split with up to 16
# query-head subsets under the causal mask (flash_bwd.cu max_head_split(); the default on this branch)
# against the old cap of 8 (probe `cap8` = session 12's default), beside FlashAttention-2 (torch-flash,
# scripts/peers.py --backends flash on the same spec), interleaved: standard, cap8, FA2, cap8, standard.
# Rows (spec written below, ROWS picks six of its eight): bf16, causal, 16k tokens, one K/V head;
# d = 128: 32/1 N 4k (control: the model keeps 8) and 16k (8 -> 16), 48/1 N 4k and 16k (8 -> 16, 3 heads a
# unit); d = 64: 32/1 N 4k (control: 4) and 16k (8 -> 16). In the controls cap8 runs what the default
# runs, so their r:cap8 is the run's noise. Non-causal rows: the rule never changes them (the cap stays 8
# there), none timed. Every timed row verified against the fp64 reference in each variant's first run.
# Checks: the GPU tests [flash_split] and [flash_tail] under cap8 (the forced splits 1-32 run the same
# kernels under either cap; the final sweep runs every GPU test under the default), and `flashbench
# verify --pass bwd` (both masks) under the default on three odd MQA shapes whose causal split the rule
# changes: d = 128 bf16 32/1 of 1025 keys (8 -> 16), d = 128 fp16 40/1 of 1999 keys (8 -> 10: 4 heads a
# unit), d = 64 bf16 48/1 b2 of 1500 keys (8 -> 16: 3 heads a unit).
mkdir -p "$OUTDIR" && spec=$(cd "$OUTDIR" && pwd)/spec-s13.json
cat > "$spec" <<'JSON'
{
  "name": "flashbwd-s13-cap16",
  "description": "Session 13 call A (flashbwd): causal MQA rows where flash's GQA head split takes 16 subsets under the causal mask (or keeps its split: controls), bf16, d 64/128, 16k tokens, verified.",
  "seq": [4096, 16384],
  "tokens": 16384,
  "heads": [32, 48],
  "kv_heads": [1],
  "head_dim": [64, 128],
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
SPEC=$spec ROWS='d128|h32-kv1-n[0-9]+-d64' PROBES="cap8" TEST_PROBES="cap8:[flash_split],[flash_tail]" \
  VERIFY_VARIANTS="standard" \
  VERIFY_SHAPES="--seq 1025 --heads 32 --kv-heads 1 --dim 128 --dtype bf16;--seq 1999 --heads 40 --kv-heads 1 --dim 128 --dtype fp16;--seq 1500 --batch 2 --heads 48 --kv-heads 1 --dim 64 --dtype bf16" \
  VERIFY_DEFAULT=1 PAIRS=2 BUDGET=49 BUILD=$BUILD scripts/flashbwd_s12.sh "$OUTDIR"
# After call A (results/h200/s13/callA/flashbwd/): the cap of 16 ships at d = 128 only (d = 64 32/1 N = 16k was
# level with 8), so cap8 now differs from the default only on causal d = 128 rows.
