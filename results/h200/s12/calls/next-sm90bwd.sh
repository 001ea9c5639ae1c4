#!/usr/bin/env bash
# For the next session (round 2 of session 12 failed: its spec kept 16k tokens, which N = 2560 and 3072 do not divide;
# 30720 tokens divide by all three): the flash-sm90 d = 128 causal backward at the
# N the shipped q80 rule decides but call A did not measure (2048 keeps 64 queries; 2560, 3072 take 80):
# default vs q80c (80 everywhere) and q64 (64 everywhere), beside the in-binary cudnn, every row verified.
# <= 40 s. BUILD=<build dir> OUTDIR=<dir>.
mkdir -p "$OUTDIR"
python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
s.pop('model_dim', None)
s.update(name='sm90bwd-s12r2', tokens=30720, heads=[16], kv_heads=[16], dtype=['bf16'], causal=[True], seq=[2048, 2560, 3072])
json.dump(s, open(sys.argv[2], 'w'), indent=1)" configs/sm90bwd-h200.json "$OUTDIR/spec-r2.json"
CONFIG="$OUTDIR/spec-r2.json" CASES='h16-kv16-n(2048|2560|3072)-d128-bf16-causal' VARIANTS="q80c q64" TEST_VARIANTS= \
  ROUNDS=1 PEER2=0 STEP_TIMEOUT=9 BUILD=$BUILD scripts/sm90bwd_h200.sh "$OUTDIR" > "$OUTDIR/steps.log" 2>&1
grep -E "rc=" "$OUTDIR/steps.log"; cat "$OUTDIR/table.txt"
