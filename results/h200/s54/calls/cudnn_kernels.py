#!/usr/bin/env python3
"""Call R's probe of PyTorch's cuDNN SDPA in one process: which kernels it launches for one bf16 forward (no_grad,
as peers.py times it) and their times, then 20 reps timed as peers.py times them (L2 flush, events, a busy hold of
bf16 products before the reps), so that several processes can be set side by side.

    python3 cudnn_kernels.py BATCH HEADS SEQ HEAD_DIM
"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

b, h, n, d = (int(x) for x in sys.argv[1:5])
torch.manual_seed(42)
q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
c = torch.empty_like(a)


def fwd():
    with torch.no_grad(), sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        return F.scaled_dot_product_attention(q, k, v)


for _ in range(5):
    fwd()
torch.cuda.synchronize()
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
    for _ in range(5):
        flush.zero_()
        fwd()
    torch.cuda.synchronize()
kernels = {}
for e in prof.events():
    if e.device_type == torch.autograd.DeviceType.CUDA and "elementwise" not in e.name and "fill" not in e.name:
        kernels.setdefault(e.name, []).append(e.time_range.elapsed_us())
for name, us in kernels.items():
    print(f"kernel {name[:110]}  x{len(us)}  median {statistics.median(us):.1f} us")
t0 = time.perf_counter()
while time.perf_counter() - t0 < 0.1:
    for _ in range(4):
        flush.zero_()
        fwd()
    torch.cuda.synchronize()
for _ in range(40):  # the busy hold: ~7 ms of products before the reps
    torch.matmul(a, a, out=c)
ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(20)]
for s, e in ev:
    flush.zero_()
    s.record()
    fwd()
    e.record()
torch.cuda.synchronize()
ms = sorted(s.elapsed_time(e) for s, e in ev)
print(f"reps: median {statistics.median(ms):.4f} ms, min {ms[0]:.4f}, max {ms[-1]:.4f}")
