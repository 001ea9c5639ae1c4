#!/usr/bin/env bash
# Session 50, call A (one Hopper GPU; issue 13; not run in session 50, no device lent): every GPU test on the binaries
# of commit.txt (HEAD when packed; session 49's commits 85e163a, 55ab811, 1e53bc8 changed host code of
# flash_sm90_bwd.cu and the tests and have not run on a GPU; session 50 changed no device or host code), before
# call T (results/h200/s49/calls/callT.sh) runs in the same device command: all GPU tests as built, [bwd64] under
# FB_SM90_BWD_PERSIST=nodyn, compute-sanitizer memcheck of a default causal d = 64 GQA backward (a shape no config
# names), `flashbench verify` on one shape no config names, and `FB_SM90_BWD_PERSIST=dyngqa` refused (the case fails,
# its reason naming call S).
# No rule: every step must pass.
set -uo pipefail
export DEADLINE=${DEADLINE:-280}
source scripts/call_step.sh
call_begin $OUT/A
step tests-all 220 $gt
step tests-bwd64-nodyn 60 env FB_SM90_BWD_PERSIST=nodyn $gt "[bwd64]"
for t in all bwd64-nodyn; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
python3 - $R/memcheck-spec.json <<'PY'
import json, sys
json.dump({"name": "s50a-memcheck", "seq": [1300], "batch": [3], "heads": [12], "kv_heads": [4], "head_dim": [64],
           "dtype": ["bf16"], "causal": [True], "pass": ["bwd"], "kernels": ["flash-sm90"], "warmup": 1, "reps": 1,
           "seed": 5, "verify": True}, open(sys.argv[1], "w"), indent=2)
PY
step memcheck 60 compute-sanitizer --tool memcheck --error-exitcode 9 $fb run $R/memcheck-spec.json \
  --warmup-time 0 --no-ceilings -q -o $R/memcheck.json
tail -2 $R/memcheck.log
step verify-fp16 40 $fb verify --seq 3100 --batch 2 --dim 64 --heads 10 --dtype fp16 --causal yes --pass bwd \
  -o $R/verify-fp16.json
tail -3 $R/verify-fp16.log
step refused-dyngqa 20 env FB_SM90_BWD_PERSIST=dyngqa $fb run $R/memcheck-spec.json --warmup-time 0 --no-ceilings \
  -q -o $R/refused.json
head -3 $R/refused-dyngqa.log; grep -o "'dyngqa'[^\"]*" $R/refused.json | head -1
call_end A
