#!/usr/bin/env bash
# Session 13 call A, sm90bwd (issue 13; prepared in session 12, branch sm90bwd13): the flash-sm90 d = 128
# backward's block order under a causal mask, beside the default and the in-binary cudnn, <= 65 s.
#   ktail  key tiles [0, T) of every K/V plane in the default's plane groups, then the rest over all planes,
#          longest first (kBwd128KeyTail; T by the launcher's list-scheduling model, grouped_key_tiles() in
#          flash_sm90_bwd.cu): the default order starts the last plane group's long blocks late (model:
#          1.13x the ideal at 8 heads N = 4096, the row furthest behind torch-cudnn in session 12's final,
#          0.947x; 1.03x at 16 heads N = 2k/4k, 1.11x at 8 heads N = 1k);
#   klpt   the same kernels with T = 0 (no plane groups: what the L2 grouping is worth on these rows).
# Non-causal passes and head splits run the default kernels under both words.
#   1. [bwd128] + GQA/MQA verification under ktail (its model runs the 2 x 16-head causal case as 7 grouped
#      key tiles + 2 over all planes: both branches of the order; klpt's order is the second alone, and its
#      timed rows are verified); if they fail, ktail is not timed;
#   2. six d = 128 causal rows, 16k tokens, every row verified: 16 heads N 1024/2048/4096 bf16 and 4096 fp16
#      (0.985 / 1.012 / 1.057 / 0.977x torch-cudnn in s12's final), 8 heads N 1024 / 4096 bf16 (1.006 /
#      0.947x): default + cudnn, ktail, klpt, default again (~40 s);
#   3. if >= 22 s are left: session 12's round 2 that did not run (results/h200/s12/calls/next-sm90bwd.sh,
#      the spec corrected to 30720 tokens): causal 16 heads N 2048 / 2560 / 3072 bf16, default + cudnn,
#      q80c (80 queries a step everywhere), q64 (64 everywhere), default again, into OUTDIR/r2 (the q80
#      rule's unmeasured rows: 2048 keeps 64, 2560 and 3072 take 80).
# Tables last. Run with BUILD=<build dir> OUTDIR=<dir>.
t0=$SECONDS
budget=63
mkdir -p "$OUTDIR"
spec() {  # config, out, python dict of overrides
  python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
s.pop('model_dim', None)
s.update($3)
json.dump(s, open(sys.argv[2], 'w'), indent=1)" "$1" "$2"
}
spec configs/sm90bwd-h200.json "$OUTDIR/spec-s13.json" \
  "name='sm90bwd-s13', heads=[8, 16], dtype=['bf16', 'fp16'], causal=[True], seq=[1024, 2048, 4096]"
CONFIG="$OUTDIR/spec-s13.json" \
  CASES='h16-kv16-n(1024|2048|4096)-d128-bf16-causal|h16-kv16-n4096-d128-fp16-causal|h8-kv8-n(1024|4096)-d128-bf16-causal|h32-kv8-n4096-d128-bf16-causal' \
  VARIANTS="ktail klpt" TEST_VARIANTS="ktail" ROUNDS=1 PEER2=0 STEP_TIMEOUT=14 BUILD=$BUILD \
  scripts/sm90bwd_h200.sh "$OUTDIR" >"$OUTDIR/steps.log" 2>&1
echo "part 1 rc=$? at $((SECONDS - t0)) s"
left=$((budget - (SECONDS - t0)))
if [ "$left" -ge 22 ]; then
  mkdir -p "$OUTDIR/r2"
  spec configs/sm90bwd-h200.json "$OUTDIR/r2/spec-r2.json" \
    "name='sm90bwd-s12r2', tokens=30720, heads=[16], kv_heads=[16], dtype=['bf16'], causal=[True], seq=[2048, 2560, 3072]"
  CONFIG="$OUTDIR/r2/spec-r2.json" CASES='h16-kv16-n(2048|2560|3072)-d128-bf16-causal' VARIANTS="q80c q64" \
    TEST_VARIANTS= ROUNDS=1 PEER2=0 STEP_TIMEOUT=$(((left - 1) / 4)) BUILD=$BUILD \
    scripts/sm90bwd_h200.sh "$OUTDIR/r2" >"$OUTDIR/r2/steps.log" 2>&1
  echo "part 2 (round 2) rc=$? at $((SECONDS - t0)) s"
else
  echo "part 2 (round 2) skipped (${left} s left)"
fi
grep -hE "rc=" "$OUTDIR/steps.log" "$OUTDIR/r2/steps.log" 2>/dev/null
[ -f "$OUTDIR/r2/table.txt" ] && { echo "== round 2 (30720 tokens): q80 rule"; cat "$OUTDIR/r2/table.txt"; }
echo "== key-tail order (16k tokens)"
cat "$OUTDIR/table.txt"
echo "job-sm90bwd: $((SECONDS - t0)) s"
