#!/usr/bin/env python3
"""Call R2's probe: does where the inputs lie in memory move PyTorch's cuDNN SDPA forward's time? One process, TRIALS
placements: each trial frees the last inputs, allocates a pad of a different size, then fresh Q, K, V (bf16, B x H x N
x d) and times 20 reps as peers.py does (L2 flush, events, a busy hold of bf16 products before them).

    python3 placement.py BATCH HEADS SEQ HEAD_DIM [TRIALS]
"""
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

b, h, n, d = (int(x) for x in sys.argv[1:5])
trials = int(sys.argv[5]) if len(sys.argv) > 5 else 8
flush_buf = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
clean_buf = torch.ones(flush_buf.numel() // 4, dtype=torch.float32, device="cuda")
FLUSH = os.environ.get("FLUSH", "write")  # write: zero_ (peers.py's flush); read: zero_, then a read of as many bytes


class Flush:
    def zero_(self):
        flush_buf.zero_()
        if FLUSH == "read":  # the L2 then holds clean lines of clean_buf, not the zeros' dirty ones
            clean_buf.sum()


flush = Flush()
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
c = torch.empty_like(a)
pads = []
for trial in range(trials):
    # 3, 10, 17, ... MiB; PAD_FIXED=1: 3 MiB every trial (the same step each time: a drift, not a placement)
    pads.append(torch.empty(((0 if os.environ.get("PAD_FIXED") == "1" else trial * 7) + 3) << 20, dtype=torch.uint8,
                            device="cuda"))
    torch.manual_seed(42)
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))

    calls = [0]

    def fwd():
        calls[0] += 1
        with torch.no_grad(), sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            return F.scaled_dot_product_attention(q, k, v)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.1:
        for _ in range(4):
            flush.zero_()
            fwd()
        torch.cuda.synchronize()
    for _ in range(40):
        torch.matmul(a, a, out=c)
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(20)]
    for s, e in ev:
        flush.zero_()
        s.record()
        o = fwd()
        e.record()
    torch.cuda.synchronize()
    ms = sorted(s.elapsed_time(e) for s, e in ev)
    print(f"trial {trial}: median {statistics.median(ms):.4f} ms min {ms[0]:.4f} max {ms[-1]:.4f}  "
          f"q {q.data_ptr() % (1 << 30):#x} k {k.data_ptr() % (1 << 30):#x} v {v.data_ptr() % (1 << 30):#x} "
          f"o {o.data_ptr() % (1 << 30):#x} calls {calls[0]}", flush=True)
    del q, k, v, o
