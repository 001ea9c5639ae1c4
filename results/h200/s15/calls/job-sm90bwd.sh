#!/usr/bin/env bash
# Session 15, sm90bwd (issue 13; branch sm90bwd15, prepared in session 14 round 3, UNMEASURED): the flash-sm90
# d = 128 backward beside the in-binary cudnn, <= 65 s (the step limits add up to 61 s; ~35-40 s expected).
# Run with BUILD=<build dir> OUTDIR=<dir>. Words (FB_SM90_BWD128 unless said):
#   cvwave    the dQ convert in the main kernel's last wave: every main block lets the convert launch as it
#             starts (programmatic dependent launch) and counts its K/V plane done (release) once its dQ
#             reductions have completed; the convert's blocks take the SMs the last wave leaves idle and each
#             waits (acquire) for its plane's count. Every d = 128 pass without a head split (non-causal and
#             causal); head splits run the default. At 16k tokens every N has 2048 blocks (15.52 waves).
#   grouped7  FB_SM90_BWD_GROUPED=7 (no new code): 16 heads causal N = 1k in the key-tail order with 7 of 8 key
#             tiles in plane groups (the model keeps all 8 grouped there: a tail of 1.94 device-fulls, modelled
#             gain under 5%); inert on non-causal rows.
#   splitflat the head split before session 14's flip (model's subsets, one plane group): the A/B of the
#             splitkt8 default on shapes call B did not time (8 / 1 causal N = 1k / 4k: 2 / 4 -> 8 subsets;
#             8 / 1 and 32 / 1 causal N = 16k: 8 subsets both, only the order differs).
#   1. [bwd128] + GQA/MQA verification under cvwave (every non-split test shape runs the counted convert),
#      limit 8 s.
#   2. MHA, 16 heads, 16k tokens, every row verified: bf16 non-causal N = 512 / 1k / 4k, fp16 non-causal 1k,
#      bf16 causal 1k / 4k. Runs: default + cudnn (limit 10 s), cvwave, grouped7, grouped7, cvwave, default
#      (4 s each; session 14's call B: 2-3 s for six such rows).
#   3. GQA/MQA causal bf16, 16k tokens, every row verified: 8 q / 1 kv N = 1k / 4k / 16k, 32 / 1 N = 16k. Runs:
#      default + cudnn (8 s), splitflat, splitflat, default (5 s each: two
#      N = 16k rows, 2.6 and 10.4 ms a backward, verified).
# Tables last (OUTDIR/table.txt: both parts).
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
spec configs/sm90bwd-h200.json "$OUTDIR/spec-mha.json" \
  "name='sm90bwd-s15-mha', heads=[16], kv_heads=[16], dtype=['bf16', 'fp16'], causal=[False, True], seq=[512, 1024, 4096]"
spec configs/sm90bwd-h200.json "$OUTDIR/spec-gqa.json" \
  "name='sm90bwd-s15-gqa', heads=[8, 32], kv_heads=[1], dtype=['bf16'], causal=[True], seq=[1024, 4096, 16384]"
mha_cases='h16-kv16-n(512|1024|4096)-d128-bf16-full|h16-kv16-n1024-d128-fp16-full|h16-kv16-n(1024|4096)-d128-bf16-causal'
gqa_cases='h8-kv1-n(1024|4096|16384)-d128-bf16-causal|h32-kv1-n16384-d128-bf16-causal'

CONFIG="$OUTDIR/spec-mha.json" CASES="$mha_cases" VARIANTS="cvwave grouped7" TEST_VARIANTS="cvwave" ROUNDS=2 \
  TEST_TIMEOUT=8 PEER_TIMEOUT=10 STEP_TIMEOUT=4 BUILD=$BUILD scripts/sm90bwd_h200.sh "$OUTDIR/mha" \
  >"$OUTDIR/mha-steps.log" 2>&1
echo "parts 1-2 (tests, mha) rc=$? at $((SECONDS - t0)) s"
grep -hE "rc=" "$OUTDIR/mha-steps.log"
CONFIG="$OUTDIR/spec-gqa.json" CASES="$gqa_cases" VARIANTS="splitflat" TEST_VARIANTS="" ROUNDS=2 \
  PEER_TIMEOUT=8 STEP_TIMEOUT=5 BUILD=$BUILD scripts/sm90bwd_h200.sh "$OUTDIR/gqa" \
  >"$OUTDIR/gqa-steps.log" 2>&1
echo "part 3 (gqa) rc=$? at $((SECONDS - t0)) s"
grep -hE "rc=" "$OUTDIR/gqa-steps.log"
{
  echo "== MHA, 16 heads, 16k tokens: cvwave (the dQ convert in the last wave), grouped7 (causal N = 1k key tail)"
  cat "$OUTDIR/mha/table.txt"
  echo "== GQA/MQA causal bf16, 16k tokens: the default (splitkt8's split, since session 14) against splitflat"
  cat "$OUTDIR/gqa/table.txt"
} >"$OUTDIR/table.txt"
cat "$OUTDIR/table.txt"
echo "job-sm90bwd: $((SECONDS - t0)) s"
