#!/usr/bin/env bash
# Session 58 (diagnostic, no rule): which kernel PyTorch's cuDNN attention (torch-cudnn) launches for the d = 64
# N = 512 forward (32 x 32 heads, bf16, non-causal and causal) and for d = 64 N = 1024 non-causal, and its launch
# figures (grid, block, registers, shared memory, cycles): one ncu profile of the third call of each.
set -uo pipefail
mkdir -p $OUT/U
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for c in "32 512 0" "32 512 1" "16 1024 0"; do
  set -- $c
  $ncu -f --clock-control none --launch-skip 2 --launch-count 1 -k regex:'fprop|sdpa|attn|fmha' \
    --section LaunchStats --section SpeedOfLight --section Occupancy -o $OUT/U/rep python3 - $1 $2 $3 <<'PY' \
    > $OUT/U/ncu-b$1-n$2-c$3.log 2>&1
import sys, torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
b, n, c = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
q, k, v = (torch.randn(b, 32, n, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(4):
        F.scaled_dot_product_attention(q, k, v, is_causal=c)
torch.cuda.synchronize()
PY
  $ncu -i $OUT/U/rep.ncu-rep --page details > $OUT/U/details-b$1-n$2-c$3.txt 2>&1
  rm -f $OUT/U/rep.ncu-rep
  grep -E "^  [a-z_].*\(|Grid Size|Block Size|Registers Per|Shared Memory Config|Dynamic Shared|Elapsed Cycles|Duration" \
    $OUT/U/details-b$1-n$2-c$3.txt | head -9
done
