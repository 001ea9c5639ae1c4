#!/usr/bin/env bash
# The issue-13 grids on the device: stops at once (exit 3) unless the GPU is an H200, so that a machine that
# comes as an H100 costs only its start. Then results/h200/s61/calls/callW.sh in one peers.py loop, reps interleaved
# (torch-cudnn, FlashAttention-2, flash-sm90 and flash; two rounds), over GRIDS (default "bf16 gqa"; "bf16 fp16 gqa"
# needs about 330 s). Usage, from the repository root with out/ packed (scripts/call_pack.sh):
#   GRIDS="bf16 fp16 gqa" DEADLINE=540 bash results/h200/s69/calls/h200_grids.sh
set -uo pipefail
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
echo "h200_grids: device '$gpu'"
[[ "$gpu" == *H200* ]] || { echo "h200_grids: not an H200, stopping"; exit 3; }
PEER=cudnn,flash OURS=flash_sm90,flash FB_LOOP=0 INTERLEAVE=1 GRIDS=${GRIDS:-"bf16 gqa"} \
  bash results/h200/s53/calls/chain.sh out "results/h200/s61/calls/callW.sh=${DEADLINE:-260}"
