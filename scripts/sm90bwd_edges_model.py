#!/usr/bin/env python3
"""The edges probe's model (session 21, docs/perf-notes.md, flash-sm90 backward, "Session 21: the block's edges").

FB_SM90_BWD128=edges takes two waits out of every d = 128 block's fixed cost (no GPU was used for this):
  tail  the wait for the last dQ bulk reduction's completion before the dK/dV epilogue (an L2 read-modify-write
        round trip of 16 KB a consumer, partly hidden behind the last dK GEMM): s_tail = 0.3-1.0 us a block;
  pf    the DRAM latency of the K/V load (64 KB) before a block's first S^T, for every block that another block
        prefetched into L2 (block b >= SMs): s_pf = 0.3-0.8 us a block.
One block an SM (226 KB of shared memory), so an SM runs ceil(blocks / SMs) blocks back to back on the critical path
(the last, partial wave included), the first of them without a prefetch. Gain = (blocks_sm * s_tail + (blocks_sm - 1)
* s_pf) / T, T = F20's median time of the row (results/h200/s20/final/); the pre-registered range takes 0.4-1.0 of
the modelled range's ends (the block-order and pipeline models of sessions 13-20 were delivered at 0.23-0.8).
"""
import math

SMS = 132
S_TAIL = (0.3, 1.0)
S_PF = (0.3, 0.8)
DELIVERED = 0.4

# row: (blocks, F20 median us of ours); new shape: time estimated from its FLOPs at 330 TFLOP/s (between F20's
# causal N = 1k 313 and 2k 391)
ROWS = {
    "b16-h16-kv16-n1024-d128-bf16-full-bwd": (256 * 8, 834.5),
    "b4-h16-kv16-n4096-d128-bf16-full-bwd": (64 * 32, 2705.2),
    "b16-h16-kv16-n1024-d128-bf16-causal-bwd": (256 * 8, 549.6),
    "b8-h16-kv16-n2048-d128-bf16-causal-bwd": (128 * 16, 878.4),
    "b32-h16-kv16-n512-d128-fp16-full-bwd": (512 * 4, 524.1),
    "b16-h16-kv16-n1024-d128-fp16-full-bwd": (256 * 8, 841.8),
    "b8-h16-kv16-n2048-d128-fp16-full-bwd": (128 * 16, 1505.1),
    "b4-h8-kv8-n4096-d128-bf16-full-bwd": (32 * 32, 1360.9),
    "b7-h24-kv24-n1200-d128-bf16-causal-bwd": (168 * 10, 2.5 * 2 * 7 * 24 * 1200 * 1200 * 128 / 330e6),
}


def gain(blocks, t_us, s_tail, s_pf):
    per_sm = math.ceil(blocks / SMS)
    return (per_sm * s_tail + (per_sm - 1) * s_pf) / t_us


if __name__ == "__main__":
    print(f"{'row':42} {'blocks':>6} {'/SM':>4} {'T us':>7} {'modelled':>13} {'pre-registered':>15}")
    for k, (blocks, t) in ROWS.items():
        lo = gain(blocks, t, S_TAIL[0], S_PF[0])
        hi = gain(blocks, t, S_TAIL[1], S_PF[1])
        print(f"{k:42} {blocks:6d} {math.ceil(blocks / SMS):4d} {t:7.1f} {1 + lo:6.3f}-{1 + hi:6.3f} "
              f"{1 + DELIVERED * lo:7.3f}-{1 + hi:6.3f}")
