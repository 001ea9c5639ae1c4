#!/usr/bin/env bash
# Session 13 call A, sm90bwd (issue 13; branch sm90bwd13): two flash-sm90 d = 128 backward probes that touch
# disjoint passes, timed together under one word (FB_SM90_BWD128=ktailpdl) beside the default and the
# in-binary cudnn, <= 65 s:
#   ktail  causal passes (prepared in session 12): key tiles [0, T) of every K/V plane in the default's plane
#          groups, then the rest over all planes, longest first (kBwd128KeyTail; T by the launcher's
#          list-scheduling model, grouped_key_tiles() in flash_sm90_bwd.cu): the default order starts the last
#          plane group's long blocks late (model: 1.13x the ideal at 8 heads N = 4096, the row furthest behind
#          torch-cudnn in session 12's final, 0.947x; 1.03x at 16 heads N = 2k/4k, 1.11x at 8 heads N = 1k);
#   pdl    non-causal passes (session 13): the default's kernels (kBwd128Pdl), the main kernel and the dQ
#          convert launched as programmatic dependents of the pre-pass and of the main kernel, so that their
#          launches and prologues (barrier init, tensormap prefetch, K/V loads) overlap the kernel before
#          them (s12's final: 0.972 / 0.967x torch-cudnn at N = 512 / 1024, 16 heads, 0.968 at 8 heads
#          N = 1024: the rows where the fixed pre-pass, convert and the gaps between the kernels weigh most).
# Head splits (GQA/MQA) run the default kernels under both. (klpt, ktail's order with T = 0, is built but
# not timed here; session 12's round 2, results/h200/s12/calls/next-sm90bwd.sh, ~25 s alone, waits for
# another call.)
#   1. [bwd128] + GQA/MQA verification under ktailpdl (its causal cases run ktail: the model runs the
#      2 x 16-head causal case as 7 grouped key tiles + 2 over all planes, both branches of the order; its
#      non-causal cases without a head split run pdl, 64 and 80 queries a step, both dtypes); if they fail,
#      the probes are not timed (limit 9 s);
#   2. nine d = 128 rows at 16k tokens, every row verified: causal 16 heads N 1024/2048/4096 bf16 and 4096
#      fp16 (0.985 / 1.012 / 1.057 / 0.977x torch-cudnn in s12's final), causal 8 heads N 1024 / 4096 bf16
#      (1.006 / 0.947x); non-causal bf16 16 heads N 512 / 1024, 8 heads N 1024: default + cudnn (limit
#      22 s), ktailpdl, default again (15 s each; ~48 s in all expected, 62 s at the limits).
# Table last (the causal rows compare ktail, the non-causal rows pdl). Run with BUILD=<build dir> OUTDIR=<dir>.
t0=$SECONDS
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
  "name='sm90bwd-s13', heads=[8, 16], dtype=['bf16', 'fp16'], causal=[True, False], seq=[512, 1024, 2048, 4096]"
causal='h16-kv16-n(1024|2048|4096)-d128-bf16-causal|h16-kv16-n4096-d128-fp16-causal|h8-kv8-n(1024|4096)-d128-bf16-causal'
full='h16-kv16-n(512|1024)-d128-bf16-full|h8-kv8-n1024-d128-bf16-full'
CONFIG="$OUTDIR/spec-s13.json" CASES="$causal|$full" VARIANTS="ktailpdl" TEST_VARIANTS="ktailpdl" ROUNDS=1 \
  PEER2=0 TEST_TIMEOUT=9 PEER_TIMEOUT=22 STEP_TIMEOUT=15 BUILD=$BUILD \
  scripts/sm90bwd_h200.sh "$OUTDIR" >"$OUTDIR/steps.log" 2>&1
echo "sm90bwd_h200.sh rc=$? at $((SECONDS - t0)) s"
grep -hE "rc=" "$OUTDIR/steps.log"
echo "== ktail (causal rows) and pdl (non-causal rows) under ktailpdl (16k tokens)"
cat "$OUTDIR/table.txt"
echo "job-sm90bwd: $((SECONDS - t0)) s"
