#!/usr/bin/env bash
# Session 47, call M (one H200; issue 13): main's defaults as built (commit.txt) against PyTorch's SDPA, one round of
# each of issue 13's target grids, each flashbench sweep and its peers in turn: the papers' 16k-token grid in bf16 and
# fp16 (configs/issue13-h200.json, issue13-fp16-h200.json: flash, flash-sm90 and the in-binary cudnn, every row
# verified; torch-cudnn and torch-flash) and the GQA / MQA shapes of real models (configs/gqa-h200.json: 32 q heads on
# 8 or 1, 8 on 8 or 1, d = 128, N 1k / 4k / 16k). The README's tables were session 34's call C (two rounds); defaults
# changed since (sessions 35-47): this is what a user gets now. Backward and forward, both masks.
set -uo pipefail
export DEADLINE=${DEADLINE:-570}
source scripts/call_step.sh
call_begin $OUT/M
smi_start
step fb-bf16 125 $fb run configs/issue13-h200.json -q -o $R/fb-bf16.json
step peers-bf16 95 python3 scripts/peers.py configs/issue13-h200.json --backends flash,cudnn -o $R/peers-bf16.json
step fb-gqa 70 $fb run configs/gqa-h200.json -q -o $R/fb-gqa.json
step peers-gqa 70 python3 scripts/peers.py configs/gqa-h200.json --backends flash,cudnn -o $R/peers-gqa.json
step fb-fp16 125 $fb run configs/issue13-fp16-h200.json -q -o $R/fb-fp16.json
step peers-fp16 95 python3 scripts/peers.py configs/issue13-fp16-h200.json --backends flash,cudnn \
  -o $R/peers-fp16.json
smi_stop
pkill -9 -f build-dev/flashbench
for g in bf16 gqa fp16; do
  [ -f $R/fb-$g.json ] && [ -f $R/peers-$g.json ] || { echo "== $g: incomplete"; continue; }
  python3 scripts/ratios.py $R/fb-$g.json $R/peers-$g.json \
    --pair flash-sm90:torch-cudnn --pair flash:torch-flash > $R/ratios-$g.txt 2>&1
  echo "== $g"; grep -A10 "^summary" $R/ratios-$g.txt | cut -c1-160
done
call_end M
