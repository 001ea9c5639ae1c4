#!/usr/bin/env python3
"""Session 25: one shape through PyTorch's SDPA on the cuDNN backend, for ncu (a warm-up call, then one timed call):
   torch_cudnn_one.py BATCH HEADS SEQ HEAD_DIM [causal] [grad]. bf16, standard-normal Q, K, V, seed 2513."""
import sys
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

b, h, n, d = (int(x) for x in sys.argv[1:5])
causal, grad = "causal" in sys.argv[5:], "grad" in sys.argv[5:]
g = torch.Generator(device="cuda").manual_seed(2513)
q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16, generator=g).requires_grad_(grad)
           for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(2):
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
torch.cuda.synchronize()
print("ok", tuple(o.shape))
