#!/usr/bin/env bash
# Session 47, call M (one H200; issue 13): main's defaults as built (commit.txt) against PyTorch's SDPA, two rounds of
# each of issue 13's target grids, each flashbench sweep and its peers in turn: the papers' 16k-token grid in bf16 and
# fp16 (configs/issue13-h200.json, issue13-fp16-h200.json: flash, flash-sm90 and the in-binary cudnn, every row
# verified; torch-cudnn and torch-flash) and the GQA / MQA shapes of real models (configs/gqa-h200.json: 32 q heads on
# 8 or 1, 8 on 8 or 1, d = 128, N 1k / 4k / 16k). The README's tables were session 34's call C (two rounds); defaults
# changed since (sessions 35-47): this is what a user gets now. Backward and forward, both masks.
#   bash callM.sh [NAME=VALUE ...]: flashbench under those FB_* settings too (a setting call L's rule made the default,
#   on the machine L left warm, before a build with it could be carried; each record's settings.env names it).
set -uo pipefail
for a in "$@"; do
  case $a in FB_*=*) export "$a" ;; *) echo "callM.sh: '$a' is not FB_NAME=VALUE" >&2; exit 2 ;; esac
done
export DEADLINE=${DEADLINE:-570}
source scripts/call_step.sh
call_begin $OUT/M
echo "settings: ${*:-as built}" | tee $R/settings.txt
smi_start
for r in 1 2; do  # ~45 s a step in session 34's call C; a round that does not fit is skipped step by step
  step fb-bf16-$r 80 $fb run configs/issue13-h200.json -q -o $R/fb-bf16-$r.json
  step peers-bf16-$r 80 python3 scripts/peers.py configs/issue13-h200.json --backends flash,cudnn \
    -o $R/peers-bf16-$r.json
  step fb-gqa-$r 60 $fb run configs/gqa-h200.json -q -o $R/fb-gqa-$r.json
  step peers-gqa-$r 60 python3 scripts/peers.py configs/gqa-h200.json --backends flash,cudnn -o $R/peers-gqa-$r.json
  step fb-fp16-$r 80 $fb run configs/issue13-fp16-h200.json -q -o $R/fb-fp16-$r.json
  step peers-fp16-$r 80 python3 scripts/peers.py configs/issue13-fp16-h200.json --backends flash,cudnn \
    -o $R/peers-fp16-$r.json
done
smi_stop
pkill -9 -f build-dev/flashbench
for g in bf16 gqa fp16; do
  rounds=()
  for r in 1 2; do
    [ -f $R/fb-$g-$r.json ] && [ -f $R/peers-$g-$r.json ] && rounds+=(--round $R/fb-$g-$r.json $R/peers-$g-$r.json)
  done
  [ ${#rounds[@]} -gt 0 ] || { echo "== $g: no whole round"; continue; }
  python3 scripts/ratios.py "${rounds[@]}" --pair flash-sm90:torch-cudnn --pair flash:torch-flash \
    > $R/ratios-$g.txt 2>&1
  echo "== $g ($(( ${#rounds[@]} / 3 )) rounds)"; grep -A10 "^summary" $R/ratios-$g.txt | cut -c1-160
done
call_end M
