#!/usr/bin/env bash
# Session 49, call T (prepared for a later session; one Hopper GPU; issue 13): the probe FB_SM90_BWD_PERSIST=dynshort,
# the default with the causal d = 64 GQA passes that the launch model runs persistent (no head split, longest key
# tile under 32 query-tile steps: the static round-robin the dynamic order replaced for MHA) in the order too.
# Why: call S (results/h100/s49/S/) put the order on every causal GQA pass (dyngqa): the passes launched a block a tile
# in plane groups lost (0.777-0.886x), and of the two persistent ones one gained 1.311x (4 x 16 q / 8 kv heads
# N = 1536, where the default read 0.885x torch-cudnn) and one lost (8 x 12 / 4 N = 1024 fp16, 0.963x).
# On the binaries of commit.txt: [bwd64] under dynshort, memcheck; `run --list` both ways (a head split's workspace
# names rows split); three interleaved rounds of def / dynshort on eight causal GQA d = 64 rows under 32 steps (S's two
# persistent rows and six shapes no config names, groups 2-4, both 16-bit types) and three controls (an MHA causal
# pass, in the order under both; a GQA causal pass of 64 steps, launched a block a tile under both; a non-causal GQA
# pass); torch-cudnn once on the rows, time allowing.
# Rule (docs/perf-notes.md, "Session 49", written before the call): dynshort's order becomes the default for those GQA
# passes if the eight rows' geomean >= 1.02 with none below 0.98, each control reads 0.97-1.03 and their geomean
# 0.99-1.01, every row verified on both sides in every round, and the tests and memcheck pass. A row the model
# head-splits counts as drawn.
set -uo pipefail
export DEADLINE=${DEADLINE:-150}
source scripts/call_step.sh
call_begin $OUT/T; mkdir -p $R/ab $R/specs
python3 - $R/specs <<'PY'
import json, sys
def spec(name, b, h, kv, n, dtype, causal=True):
    json.dump({"name": name, "seq": [n], "batch": [b], "heads": [h], "kv_heads": [kv], "head_dim": [64],
               "dtype": [dtype], "causal": [causal], "pass": ["bwd"], "kernels": ["flash-sm90"], "warmup": 5,
               "reps": 10, "seed": 42, "verify": True}, open(f"{sys.argv[1]}/{name}.json", "w"), indent=2)
for b, h, kv, n, dt in [(4, 16, 8, 1536, "bf16"), (8, 12, 4, 1024, "fp16"), (16, 8, 4, 700, "bf16"),
                        (6, 20, 10, 1300, "fp16"), (2, 24, 8, 1200, "bf16"), (12, 16, 4, 512, "bf16"),
                        (5, 12, 6, 1800, "bf16"), (1, 32, 16, 1900, "fp16")]:
    spec(f"dynshort49-b{b}-h{h}-kv{kv}-n{n}-{dt}", b, h, kv, n, dt)
spec("dynshort49ctl-mha-b4-h16-n1536", 4, 16, 16, 1536, "bf16")
spec("dynshort49ctl-long-b2-h32-kv8-n2048", 2, 32, 8, 2048, "bf16")
spec("dynshort49ctl-full-b2-h32-kv8-n2048", 2, 32, 8, 2048, "bf16", causal=False)
PY
step tests-dynshort 60 env FB_SM90_BWD_PERSIST=dynshort $gt "[bwd64]"
for t in dynshort; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
step memcheck 30 env FB_SM90_BWD_PERSIST=dynshort compute-sanitizer --tool memcheck --error-exitcode 9 $fb run \
  $R/specs/dynshort49-b6-h20-kv10-n1300-fp16.json --warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q \
  -o $R/memcheck.json
tail -1 $R/memcheck.log
specs=$(cd $R/specs && ls *.json | sed 's/\.json$//' | tr '\n' ' ')
list_beside $R/specs "$specs" dynshort FB_SM90_BWD_PERSIST=dynshort $R/list.txt
smi_start
ab_rounds $R/ab $R/specs 3 "$specs" def=X=1 dynshort=FB_SM90_BWD_PERSIST=dynshort
smi_stop
python3 scripts/ab_rule.py $R/ab --spec-dir $R/specs --kernel flash-sm90 --base def --variant dynshort --rounds 3 \
  --rows 'dynshort49-*' --controls 'dynshort49ctl-*' --min-geomean 1.02 --min-row 0.98 --control-band 0.97:1.03 \
  --controls-geomean-band 0.99:1.01 --json $R/rule.json > $R/rule.txt 2>&1
echo "rule-dynshort rc=$?"; cut -c1-150 $R/rule.txt
peers_once $R/ab $R/specs "$(cd $R/specs && ls dynshort49-*.json | sed 's/\.json$//' | tr '\n' ' ')" cudnn
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn def dynshort > $R/table.txt 2>&1
cut -c1-160 $R/table.txt | head -14
call_end T
