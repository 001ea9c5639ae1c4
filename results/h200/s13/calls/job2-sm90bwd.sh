#!/usr/bin/env bash
# Session 13 round 2 (call B: measurement only, data for session 14), sm90bwd (issue 13; branch sm90bwd13),
# <= 40 s (budget 38): flash-sm90 d = 128 backward probes after call A, beside the default and the in-binary
# cudnn, every row verified.
# Part 1, ktailr, the key-tail order restricted (grouped_key_tiles(), flash_sm90_bwd.cu) after call A's
#   ktail: +8.4% at 8 heads causal N = 4096 (T = 24 of 32 key tiles grouped, a tail of 1.9 device-fulls),
#   -9 / -10% at 8 / 16 heads N = 1024 (tails of 5.8 / 9.7 device-fulls: their planes' Q, dO and dQ
#   accumulator no longer fit in L2), -0.4 / -1.1% at 16 heads N = 2048 / 4096. Restricted: a tail of at
#   most 2 device-fulls, and only where the model gives >= 5% over the default order: 8 heads N = 1024 /
#   2048 / 4096 take T = 6 / 12 / 24 (modelled 1.106 -> 1.031, 1.121 -> 1.018, 1.129 -> 1.011 of the ideal),
#   16 heads N = 4096 keeps the default order (a control: the key-tail kernel with T = all, expected level).
#   [bwd128] + GQA/MQA verification under ktailr (limit 6 s; if it fails, ktailr is not timed), then five
#   causal rows, 16k tokens: 8 heads N 1024 / 2048 / 4096 bf16 and 4096 fp16, 16 heads N 4096 bf16:
#   default + cudnn (8 s), ktailr, ktailr (3.5 s each), default again (3.5 s). Two probe runs between two
#   default runs: call A's default runs differed by up to 7% on one row (411 / 441 at 8 heads N = 4096).
# Part 2, if >= 18 s of the budget are left: the non-causal launches and the GQA/MQA head split, one run each
#   between two default runs (limits from what is left), four rows, 16k tokens, bf16:
#   pdl       non-causal 8 / 8 heads N 512 / 1024 (call A: level, 1.007 at 8 heads N = 1024; predicted
#             +0.3..+1.2%; its kernels passed the tests in call A under ktailpdl; causal rows: the default);
#   split2, split4, split8  FB_SM90_BWD_SPLIT=N, the head split forced (the launcher's model picks 4 for
#             32 q / 1 kv head causal N = 1024, the GQA row furthest behind torch-cudnn in the final sweep
#             F13a, 0.928x (0.988x the in-binary cudnn), and no split for 32 / 8 causal N = 4096, 0.985x;
#             split8 is no split there); MHA rows run the default.
# Tables last. Run with BUILD=<build dir> OUTDIR=<dir>.
t0=$SECONDS
budget=38
mkdir -p "$OUTDIR"
spec() {  # config, out, python dict of overrides
  python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
s.pop('model_dim', None)
s.update($3)
json.dump(s, open(sys.argv[2], 'w'), indent=1)" "$1" "$2"
}
spec configs/sm90bwd-h200.json "$OUTDIR/spec-s13r2.json" \
  "name='sm90bwd-s13r2', heads=[8, 16], dtype=['bf16', 'fp16'], causal=[True], seq=[1024, 2048, 4096]"
CONFIG="$OUTDIR/spec-s13r2.json" \
  CASES='h8-kv8-n(1024|2048|4096)-d128-bf16-causal|h8-kv8-n4096-d128-fp16-causal|h16-kv16-n4096-d128-bf16-causal' \
  VARIANTS="ktailr" TEST_VARIANTS="ktailr" ROUNDS=2 PEER2=0 TEST_TIMEOUT=6 PEER_TIMEOUT=8 STEP_TIMEOUT=3.5 \
  BUILD=$BUILD scripts/sm90bwd_h200.sh "$OUTDIR" >"$OUTDIR/steps.log" 2>&1
echo "part 1 (ktailr) rc=$? at $((SECONDS - t0)) s"
left=$((budget - (SECONDS - t0)))
if [ "$left" -ge 18 ]; then
  mkdir -p "$OUTDIR/gqa"
  spec configs/sm90bwd-h200.json "$OUTDIR/gqa/spec-s13r2gqa.json" \
    "name='sm90bwd-s13r2gqa', heads=[8, 32], kv_heads=[1, 8], dtype=['bf16'], causal=[True, False], seq=[512, 1024, 4096]"
  # Six steps: default-1 (with cudnn), pdl, split2, split4, split8, default-2.
  peer=$((left * 3 / 10))
  CONFIG="$OUTDIR/gqa/spec-s13r2gqa.json" \
    CASES='h8-kv8-n(512|1024)-d128-bf16-full|h32-kv1-n1024-d128-bf16-causal|h32-kv8-n4096-d128-bf16-causal' \
    VARIANTS="pdl split2 split4 split8" TEST_VARIANTS="" ROUNDS=1 PEER2=0 PEER_TIMEOUT=$peer \
    STEP_TIMEOUT=$(((left - 1 - peer) / 5)) BUILD=$BUILD scripts/sm90bwd_h200.sh "$OUTDIR/gqa" \
    >"$OUTDIR/gqa/steps.log" 2>&1
  echo "part 2 (pdl, forced head splits) rc=$? at $((SECONDS - t0)) s"
else
  echo "part 2 (pdl, forced head splits) skipped (${left} s left)"
fi
grep -hE "rc=" "$OUTDIR/steps.log" "$OUTDIR/gqa/steps.log" 2>/dev/null
[ -f "$OUTDIR/gqa/table.txt" ] && {
  echo "== round 2 part 2: pdl (non-causal rows), forced head splits (GQA/MQA rows), 16k tokens"
  cat "$OUTDIR/gqa/table.txt"
}
echo "== round 2 part 1: ktailr (causal rows), 16k tokens"
cat "$OUTDIR/table.txt"
echo "job2-sm90bwd: $((SECONDS - t0)) s"
