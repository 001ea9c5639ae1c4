#!/usr/bin/env python3
"""Session 45 call K's specs (issue 13: the portable flash forward's pieces over the keys on grids of less than one
wave, the probe FB_FLASH_FWD_PROBE=kvsubwave): eight non-causal d = 128 forward shapes no config names, drawn with
seed 4546 before the call, each a grid of at most one block an SM on an H200 (batch x heads x query tiles of 128 <= 132)
with at least four K/V tiles of 64 (two pieces or more); one case a spec; and a control of many waves (the papers'
16k-token grid at N = 1024, non-causal: the probe does not touch it). flash only, verified. Writes kvsub45-*.json
here."""
import json
import math
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
HEADS = [(8, 8), (12, 12), (16, 16), (32, 32), (8, 1), (16, 4), (32, 8), (24, 3), (40, 8), (14, 2)]


def spec(name, b, h, kv, seqs, dtypes, seed, what, tokens=None):
    s = {"$schema": "../../../../configs/spec.schema.json", "name": f"s45-{name}",
         "description": f"Session 45 call K (issue 13: the portable forward's pieces over the keys on grids of less "
                        f"than one wave, FB_FLASH_FWD_PROBE=kvsubwave): {what}; flash only, verified "
                        "(results/h200/s45/calls/kvsub45.py)",
         "seq": seqs, "heads": h, "kv_heads": kv, "head_dim": [128], "dtype": dtypes, "causal": [False],
         "pass": ["fwd"], "kernels": ["flash"], "warmup": 5, "reps": 10, "seed": seed, "verify": True}
    if tokens:
        s["tokens"] = tokens
        s["model_dim"] = h * 128
        del s["heads"], s["kv_heads"]
    else:
        s["batch"] = [b]
    return s


def main():
    rng = random.Random(4546)
    out = []
    while len(out) < 8:
        b = rng.choice([1, 2, 3, 4])
        h, kv = rng.choice(HEADS)
        n = rng.randrange(256, 2048)
        if b * h * math.ceil(n / 128) > 132 or math.ceil(n / 64) < 4:
            continue
        dtype = rng.choice(["bf16", "fp16"])
        name = f"kvsub45-b{b}-h{h}-kv{kv}-n{n}"
        if any(o[0] == name for o in out):
            continue
        out.append((name, spec(name, b, h, kv, [n], [dtype], 4546 + len(out),
                               "a grid of less than one wave drawn with seed 4546")))
    name = "kvsub45ctl-grid-n1024"
    out.append((name, spec(name, 0, 16, 16, [1024], ["bf16"], 4560,
                           "a control: the papers' 16k-token grid at N = 1024 (2048 blocks)", tokens=16384)))
    for name, s in out:
        with open(os.path.join(HERE, name + ".json"), "w") as f:
            json.dump(s, f, indent=2)
            f.write("\n")
        print(name, s["dtype"][0])


if __name__ == "__main__":
    main()
