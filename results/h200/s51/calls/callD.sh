#!/usr/bin/env bash
# Session 51, call D (one Hopper GPU; issue 13): the probe FB_SM90_BWD_PERSIST=dynpg, session 49's dynshort (the causal
# d = 64 GQA passes without a head split whose longest key tile is under 32 query-tile steps in the dynamic tile
# order) with those passes in causal_group()'s plane group, the one a block-a-tile launch takes, not the L2 group.
# Why: this session's call T (results/h100/s51/T/) read dynshort 1.162-1.611x on seven of its eight rows and 0.953x on
# 8 x 12 q / 4 kv heads N = 1024 fp16 (rule not met). The list-scheduling model (3 steps a block) has the order in the
# L2 group (11 of 32 planes) at 45 steps against the static round-robin's 42 on that row, the last group's longest key
# tiles starting late; in causal_group()'s group (16) 33 (docs/perf-notes.md, "Session 51").
# On the binaries of commit.txt: [bwd64] under dynpg, memcheck; `run --list` both ways; three interleaved rounds of
# def / dynshort / dynpg on fourteen causal GQA d = 64 rows under 32 steps (call T's eight, and six shapes no config
# names drawn with seed 5151 before the call: batch 1-16, groups 2-8, N 300-3000, at least 132 key tiles) and call T's
# three controls; torch-cudnn once on the six drawn rows (call T has it on its eight).
# Rule (docs/perf-notes.md, "Session 51", written before the call): dynpg's order and group become the default for
# those GQA passes if the fourteen rows' geomean >= 1.02 with none below 0.98, the six drawn rows' geomean >= 1.02,
# each control 0.97-1.03 and their geomean 0.99-1.01, every row verified on both sides in every round, and the tests
# and memcheck pass. A row the model head-splits counts as drawn. dynshort's column is reported, no rule.
set -uo pipefail
export DEADLINE=${DEADLINE:-330}
source scripts/call_step.sh
call_begin $OUT/D; mkdir -p $R/ab $R/specs
python3 - $R/specs <<'PY'
import json, sys
def spec(name, b, h, kv, n, dtype, causal=True):
    json.dump({"name": name, "seq": [n], "batch": [b], "heads": [h], "kv_heads": [kv], "head_dim": [64],
               "dtype": [dtype], "causal": [causal], "pass": ["bwd"], "kernels": ["flash-sm90"], "warmup": 5,
               "reps": 10, "seed": 42, "verify": True}, open(f"{sys.argv[1]}/{name}.json", "w"), indent=2)
for b, h, kv, n, dt in [(4, 16, 8, 1536, "bf16"), (8, 12, 4, 1024, "fp16"), (16, 8, 4, 700, "bf16"),
                        (6, 20, 10, 1300, "fp16"), (2, 24, 8, 1200, "bf16"), (12, 16, 4, 512, "bf16"),
                        (5, 12, 6, 1800, "bf16"), (1, 32, 16, 1900, "fp16")]:
    spec(f"dynpg51-t-b{b}-h{h}-kv{kv}-n{n}-{dt}", b, h, kv, n, dt)
for b, h, kv, n, dt in [(8, 30, 6, 413, "bf16"), (16, 24, 8, 1150, "fp16"), (15, 40, 8, 620, "bf16"),
                        (12, 40, 10, 768, "fp16"), (12, 40, 10, 485, "bf16"), (6, 20, 10, 362, "fp16")]:
    spec(f"dynpg51-new-b{b}-h{h}-kv{kv}-n{n}-{dt}", b, h, kv, n, dt)
spec("dynpg51ctl-mha-b4-h16-n1536", 4, 16, 16, 1536, "bf16")
spec("dynpg51ctl-long-b2-h32-kv8-n2048", 2, 32, 8, 2048, "bf16")
spec("dynpg51ctl-full-b2-h32-kv8-n2048", 2, 32, 8, 2048, "bf16", causal=False)
PY
step tests-dynpg 60 env FB_SM90_BWD_PERSIST=dynpg $gt "[bwd64]"
step tests-dyn-default 30 $gt "[sm90_dyn]"
for t in dynpg dyn-default; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
step memcheck 30 env FB_SM90_BWD_PERSIST=dynpg compute-sanitizer --tool memcheck --error-exitcode 9 $fb run \
  $R/specs/dynpg51-t-b8-h12-kv4-n1024-fp16.json --warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q \
  -o $R/memcheck.json
tail -1 $R/memcheck.log
specs=$(cd $R/specs && ls *.json | sed 's/\.json$//' | tr '\n' ' ')
list_beside $R/specs "$specs" dynpg FB_SM90_BWD_PERSIST=dynpg $R/list.txt
smi_start
ab_rounds $R/ab $R/specs 3 "$specs" def=X=1 dynshort=FB_SM90_BWD_PERSIST=dynshort dynpg=FB_SM90_BWD_PERSIST=dynpg
smi_stop
python3 scripts/ab_rule.py $R/ab --spec-dir $R/specs --kernel flash-sm90 --base def --variant dynpg --rounds 3 \
  --rows 'dynpg51-*' --controls 'dynpg51ctl-*' --min-geomean 1.02 --min-row 0.98 --control-band 0.97:1.03 \
  --controls-geomean-band 0.99:1.01 --json $R/rule.json > $R/rule.txt 2>&1
echo "rule-dynpg rc=$?"; cut -c1-150 $R/rule.txt
python3 scripts/ab_rule.py $R/ab --spec-dir $R/specs --kernel flash-sm90 --base def --variant dynpg --rounds 3 \
  --rows 'dynpg51-new-*' --controls 'dynpg51ctl-*' --min-geomean 1.02 --min-row 0.98 --control-band 0.97:1.03 \
  --controls-geomean-band 0.99:1.01 --json $R/rule-new.json > $R/rule-new.txt 2>&1
echo "rule-dynpg-new rc=$?"; tail -4 $R/rule-new.txt | cut -c1-150
peers_once $R/ab $R/specs "$(cd $R/specs && ls dynpg51-new-*.json | sed 's/\.json$//' | tr '\n' ' ')" cudnn
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn def dynshort dynpg > $R/table.txt 2>&1
cut -c1-170 $R/table.txt | head -20
call_end D
