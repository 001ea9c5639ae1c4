#!/usr/bin/env bash
# Session 49, call R (one Hopper GPU; issue 13): the tests of the default call Q's rule made (the dynamic tile order
# for causal d = 64 MHA backward passes without a head split; results/h100/s49/Q/), on the binaries of commit.txt,
# before call M's grids run under it: every GPU test as built (the default), [bwd64] under FB_SM90_BWD_PERSIST=nodyn
# (the default before) and =dyn (the probe: GQA too), compute-sanitizer memcheck of a default dyn backward (a shape no
# config names) and of a nodyn one, and `flashbench verify` on two shapes no config names (MHA, causal, d = 64, both
# 16-bit types). No rule: every step must pass.
set -uo pipefail
export DEADLINE=${DEADLINE:-300}
source scripts/call_step.sh
call_begin $OUT/R
step tests-all 200 $gt
step tests-bwd64-nodyn 60 env FB_SM90_BWD_PERSIST=nodyn $gt "[bwd64]"
step tests-bwd64-dyn 60 env FB_SM90_BWD_PERSIST=dyn $gt "[bwd64]"
for t in all bwd64-nodyn bwd64-dyn; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
python3 - $R/memcheck-spec.json <<'PY'
import json, sys
json.dump({"name": "dyn49-memcheck", "seq": [1100], "batch": [3], "heads": 6, "head_dim": [64], "dtype": ["fp16"],
           "causal": [True], "pass": ["bwd"], "kernels": ["flash-sm90"], "warmup": 1, "reps": 1, "seed": 9,
           "verify": True}, open(sys.argv[1], "w"), indent=2)
PY
step memcheck 60 compute-sanitizer --tool memcheck --error-exitcode 9 $fb run $R/memcheck-spec.json \
  --warmup-time 0 --no-ceilings -q -o $R/memcheck.json
tail -2 $R/memcheck.log
step memcheck-nodyn 60 env FB_SM90_BWD_PERSIST=nodyn compute-sanitizer --tool memcheck --error-exitcode 9 $fb run \
  $R/memcheck-spec.json --warmup-time 0 --no-ceilings -q -o $R/memcheck-nodyn.json
tail -2 $R/memcheck-nodyn.log
step verify-bf16 60 $fb verify --seq 2900 --batch 2 --dim 64 --heads 12 --dtype bf16 --causal yes --pass bwd \
  -o $R/verify-bf16.json
step verify-fp16 60 $fb verify --seq 5300 --batch 1 --dim 64 --heads 10 --dtype fp16 --causal yes --pass bwd \
  -o $R/verify-fp16.json
tail -4 $R/verify-bf16.log $R/verify-fp16.log
call_end R
