#!/usr/bin/env python3
"""Session 26: one shape through PyTorch's SDPA on the FlashAttention-2 backend, for ncu (a warm-up call, then one
timed call): torch_flash_one.py BATCH HEADS SEQ HEAD_DIM [causal]. bf16 forward, standard-normal Q, K, V, seed 2604."""
import sys
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

b, h, n, d = (int(x) for x in sys.argv[1:5])
causal = "causal" in sys.argv[5:]
g = torch.Generator(device="cuda").manual_seed(2604)
q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    for _ in range(2):
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
torch.cuda.synchronize()
print("ok", tuple(o.shape))
