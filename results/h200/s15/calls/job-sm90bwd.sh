#!/usr/bin/env bash
# Session 15, sm90bwd (issue 13; branch sm90bwd15, prepared in session 14 round 3, UNMEASURED): the flash-sm90
# 16-bit backward beside the in-binary cudnn, <= 65 s (the step limits add up to 65 s; ~45-50 s expected).
# Run with BUILD=<build dir> OUTDIR=<dir>. Words:
#   cvwave      FB_SM90_BWD128=cvwave: the dQ convert in the main kernel's last wave. Every main block lets the
#               convert launch as it starts (programmatic dependent launch) and counts its K/V plane done
#               (release) once its dQ reductions have completed; the convert's blocks take the SMs the last
#               wave leaves idle and each waits (acquire) for its plane's count. Every d = 128 pass without a
#               head split (non-causal and causal); head splits and other head dims run the default. At 16k
#               tokens every N has 2048 blocks (15.52 waves); the convert is ~50 us after the main kernel.
#   d64-cvwave  FB_SM90_BWD64=cvwave: the same at d = 64 (the persistent kernel counts each of its tiles after
#               waiting for that tile's reductions; the convert takes the SMs of the blocks that finish first).
#   splitflat   FB_SM90_BWD128=splitflat, the head split before session 14's flip (model's subsets, one plane
#               group): the A/B of the splitkt8 default on shapes call B did not time (8 / 1 causal N = 1k / 4k:
#               2 / 4 -> 8 subsets; 8 / 1 and 32 / 1 causal N = 16k: 8 subsets both, only the order differs).
#   1. GPU tests with FB_SM90_BWD_SPLIT=1 (no GQA/MQA shape split, so every test shape runs the counted convert,
#      group > 1 included): [bwd128] + GQA/MQA verification under FB_SM90_BWD128=cvwave (limit 8 s; session 14's
#      call B: 5 s), then [bwd64] under FB_SM90_BWD64=cvwave (6 s). A word whose tests fail (or hang: a missed
#      count) is not timed.
#   2. MHA at 16k tokens (model dim 2048: 16 heads at d = 128, 32 at d = 64), every row verified: d = 128 bf16
#      non-causal N = 512 / 1k / 4k and causal 1k; d = 64 bf16 non-causal 1k / 4k. Runs: default + cudnn (limit
#      9 s), cvwave, d64-cvwave, d64-cvwave, cvwave, default (5 s each; session 14's call B: 2-3 s for six d = 128
#      rows, 7 s with cudnn).
#   3. GQA/MQA causal bf16 d = 128, 16k tokens, every row verified: 8 q / 1 kv N = 1k / 4k / 16k, 32 / 1 N = 16k.
#      Runs: default + cudnn (7 s), splitflat, default (5 s each; the N = 16k rows take 2.6 and 10.4 ms a
#      backward).
# Tables last (OUTDIR/table.txt: both parts).
t0=$SECONDS
mkdir -p "$OUTDIR"
spec() {  # config, out, python dict of overrides (None removes a key)
  python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
s.update($3)
s = {k: v for k, v in s.items() if v is not None}
json.dump(s, open(sys.argv[2], 'w'), indent=1)" "$1" "$2"
}
# MHA keeps the config's model dim (heads = 2048 / d); GQA names its heads.
spec configs/sm90bwd-h200.json "$OUTDIR/spec-mha.json" \
  "name='sm90bwd-s15-mha', head_dim=[64, 128], dtype=['bf16', 'fp16'], causal=[False, True], seq=[512, 1024, 2048, 4096]"
spec configs/sm90bwd-h200.json "$OUTDIR/spec-gqa.json" \
  "name='sm90bwd-s15-gqa', model_dim=None, heads=[8, 32], kv_heads=[1], dtype=['bf16'], causal=[True], seq=[1024, 4096, 16384]"
mha_cases='n(512|1024|4096)-d128-bf16-full|n1024-d128-bf16-causal|n(1024|4096)-d64-bf16-full'
gqa_cases='h8-kv1-n(1024|4096|16384)-d128-bf16-causal|h32-kv1-n16384-d128-bf16-causal'
tests="$BUILD/tests/flashbench_gpu_tests"

variants=""
probe_tests() {  # name, limit (s), test filter, environment...
  local name=$1 limit=$2 filter=$3 t1=$SECONDS rc result
  shift 3
  timeout "$limit" env FB_SM90_BWD_SPLIT=1 "$@" "$tests" "$filter" >"$OUTDIR/tests-$name.log" 2>&1
  rc=$?
  result=$(grep -E 'test cases|passed|failed' "$OUTDIR/tests-$name.log" | tail -n 1)
  echo "tests-$name rc=$rc $((SECONDS - t1))s  $result" | tee "$OUTDIR/tests-$name.rc"
  if [ "$rc" -eq 0 ]; then variants="$variants $name"; else echo "$name: tests failed (rc=$rc), not timed" >&2; fi
}
probe_tests cvwave 8 "[bwd128],GQA/MQA: the flash-sm90 backward verifies*" FB_SM90_BWD128=cvwave
probe_tests d64-cvwave 6 "[bwd64]" FB_SM90_BWD64=cvwave

if [ -n "$variants" ]; then  # (an empty VARIANTS would run the script's default list)
  CONFIG="$OUTDIR/spec-mha.json" CASES="$mha_cases" VARIANTS="${variants# }" TEST_VARIANTS="" ROUNDS=2 \
    PEER_TIMEOUT=9 STEP_TIMEOUT=5 BUILD=$BUILD scripts/sm90bwd_h200.sh "$OUTDIR/mha" \
    >"$OUTDIR/mha-steps.log" 2>&1
  echo "part 2 (mha) rc=$? at $((SECONDS - t0)) s"
  grep -hE "rc=" "$OUTDIR/mha-steps.log"
else
  mkdir -p "$OUTDIR/mha"
  echo "no probe passed its tests: part 2 not run" | tee "$OUTDIR/mha/table.txt"
fi
CONFIG="$OUTDIR/spec-gqa.json" CASES="$gqa_cases" VARIANTS="splitflat" TEST_VARIANTS="" ROUNDS=1 \
  PEER_TIMEOUT=7 STEP_TIMEOUT=5 BUILD=$BUILD scripts/sm90bwd_h200.sh "$OUTDIR/gqa" \
  >"$OUTDIR/gqa-steps.log" 2>&1
echo "part 3 (gqa) rc=$? at $((SECONDS - t0)) s"
grep -hE "rc=" "$OUTDIR/gqa-steps.log"
{
  echo "== MHA, 16k tokens (16 heads at d = 128, 32 at d = 64): cvwave / d64-cvwave, the dQ convert in the last wave"
  cat "$OUTDIR/mha/table.txt"
  echo "== GQA/MQA causal bf16 d = 128, 16k tokens: the default (splitkt8's split, since session 14) against splitflat"
  cat "$OUTDIR/gqa/table.txt"
} >"$OUTDIR/table.txt"
cat "$OUTDIR/table.txt"
echo "job-sm90bwd: $((SECONDS - t0)) s"
