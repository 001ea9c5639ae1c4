#!/usr/bin/env bash
# Session 63, call A (one Hopper GPU; issue 13; no rule: every step must pass): every GPU test on the binaries of
# commit.txt, after the probe `wide` went in and out of the forward's launcher (the shipped kernels' sources are
# a1681ed's but for comments); the removed words refused (the case fails, its reason naming session 63); memcheck of
# a default d = 64 forward on a shape no config names.
set -uo pipefail
export DEADLINE=${DEADLINE:-300}
source scripts/call_step.sh
call_begin $OUT/A
step tests-all 240 $gt
echo "tests-all: $(grep -E 'passed|failed' $R/tests-all.log | tail -2 | tr '\n' ' ')"
python3 - $R/spec.json <<'PY'
import json, sys
json.dump({"name": "s63a", "seq": [1450], "batch": [3], "heads": [12], "kv_heads": [3], "head_dim": [64],
           "dtype": ["fp16"], "causal": [False, True], "pass": ["fwd"], "kernels": ["flash-sm90"], "warmup": 1,
           "reps": 1, "seed": 63, "verify": True}, open(sys.argv[1], "w"), indent=2)
PY
step memcheck 60 compute-sanitizer --tool memcheck --error-exitcode 9 $fb run $R/spec.json --warmup-time 0 \
  --no-ceilings -q -o $R/memcheck.json
tail -2 $R/memcheck.log
for w in wide192 wide256; do
  step refused-$w 20 env FB_SM90_FWD_PROBE=$w $fb run $R/spec.json --warmup-time 0 --no-ceilings -q \
    -o $R/refused-$w.json
  python3 -c 'import json, sys
print(sys.argv[2], [(r["status"], r["reason"][:90]) for r in json.load(open(sys.argv[1]))["results"]])' \
    $R/refused-$w.json $w
done
call_end A
