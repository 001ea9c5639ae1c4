#!/usr/bin/env bash
# Session 53, call Y (one Hopper GPU; issue 13): the probe br64 (FB_FLASH_FWD_PROBE=br64: the portable forward's
# non-causal d = 128 grids of less than one wave in 64 x 64 tiles, 4 warps of 16 query rows; kernels/flash/
# flash_fwd_config.h) under the rule written in docs/perf-notes.md, "Session 53", before the call. Call V
# (results/h100/s53/V/) found FlashAttention-2 running 64-query tiles in four splits of 512 keys where ours runs
# 128-query tiles in six to eight pieces. [flashfwd] under br64, memcheck of a br64 grid no config names (1 x 3 q / 1 kv
# heads N = 1500 fp16), `run --list` both ways, then three interleaved rounds def / br64 on call V's three grids, six
# drawn with seed 5353 before the call (batch 1-2, 1-4 kv heads, groups 1, 2 or 4, at most 8 q heads, N 600-4096,
# 8-263 blocks of 128 queries) and two controls the probe leaves as built (1 x 2 / 1 N = 2034 fp16 causal; 4 x 16 heads
# N = 4096 bf16 non-causal, 2048 blocks), and torch-flash once on the rows.
set -uo pipefail
export DEADLINE=${DEADLINE:-330}
source scripts/call_step.sh
call_begin $OUT/Y; mkdir -p $R/ab $R/specs
step tests-br64 90 env FB_FLASH_FWD_PROBE=br64 $gt "[flashfwd]"
echo "tests-br64: $(grep -E 'passed|failed' $R/tests-br64.log | tail -2 | tr '\n' ' ')"
python3 - $R/specs <<'PY'
import json, sys
d = sys.argv[1]
def spec(name, b, h, kv, n, dtype, causal):
    json.dump({"name": name, "seq": [n], "batch": [b], "heads": [h], "kv_heads": [kv], "head_dim": [128],
               "dtype": [dtype], "causal": [causal], "pass": ["fwd"], "kernels": ["flash"], "warmup": 5, "reps": 10,
               "seed": 42, "verify": True}, open(f"{d}/{name}.json", "w"), indent=2)
# call V's three grids (session 46's kvsub46-* shapes)
for b, h, kv, n, dt in [(2, 2, 1, 1343, "bf16"), (1, 2, 2, 1780, "bf16"), (1, 2, 1, 2034, "fp16")]:
    spec(f"br64v-b{b}-h{h}-kv{kv}-n{n}-{dt}", b, h, kv, n, dt, False)
# drawn with seed 5353 before the call
for b, h, kv, n, dt in [(2, 4, 4, 3647, "bf16"), (1, 2, 2, 3303, "fp16"), (1, 2, 1, 2604, "fp16"),
                        (2, 2, 2, 3834, "bf16"), (1, 4, 4, 697, "bf16"), (2, 4, 1, 2053, "fp16")]:
    spec(f"br64d-b{b}-h{h}-kv{kv}-n{n}-{dt}", b, h, kv, n, dt, False)
spec("br64ctl-causal-b1-h2-kv1-n2034-fp16", 1, 2, 1, 2034, "fp16", True)
spec("br64ctl-wide-b4-h16-n4096-bf16", 4, 16, 16, 4096, "bf16", False)
PY
python3 - $R/specs/br64d-b1-h2-kv1-n2604-fp16.json $R/memcheck-spec.json <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s.update({"name": "br64-memcheck", "heads": [3], "kv_heads": [1], "seq": [1500]})
json.dump(s, open(sys.argv[2], "w"), indent=2)
PY
step memcheck 40 env FB_FLASH_FWD_PROBE=br64 compute-sanitizer --tool memcheck --error-exitcode 9 $fb run \
  $R/memcheck-spec.json --warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/memcheck.json
tail -1 $R/memcheck.log
specs=$(cd $R/specs && ls *.json | sed 's/\.json$//' | tr '\n' ' ')
list_beside $R/specs "$specs" br64 FB_FLASH_FWD_PROBE=br64 $R/list.txt
cut -c1-200 $R/list.txt
smi_start
ab_rounds $R/ab $R/specs 3 "$specs" def=X=1 br64=FB_FLASH_FWD_PROBE=br64
smi_stop
python3 scripts/ab_rule.py $R/ab --spec-dir $R/specs --kernel flash --base def --variant br64 --rounds 3 \
  --rows 'br64[vd]-*' --controls 'br64ctl-*' --min-geomean 1.02 --min-row 0.98 --control-band 0.97:1.03 \
  --controls-geomean-band 0.99:1.01 --json $R/rule.json > $R/rule.txt 2>&1
echo "rule-br64 rc=$?"
cut -c1-150 $R/rule.txt
rows=$(cd $R/specs && ls br64[vd]-*.json | sed 's/\.json$//' | tr '\n' ' ')
[ "${PEERS:-1}" = 0 ] || peers_once $R/ab $R/specs "$rows" flash
python3 results/h200/s29/calls/ab_table.py $R/ab flash torch-flash def br64 > $R/table.txt 2>&1
cut -c1-150 $R/table.txt | head -16
call_end Y
