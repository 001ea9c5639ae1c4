#!/usr/bin/env bash
# Session 13 call A, sm90bwd (issue 13; branch sm90bwd13): two flash-sm90 d = 128 backward probes beside the
# default and the in-binary cudnn, <= 65 s: the block order under a causal mask (ktail, prepared in session
# 12) and the three kernels' launches without a causal mask (pdl, session 13).
#   ktail  key tiles [0, T) of every K/V plane in the default's plane groups, then the rest over all planes,
#          longest first (kBwd128KeyTail; T by the launcher's list-scheduling model, grouped_key_tiles() in
#          flash_sm90_bwd.cu): the default order starts the last plane group's long blocks late (model:
#          1.13x the ideal at 8 heads N = 4096, the row furthest behind torch-cudnn in session 12's final,
#          0.947x; 1.03x at 16 heads N = 2k/4k, 1.11x at 8 heads N = 1k);
#   pdl    non-causal passes on the default's kernels (kBwd128Pdl), the main kernel and the dQ convert
#          launched as programmatic dependents of the pre-pass and of the main kernel: their launches and
#          prologues (barrier init, tensormap prefetch, K/V loads) overlap the kernel before them (s12's
#          final: 0.972 / 0.967 / 0.990x torch-cudnn at N = 512 / 1024 / 2048, 16 heads, the rows where the
#          fixed pre-pass, convert and the gaps between the kernels weigh most).
# Causal passes and head splits run the default kernels under pdl; non-causal passes and head splits under
# ktail. (klpt, ktail's order with T = 0, is built and tested with ktail's tests but not timed here: pdl
# took its time.)
#   1. [bwd128] + GQA/MQA verification under ktail (its model runs the 2 x 16-head causal case as 7
#      grouped key tiles + 2 over all planes: both branches of the order); if they fail, ktail is not timed;
#      six d = 128 causal rows, 16k tokens, every row verified: 16 heads N 1024/2048/4096 bf16 and 4096 fp16
#      (0.985 / 1.012 / 1.057 / 0.977x torch-cudnn in s12's final), 8 heads N 1024 / 4096 bf16 (1.006 /
#      0.947x): default + cudnn, ktail, default again (~32 s);
#   2. into OUTDIR/pdl, if >= 16 s are left: [bwd128] + GQA/MQA verification under pdl (its non-causal
#      cases run the pdl kernels, 64 and 80 queries a step, both dtypes); if they fail, pdl is not timed;
#      four non-causal bf16 rows, 16k tokens, every row verified: 16 heads N 512 / 1024 / 2048, 8 heads
#      N 1024: default + cudnn, pdl, pdl again if >= 30 s are left (else once), default again (~20-25 s).
#   (Session 12's round 2, results/h200/s12/calls/next-sm90bwd.sh, ~25 s alone, is left for another call.)
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
  CASES='h16-kv16-n(1024|2048|4096)-d128-bf16-causal|h16-kv16-n4096-d128-fp16-causal|h8-kv8-n(1024|4096)-d128-bf16-causal' \
  VARIANTS="ktail" TEST_VARIANTS="ktail" ROUNDS=1 PEER2=0 STEP_TIMEOUT=14 BUILD=$BUILD \
  scripts/sm90bwd_h200.sh "$OUTDIR" >"$OUTDIR/steps.log" 2>&1
echo "part 1 rc=$? at $((SECONDS - t0)) s"
left=$((budget - (SECONDS - t0)))
if [ "$left" -ge 16 ]; then
  rounds=1
  [ "$left" -ge 30 ] && rounds=2
  mkdir -p "$OUTDIR/pdl"
  spec configs/sm90bwd-h200.json "$OUTDIR/pdl/spec-pdl.json" \
    "name='sm90bwd-s13pdl', heads=[8, 16], dtype=['bf16'], causal=[False], seq=[512, 1024, 2048]"
  # Steps: the pdl tests, default-1 (with cudnn), pdl once per round, default-2.
  CONFIG="$OUTDIR/pdl/spec-pdl.json" \
    CASES='h16-kv16-n(512|1024|2048)-d128-bf16-full|h8-kv8-n1024-d128-bf16-full' \
    VARIANTS="pdl" TEST_VARIANTS="pdl" ROUNDS=$rounds PEER2=0 STEP_TIMEOUT=$(((left - 1) / (rounds + 3))) \
    BUILD=$BUILD scripts/sm90bwd_h200.sh "$OUTDIR/pdl" >"$OUTDIR/pdl/steps.log" 2>&1
  echo "part 2 (pdl, $rounds round(s)) rc=$? at $((SECONDS - t0)) s"
else
  echo "part 2 (pdl) skipped (${left} s left)"
fi
grep -hE "rc=" "$OUTDIR/steps.log" "$OUTDIR/pdl/steps.log" 2>/dev/null
[ -f "$OUTDIR/pdl/table.txt" ] && { echo "== pdl: programmatic dependent launches, non-causal (16k tokens)"; cat "$OUTDIR/pdl/table.txt"; }
echo "== key-tail order (16k tokens)"
cat "$OUTDIR/table.txt"
echo "job-sm90bwd: $((SECONDS - t0)) s"
