#!/usr/bin/env bash
# Session 13 round 2 (the final call's second part: data for session 14), sm90bwd (issue 13; branch
# sm90bwd13), <= 40 s: two flash-sm90 d = 128 backward probes after call A, beside the default and the
# in-binary cudnn, two runs of each probe between two default runs (call A had one: its default runs differed
# by up to 7% on a row, 411 / 441 TFLOP/s at 8 heads causal N = 4096).
#   ktailr  the key-tail order restricted (grouped_key_tiles(), flash_sm90_bwd.cu) after call A's ktail:
#           +8.4% at 8 heads causal N = 4096 (T = 24 of 32 key tiles grouped, a tail of 1.9 device-fulls),
#           -9 / -10% at 8 / 16 heads N = 1024 (tails of 5.8 / 9.7 device-fulls: their planes' Q, dO and dQ
#           accumulator no longer fit in L2), -0.4 / -1.1% at 16 heads N = 2048 / 4096. Restricted: a tail of
#           at most 2 device-fulls, and only where the model gives >= 5% over the default order. Here 8
#           heads N = 1024 / 2048 / 4096 take T = 6 / 12 / 24 (modelled 1.106 -> 1.031, 1.121 -> 1.018,
#           1.129 -> 1.011 of the ideal), 16 heads N = 4096 keeps the default order (a control: the key-tail
#           kernel with T = all, expected level);
#   pdl     as in call A (level there: 0.998 / 1.007 / 0.981 at 16 heads N 512 / 8 heads N 1024 / 16 heads
#           N 1024, predicted +0.3..+1.2%): the non-causal kernels launched as programmatic dependents;
#           its kernels passed the tests in call A (under ktailpdl), so only ktailr is tested here.
# Each probe runs the default kernels on the other's rows (pdl on the causal ones, ktailr on the non-causal
# ones): more default-equivalent runs for the noise.
#   1. [bwd128] + GQA/MQA verification under ktailr (limit 6 s); if it fails, ktailr is not timed;
#   2. eight d = 128 rows, 16k tokens, every row verified: causal 8 heads N 1024 / 2048 / 4096 bf16 and 4096
#      fp16, causal 16 heads N 4096 bf16; non-causal bf16 16 heads N 512 / 1024, 8 heads N 1024: default +
#      cudnn (limit 10 s), ktailr, pdl, pdl, ktailr (4.5 s each), default again (4.5 s); ~26 s expected
#      (call A: 9 s for the first run of nine rows, 3 s for each other run, 4 s for the tests), 39 s at the
#      limits.
# Table last. Run with BUILD=<build dir> OUTDIR=<dir>.
t0=$SECONDS
mkdir -p "$OUTDIR"
python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
s.pop('model_dim', None)
s.update(name='sm90bwd-s13r2', heads=[8, 16], dtype=['bf16', 'fp16'], causal=[True, False], seq=[512, 1024, 2048, 4096])
json.dump(s, open(sys.argv[2], 'w'), indent=1)" configs/sm90bwd-h200.json "$OUTDIR/spec-s13r2.json"
causal='h8-kv8-n(1024|2048|4096)-d128-bf16-causal|h8-kv8-n4096-d128-fp16-causal|h16-kv16-n4096-d128-bf16-causal'
full='h16-kv16-n(512|1024)-d128-bf16-full|h8-kv8-n1024-d128-bf16-full'
CONFIG="$OUTDIR/spec-s13r2.json" CASES="$causal|$full" VARIANTS="ktailr pdl" TEST_VARIANTS="ktailr" ROUNDS=2 \
  PEER2=0 TEST_TIMEOUT=6 PEER_TIMEOUT=10 STEP_TIMEOUT=4.5 BUILD=$BUILD \
  scripts/sm90bwd_h200.sh "$OUTDIR" >"$OUTDIR/steps.log" 2>&1
echo "sm90bwd_h200.sh rc=$? at $((SECONDS - t0)) s"
grep -hE "rc=" "$OUTDIR/steps.log"
echo "== round 2: ktailr (causal rows), pdl (non-causal rows), 16k tokens"
cat "$OUTDIR/table.txt"
echo "job2-sm90bwd: $((SECONDS - t0)) s"
