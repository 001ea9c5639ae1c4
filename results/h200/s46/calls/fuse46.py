#!/usr/bin/env python3
"""Session 46 call L's backward specs (issue 13: a head split's launches fused, FB_SM90_BWD_LAUNCHES=fused, a second
call after session 46's call H, whose rule one control missed by 0.0007): ten GQA/MQA backward shapes no config names,
drawn with seed 4646 before the call as call H's were (batch 1-2, groups of 3-8, N 300-2500, d 64 / 128, batch x kv
heads x key tiles of 128 at most 66: the head split's grids), and three MHA controls (no head split: the same launches
either way). One case a spec, flash-sm90 only, verified. Writes fuse46-*.json here."""
import json
import math
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
GROUPS = [(8, 1), (16, 2), (16, 4), (32, 4), (32, 8), (24, 3), (48, 8), (40, 5)]


def spec(name, b, h, kv, n, d, dtype, causal, seed, what):
    return {"$schema": "../../../../configs/spec.schema.json", "name": f"s46-{name}",
            "description": f"Session 46 call L (issue 13: a head split's launches fused, FB_SM90_BWD_LAUNCHES): {what}; "
                           "flash-sm90 only, verified (results/h200/s46/calls/fuse46.py)",
            "seq": [n], "batch": [b], "heads": h, "kv_heads": kv, "head_dim": [d], "dtype": [dtype],
            "causal": [causal], "pass": ["bwd"], "kernels": ["flash-sm90"], "warmup": 5, "reps": 10,
            "seed": seed, "verify": True}


def main():
    rng = random.Random(4646)
    out = []
    while len(out) < 10:
        b = rng.choice([1, 2])
        h, kv = rng.choice(GROUPS)
        n = rng.randrange(300, 2600, 100)
        d = rng.choice([64, 128])
        if b * kv * math.ceil(n / 128) > 66:
            continue
        dtype, causal = rng.choice(["bf16", "fp16"]), rng.choice([False, True])
        name = f"fuse46-b{b}-h{h}-kv{kv}-n{n}-d{d}"
        if any(o[0] == name for o in out):
            continue
        out.append((name, spec(name, b, h, kv, n, d, dtype, causal, 4646 + len(out),
                               "a GQA/MQA shape drawn with seed 4646")))
    for i, (b, h, n, d, dtype, causal) in enumerate([(1, 16, 900, 128, "bf16", False), (2, 8, 600, 64, "fp16", True),
                                                     (4, 16, 512, 128, "bf16", True)]):
        name = f"fuse46ctl-b{b}-h{h}-kv{h}-n{n}-d{d}"
        out.append((name, spec(name, b, h, h, n, d, dtype, causal, 4670 + i, "an MHA control (no head split)")))
    for name, s in out:
        with open(os.path.join(HERE, name + ".json"), "w") as f:
            json.dump(s, f, indent=2)
            f.write("\n")
        print(name, s["dtype"][0], "causal" if s["causal"][0] else "full")


if __name__ == "__main__":
    main()
