# Call G's PyTorch side: four torch-cudnn forwards (SDPA, cuDNN backend) at batch 16, HEADS query heads on KV_HEADS
# K/V heads, N = 1024, d = 128, bf16, non-causal; ncu profiles the third.
#   python3 tcudnn_call.py HEADS KV_HEADS
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

h, kv = int(sys.argv[1]), int(sys.argv[2])
torch.manual_seed(42)
q = torch.randn(16, h, 1024, 128, device="cuda", dtype=torch.bfloat16)
k, v = (torch.randn(16, kv, 1024, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(4):
        F.scaled_dot_product_attention(q, k, v, enable_gqa=kv != h)
torch.cuda.synchronize()
