#!/usr/bin/env python3
"""Session 51: the schedule model's reading of flash-sm90's short causal d = 64 GQA backward passes (calls T and D).

The model is the launcher's (kernels/common/head_split.h): a block of key tile j costs its query-tile steps (128-query
steps that see the tile, times the group's query heads) plus 3; plane_group_makespan() places blocks greedily in launch
order (plane groups of G planes, key tiles outermost within a group) on 132 SMs, which is what the dynamic tile order
and a block-a-tile launch do; causal_plane_group() picks G (the smallest within 2% of the fastest, from the L2 group up
to two device-fulls of blocks); the L2 group is l2_plane_group() (a third of L2 over each plane's Q, dO and fp32 dQ rows).
The static round-robin is the persistent kernel before: tile t on block t mod min(tiles, 132), in the L2 group's order.
This script mirrors those functions (tests/test_head_split.cpp pins the C++ side's numbers for the 8 x 12 / 4 N = 1024
row) and prints, for each row, the three makespans in steps and their ratios: static / dyn-in-L2-group (dynshort) and
static / dyn-in-causal_group (dynpg). No memory term: it overstates every gain (calls T and D measured them).

    python3 order_model.py [--l2-mib 50] [--json model.json] [--sweep N]

--sweep N: also N random shapes (seed 1: batch 1-32, 1-16 K/V heads, groups 2-16, N 128-4000), those under 32 steps a
key tile kept: how many the model has dynpg slower than the static round-robin, the fewest and the geomean.
"""
import argparse
import heapq
import json
import math
import random

SMS = 132
OVERHEAD = 3.0
ROWS = {  # name: (batch, q heads, kv heads, N); call T's eight, then call D's six drawn with seed 5151
    "T": [(4, 16, 8, 1536), (8, 12, 4, 1024), (16, 8, 4, 700), (6, 20, 10, 1300), (2, 24, 8, 1200), (12, 16, 4, 512),
          (5, 12, 6, 1800), (1, 32, 16, 1900)],
    "D-drawn": [(8, 30, 6, 413), (16, 24, 8, 1150), (15, 40, 8, 620), (12, 40, 10, 768), (12, 40, 10, 485),
                (6, 20, 10, 362)],
}


def key_tile_costs(n, group, block=128):
    tiles = (n + block - 1) // block
    return [(tiles - j) * group + OVERHEAD for j in range(tiles)]


def order(costs, planes, group):
    for first in range(0, planes, group):
        for c in costs:
            for _ in range(min(group, planes - first)):
                yield c


def greedy(costs, planes, group):
    free = [0.0] * SMS
    end = 0.0
    for c in order(costs, planes, group):
        t = heapq.heappop(free) + c
        heapq.heappush(free, t)
        end = max(end, t)
    return end


def round_robin(costs, planes, group):
    tiles = list(order(costs, planes, group))
    blocks = min(len(tiles), SMS)
    busy = [0.0] * blocks
    for i, c in enumerate(tiles):
        busy[i % blocks] += c
    return max(busy)


def l2_group(l2, n, group, planes):
    return max(1, min(planes, l2 // 3 // (n * 64 * group * 8)))


def causal_plane_group(costs, planes, l2g, near_best=0.02, waves=2.0):
    most = max(l2g, min(planes, int(waves * SMS) // len(costs)))
    times = [(g, greedy(costs, planes, g)) for g in range(l2g, most + 1)]
    fastest = min(t for _, t in times)
    return next(g for g, t in times if t <= (1.0 + near_best) * fastest)


def model(b, h, kv, n, l2):
    group, planes = h // kv, b * kv
    costs = key_tile_costs(n, group)
    l2g = l2_group(l2, n, group, planes)
    pg = causal_plane_group(costs, planes, l2g)
    static, dyn, dynpg = round_robin(costs, planes, l2g), greedy(costs, planes, l2g), greedy(costs, planes, pg)
    return {"shape": f"b{b}-h{h}-kv{kv}-n{n}", "l2_group": l2g, "causal_group": pg, "static_steps": static,
            "dyn_l2_steps": dyn, "dyn_pg_steps": dynpg, "dynshort_model": round(static / dyn, 3),
            "dynpg_model": round(static / dynpg, 3)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--l2-mib", type=int, default=50, help="L2 size (H100 50, H200 60)")
    ap.add_argument("--json", help="write the rows here too")
    ap.add_argument("--sweep", type=int, default=0, help="random shapes to model too")
    a = ap.parse_args()
    l2 = a.l2_mib << 20
    out = {"sms": SMS, "l2_mib": a.l2_mib, "block_overhead_steps": OVERHEAD, "rows": {}}
    print(f"{SMS} SMs, {a.l2_mib} MiB L2; steps; static / dyn (L2 group) = dynshort, static / dyn (causal_group) = dynpg")
    for name, rows in ROWS.items():
        out["rows"][name] = [model(*r, l2) for r in rows]
        for m in out["rows"][name]:
            print(f"{name:8s} {m['shape']:22s} L2 group {m['l2_group']:3d} causal_group {m['causal_group']:3d}  "
                  f"static {m['static_steps']:5.0f} dyn {m['dyn_l2_steps']:5.0f} dynpg {m['dyn_pg_steps']:5.0f}  "
                  f"dynshort {m['dynshort_model']:.3f} dynpg {m['dynpg_model']:.3f}")
    if a.sweep:
        rng = random.Random(1)
        ratios, slower = [], []
        for _ in range(a.sweep):
            kv, g = rng.choice([1, 2, 3, 4, 5, 6, 8, 10, 12, 16]), rng.choice([2, 3, 4, 5, 6, 8, 16])
            b, n = rng.randint(1, 32), rng.randint(128, 4000)
            if (n + 127) // 128 * g >= 32:
                continue
            r = model(b, kv * g, kv, n, l2)
            ratios.append(r["dynpg_model"])
            if r["dynpg_model"] < 1.0:
                slower.append(r)
        gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
        out["sweep"] = {"drawn": a.sweep, "kept": len(ratios), "dynpg_min": min(ratios), "dynpg_geomean": round(gm, 3),
                        "dynpg_slower": slower}
        print(f"sweep: {len(ratios)} of {a.sweep} shapes under 32 steps; dynpg / static {min(ratios):.3f} at the "
              f"least, geomean {gm:.3f}; slower: {', '.join(r['shape'] for r in slower) or 'none'}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
