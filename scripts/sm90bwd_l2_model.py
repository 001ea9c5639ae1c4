#!/usr/bin/env python3
"""A trace model of the flash-sm90 d = 128 backward's DRAM bytes per launch of its main kernel, for the block order
(session 18, docs/perf-notes.md, flash-sm90 backward, "Session 18": the plane-major order, probe `pmajor`, the default
since call B; FB_SM90_BWD128=nopmajor runs the order before it, `default` below).

What ncu measures (caches flushed before the kernel; dirty lines left in L2 at its end are not written in the window)
is modelled as: blocks dispatched in launch order to the SM that frees first (132 SMs; a block's time is its steps plus
1.5 steps of overhead, times 1 + N(0, sigma)); a block loads its K / V tile, then per step reads its plane's Q, dO,
LSE and D tile and reduces into the plane's dQ-accumulator tile (fp32), and stores dK / dV at its end. L2 is one LRU
of C bytes over whole tiles (C is the effective capacity: the two halves of the H200's 50 MB and their copies of far
lines folded into one number). A miss on a read or a reduction reads the tile from DRAM; evicting a dirty tile (a
reduced accumulator tile, dK / dV) writes it. Orders: `default` (bwd_work(): plane groups of plane_group() planes, key
tiles outermost; non-causal kernels, 80 queries a step where flash_sm90_bwd.cu's q80_kernel() takes them) and
`pmajor` (plane_group = 1: a plane's key tiles on consecutive blocks). `--causal`: 64-query steps from each key tile's
first visible query tile (the default's order at 16 heads keeps every key tile grouped), with the makespan against
the ideal. `--d64`: the d = 64 kernel (session 18's prepared probe `pmajor64`, FB_SM90_BWD64=pmajor64): 128 queries a
step, and persistent: min(tiles, 132) blocks, block b taking work tiles b, b + 132, ... one after the other (a static
round-robin, each block's jitter carried from tile to tile), 0.5 steps of overhead a tile (the next tile's K / V load
and the dK / dV stores overlap the steps). No GPU; pure Python, ~10 s for the default table.

  python3 scripts/sm90bwd_l2_model.py [--causal | --d64]
"""
import argparse
import heapq
import random
from collections import OrderedDict

SMS = 132
L2_BYTES = 52428800  # cudaDevAttrL2CacheSize on an H200 (as l2_plane_group() reads it)


def plane_group(seq, d, heads_per_block, planes):  # flash_sm90_bwd.cu plane_group(), common/device_caps.h
    return max(1, min(planes, (L2_BYTES // 3) // (seq * d * heads_per_block * 8)))


def simulate(batch, heads, seq, order, cap, sigma=0.05, d=128, causal=False, seed=1):
    rnd = random.Random(seed)
    planes = batch * heads
    persistent = d == 64 and not causal  # bwd_blocks(): the d = 64 kernel, non-causal passes
    overhead = 0.5 if persistent else 1.5
    if d == 64:
        bm = 128  # BwdTraits<*, 64>::kBlockM (kSplitDqRows)
    elif causal:
        bm = 64
    else:
        bm = 80 if (seq + 79) // 80 * 80 <= 1.03 * ((seq + 63) // 64 * 64) else 64
    q_tiles = (seq + bm - 1) // bm
    key_tiles = (seq + 127) // 128
    pg = plane_group(seq, d, 1, planes) if order == "default" else 1
    tiles = []
    for t in range(planes * key_tiles):  # bwd_work()
        grp, within = divmod(t, pg * key_tiles)
        here = min(pg, planes - grp * pg)
        tiles.append((grp * pg + within % here, within // here))
    free = [(0.0, s) for s in range(SMS)]
    heapq.heapify(free)
    nblocks = min(len(tiles), SMS)
    block_free = [0.0] * nblocks  # persistent: block b's clock
    events, work = [], 0.0
    qb, dqb, vecb, kvb = bm * d * 2, bm * d * 4, bm * 8, 128 * d * 4
    for t, (plane, j) in enumerate(tiles):
        if persistent:  # tile t on block t % nblocks, after that block's previous tile
            sm = t % nblocks
            t0 = block_free[sm]
        else:
            t0, sm = heapq.heappop(free)
        dt = 1 + rnd.gauss(0, sigma)
        m0 = min(q_tiles - 1, j * 128 // bm) if causal else 0
        steps = q_tiles - m0
        work += steps + overhead
        events.append((t0, 0, ("kv", plane, j), kvb, "r"))
        for k in range(steps):
            ts = t0 + (0.75 + k) * dt
            for name, nb in (("q", qb), ("do", qb), ("vec", vecb)):
                events.append((ts, 1, (name, plane, m0 + k), nb, "r"))
            events.append((ts + 0.7 * dt, 2, ("dq", plane, m0 + k), dqb, "red"))
        t1 = t0 + (steps + overhead) * dt
        events.append((t1, 3, ("dkv", plane, j), kvb, "w"))
        if persistent:
            block_free[sm] = t1
        else:
            heapq.heappush(free, (t1, sm))
    events.sort(key=lambda e: (e[0], e[1]))
    lru, used, rd, wr = OrderedDict(), 0, 0, 0
    for _, _, key, nb, op in events:
        if key in lru:
            size, dirty = lru.pop(key)
            lru[key] = (size, dirty or op != "r")
            continue
        if op != "w":
            rd += nb
        lru[key] = (nb, op != "r")
        used += nb
        while used > cap:
            _, (size, dirty) = lru.popitem(last=False)
            used -= size
            wr += size if dirty else 0
    makespan = max(block_free) if persistent else max(t for t, _ in free)
    return rd / 1e6, wr / 1e6, makespan / (work / SMS), pg


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--d64", action="store_true", help="the d = 64 kernel, 32 heads (pmajor64)")
    args = ap.parse_args()
    d = 64 if args.d64 else 128
    if args.d64:
        shapes = [(8, 32, 2048)] if args.causal else [(32, 32, 512), (16, 32, 1024), (8, 32, 2048), (5, 40, 1300)]
    else:
        shapes = [(8, 16, 2048)] if args.causal else [(32, 16, 512), (16, 16, 1024), (8, 16, 2048), (5, 20, 1300)]
    print(f"d = {d}: MB read / written per launch (default -> pmajor{'64' if args.d64 else ''}), makespan / ideal; "
          "C = effective L2, sigma = block jitter")
    for b, h, n in shapes:
        for cap in (25e6, 30e6, 35e6):
            for sigma in (0.03, 0.05):
                a = simulate(b, h, n, "default", cap, sigma, d=d, causal=args.causal)
                p = simulate(b, h, n, "pmajor", cap, sigma, d=d, causal=args.causal)
                print(f"b{b} h{h} N={n:5d} {'causal' if args.causal else 'full  '} plane_group {a[3]:3d}  C {cap / 1e6:.0f} MB"
                      f" sigma {sigma:.2f}: default {a[0]:4.0f} / {a[1]:4.0f} (x{a[2]:.3f})  pmajor {p[0]:4.0f} / "
                      f"{p[1]:4.0f} (x{p[2]:.3f})")


if __name__ == "__main__":
    main()
