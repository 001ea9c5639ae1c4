#!/usr/bin/env python3
"""Session 41 (issue 13): six shapes no config names for session 42's call C, drawn in session 41 (seed 4500):
batch 1-12, 4-64 query heads, any divisor as K/V heads, N 1000-9000, d 64 or 128, fp16 or bf16, at most ~40k tokens;
both masks, forward and backward; flash, flash-sm90 and the in-binary cudnn, verified (scripts/peers.py runs the same
cases). Writes held41-*.json here."""
import json
import random

rng = random.Random(4500)
heads = [4, 6, 8, 10, 12, 16, 20, 24, 28, 32, 40, 48, 64]
got = 0
while got < 6:
    h = rng.choice(heads)
    kv = rng.choice([k for k in range(1, h + 1) if h % k == 0])
    b, n = rng.randint(1, 12), rng.randrange(1000, 9001, 100)
    d, dt = rng.choice([64, 128]), rng.choice(["fp16", "bf16"])
    if b * n > 40000:
        continue
    nm = f"held41-b{b}-h{h}-kv{kv}-n{n}-d{d}"
    desc = (f"Session 42 call C, prepared in session 41 (issue 13: shapes that no config names, drawn with seed 4500 in session 41, before session 42's calls, "
            f"results/h200/s41/calls/held41.py): batch {b}, {h} query heads on {kv} K/V heads, N = {n}, d = {d}, {dt}, "
            f"causal or not, forward and backward; flash, flash-sm90 and the in-binary cudnn, verified; scripts/peers.py "
            f"runs the same cases")
    spec = {"$schema": "../../../../configs/spec.schema.json", "name": "s41-" + nm, "description": desc, "seq": [n],
            "batch": [b], "heads": h, "kv_heads": kv, "head_dim": [d], "dtype": [dt], "causal": [False, True],
            "pass": ["fwd", "bwd"], "kernels": ["flash", "flash-sm90", "cudnn"], "warmup": 5, "reps": 10,
            "seed": 4501 + got, "verify": True}
    open(nm + ".json", "w").write(json.dumps(spec, indent=2) + "\n")
    print(nm)
    got += 1
