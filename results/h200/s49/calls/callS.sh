#!/usr/bin/env bash
# Session 49, call S (one Hopper GPU; issue 13): the probe FB_SM90_BWD_PERSIST=dyngqa, the default with causal d = 64
# GQA passes without a head split in the dynamic tile order too (the order call Q's rule made the default for MHA
# passes only, results/h100/s49/Q/; GQA passes launched a block a tile keep session 36's plane groups by default).
# On the binaries of commit.txt: [sm90_dyn] as built and [bwd64] (its [sm90_dyn] too) under dyngqa, memcheck of a
# dyngqa GQA backward; `flashbench run --list` as built and under dyngqa (the workspace a head split adds names the rows split);
# three interleaved rounds of def / dyngqa on seven causal GQA d = 64 shapes no config names (groups 2-5, both 16-bit
# types, N 1024-8192) and two controls (an MHA causal pass, in the dynamic order under both; a non-causal GQA pass);
# torch-cudnn once on the rows, time allowing.
# Rule (docs/perf-notes.md, "Session 49", written before the call): dyngqa's order becomes the default for causal
# d = 64 GQA passes without a head split if the seven rows' geomean >= 1.02 with none below 0.98, each control reads
# 0.97-1.03 and their geomean 0.99-1.01, every row verified on both sides in every round, and the tests and memcheck
# pass. A row the model splits runs the same code under both sides and counts as drawn.
set -uo pipefail
export DEADLINE=${DEADLINE:-150}
source scripts/call_step.sh
call_begin $OUT/S; mkdir -p $R/ab $R/specs
python3 - $R/specs <<'PY'
import json, sys
def spec(name, b, h, kv, n, dtype, causal=True):
    json.dump({"name": name, "seq": [n], "batch": [b], "heads": [h], "kv_heads": [kv], "head_dim": [64],
               "dtype": [dtype], "causal": [causal], "pass": ["bwd"], "kernels": ["flash-sm90"], "warmup": 5,
               "reps": 10, "seed": 42, "verify": True}, open(f"{sys.argv[1]}/{name}.json", "w"), indent=2)
for b, h, kv, n, dt in [(4, 16, 8, 1536, "bf16"), (2, 32, 8, 2048, "bf16"), (8, 12, 4, 1024, "fp16"),
                        (1, 40, 8, 3300, "bf16"), (2, 24, 6, 4096, "bf16"), (3, 10, 5, 2600, "fp16"),
                        (1, 32, 8, 8192, "bf16")]:
    spec(f"dyngqa49-b{b}-h{h}-kv{kv}-n{n}-{dt}", b, h, kv, n, dt)
spec("dyngqa49ctl-mha-b4-h16-n1536", 4, 16, 16, 1536, "bf16")
spec("dyngqa49ctl-full-b2-h32-kv8-n2048", 2, 32, 8, 2048, "bf16", causal=False)
PY
step tests-dyn-built 40 $gt "[sm90_dyn]"
step tests-dyngqa 60 env FB_SM90_BWD_PERSIST=dyngqa $gt "[bwd64]"
for t in dyn-built dyngqa; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
step memcheck 30 env FB_SM90_BWD_PERSIST=dyngqa compute-sanitizer --tool memcheck --error-exitcode 9 $fb run \
  $R/specs/dyngqa49-b3-h10-kv5-n2600-fp16.json --warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/memcheck.json
tail -1 $R/memcheck.log
specs=$(cd $R/specs && ls *.json | sed 's/\.json$//' | tr '\n' ' ')
list_beside $R/specs "$specs" dyngqa FB_SM90_BWD_PERSIST=dyngqa $R/list.txt
smi_start
ab_rounds $R/ab $R/specs 3 "$specs" def=X=1 dyngqa=FB_SM90_BWD_PERSIST=dyngqa
smi_stop
python3 scripts/ab_rule.py $R/ab --spec-dir $R/specs --kernel flash-sm90 --base def --variant dyngqa --rounds 3 \
  --rows 'dyngqa49-*' --controls 'dyngqa49ctl-*' --min-geomean 1.02 --min-row 0.98 --control-band 0.97:1.03 \
  --controls-geomean-band 0.99:1.01 --json $R/rule.json > $R/rule.txt 2>&1
echo "rule-dyngqa rc=$?"; cut -c1-150 $R/rule.txt
peers_once $R/ab $R/specs "$(cd $R/specs && ls dyngqa49-*.json | sed 's/\.json$//' | tr '\n' ' ')" cudnn
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn def dyngqa > $R/table.txt 2>&1
cut -c1-160 $R/table.txt | head -14
call_end S
