#!/usr/bin/env python3
"""Session 46 call L's forward specs (issue 13: the probe FB_FLASH_FWD_PROBE=kvsubwave3, the portable forward's pieces
over the keys on grids of less than one wave only where each tile gets three pieces or more of five K/V tiles or
more): eight non-causal d = 128 forward shapes no config names, drawn with seed 4647 before the call among the grids
the probe splits on an H200 (132 SMs, two blocks an SM: batch x heads x query tiles of 128 at most 88, N >= 897);
one case a spec, flash only, verified. The controls (grids it leaves whole) are call K's specs. Writes kvsub46-*.json
here."""
import json
import math
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
HEADS = [(1, 1), (2, 1), (2, 2), (4, 1), (4, 4), (6, 1), (8, 1), (8, 2), (8, 8), (10, 2)]
SLOTS = 2 * 132  # an H200's blocks at once (two an SM)


def pieces(blocks, kv_tiles, min_tiles=5, min_pieces=3):
    """common/tile_order.h's subwave_pieces on the H200."""
    if blocks < 1 or blocks > SLOTS:
        return 1
    n = min(SLOTS // blocks, kv_tiles // min_tiles)
    return n if n >= max(2, min_pieces) else 1


def spec(name, b, h, kv, n, dtype, seed, what):
    return {"$schema": "../../../../configs/spec.schema.json", "name": f"s46-{name}",
            "description": f"Session 46 call L (issue 13: the portable forward's pieces on sub-wave grids of three "
                           f"pieces or more, FB_FLASH_FWD_PROBE=kvsubwave3): {what}; flash only, verified "
                           "(results/h200/s46/calls/kvsub46.py)",
            "seq": [n], "batch": [b], "heads": h, "kv_heads": kv, "head_dim": [128], "dtype": [dtype],
            "causal": [False], "pass": ["fwd"], "kernels": ["flash"], "warmup": 5, "reps": 10, "seed": seed,
            "verify": True}


def main():
    rng = random.Random(4647)
    out = []
    while len(out) < 8:
        b = rng.choice([1, 2])
        h, kv = rng.choice(HEADS)
        n = rng.randrange(897, 4097)
        if pieces(b * h * math.ceil(n / 128), math.ceil(n / 64)) < 3:
            continue
        dtype = rng.choice(["bf16", "fp16"])
        name = f"kvsub46-b{b}-h{h}-kv{kv}-n{n}"
        if any(o[0] == name for o in out):
            continue
        out.append((name, spec(name, b, h, kv, n, dtype, 4647 + len(out),
                               "a sub-wave grid the probe splits, drawn with seed 4647")))
    for name, s in out:
        with open(os.path.join(HERE, name + ".json"), "w") as f:
            json.dump(s, f, indent=2)
            f.write("\n")
        b, h, n = s["batch"][0], s["heads"], s["seq"][0]
        print(name, s["dtype"][0], "blocks", b * h * math.ceil(n / 128), "pieces",
              pieces(b * h * math.ceil(n / 128), math.ceil(n / 64)))


if __name__ == "__main__":
    main()
