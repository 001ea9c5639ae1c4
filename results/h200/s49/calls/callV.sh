#!/usr/bin/env bash
# Session 49, call V (prepared for a later session; one Hopper GPU; issue 13): why the portable `flash` forward still
# trails FlashAttention-2 on three grids of less than one wave after its pieces (kvsubwave3) became the default.
# Session 48's call N (results/h100/s48/N/fwd/table.txt, an H100): torch-flash / flash under the pieces 0.909x at
# 2 x 2 q / 1 kv heads N = 1343 (bf16), 0.830x at 1 x 2 / 2 N = 1780 (bf16), 0.814x at 1 x 2 / 1 N = 2034 (fp16),
# d = 128, non-causal; as built before, 0.408-0.627x. Those grids are 22-32 blocks of 128 queries; the pieces give each
# tile per_sm * SMs / tiles pieces of at least 5 K/V tiles (kv_tail_splits: 6 at N = 2034). Two questions, no rule:
# (1) does a different piece count help there: the three rows under the default, `kvsubwave` (pieces of 2 K/V tiles
# or more: more, shorter pieces) and `nokvsubwave` (whole), three interleaved rounds, torch-flash once; `run --list`
# under each (the workspace names the pieces' partials); (2) what FlashAttention-2 launches there: ncu of torch-flash
# (scripts/peers.py under ncu) and of ours on the N = 2034 row, every kernel's name, grid and time (FA2's split-KV
# kernel and its combine, if it splits, show in the names and grids).
set -uo pipefail
export DEADLINE=${DEADLINE:-200}
source scripts/call_step.sh
call_begin $OUT/V; mkdir -p $R/ab $R/specs
for s in kvsub46-b2-h2-kv1-n1343 kvsub46-b1-h2-kv2-n1780 kvsub46-b1-h2-kv1-n2034; do
  cp results/h200/s46/calls/$s.json $R/specs/
done
specs=$(cd $R/specs && ls *.json | sed 's/\.json$//' | tr '\n' ' ')
list_beside $R/specs "$specs" kvsubwave FB_FLASH_FWD_PROBE=kvsubwave $R/list-kvsubwave.txt
list_beside $R/specs "$specs" nokvsubwave FB_FLASH_FWD_PROBE=nokvsubwave $R/list-nokvsubwave.txt
cut -c1-200 $R/list-kvsubwave.txt
smi_start
ab_rounds $R/ab $R/specs 3 "$specs" def=X=1 kvsubwave=FB_FLASH_FWD_PROBE=kvsubwave \
  nokvsubwave=FB_FLASH_FWD_PROBE=nokvsubwave
smi_stop
peers_once $R/ab $R/specs "$specs" flash
python3 results/h200/s29/calls/ab_table.py $R/ab flash torch-flash def kvsubwave nokvsubwave > $R/table.txt 2>&1
cut -c1-160 $R/table.txt | head -10
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
python3 - $R/specs/kvsub46-b1-h2-kv1-n2034.json $R/ncu-spec.json <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s.update({"name": "ncu49v", "warmup": 0, "reps": 1, "verify": False})
json.dump(s, open(sys.argv[2], "w"), indent=2)
PY
m=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread
step ncu-torch-flash 60 $ncu --clock-control none --kernel-name regex:'flash|combine' --metrics $m --csv \
  python3 scripts/peers.py $R/ncu-spec.json --backends flash --no-launch-hold -o $R/ncu-torch-flash.json
step ncu-flash 40 $ncu --clock-control none --kernel-name regex:'flash|combine|kv_count' --metrics $m --csv \
  $fb run $R/ncu-spec.json --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/ncu-flash.json
for k in torch-flash flash; do
  echo "== ncu $k"
  grep -E '"(gpu__time_duration.sum|launch__grid_size)"' $R/ncu-$k.log | awk -F'","' '{print $5" | "$(NF-2)"="$NF}' \
    | tr -d '"' | cut -c1-160
done
call_end V
