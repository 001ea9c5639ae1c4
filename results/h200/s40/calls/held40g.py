#!/usr/bin/env python3
"""Session 40 (issue 13): ten GQA/MQA shapes no config names for call D, drawn after the session's change (seed 4060):
batch 1-8, 8-64 query heads on any divisor giving a group >= 2, N 1000-16000, d 64 or 128, fp16 or bf16, at most ~64k
tokens and a ~10 ms backward; both masks, backward only; flash and flash-sm90, verified (scripts/peers.py runs the same
cases). Writes held40g-*.json here."""
import json
import random

rng = random.Random(4060)
heads = [8, 10, 12, 16, 20, 24, 28, 32, 40, 48, 64]
got = 0
while got < 10:
    h = rng.choice(heads)
    kv = rng.choice([k for k in range(1, h) if h % k == 0])
    b, n = rng.randint(1, 8), rng.randrange(1000, 16001, 100)
    d, dt = rng.choice([64, 128]), rng.choice(["fp16", "bf16"])
    if b * n > 64000 or b * h * n * n > 6e9:
        continue
    nm = f"held40g-b{b}-h{h}-kv{kv}-n{n}-d{d}"
    desc = (f"Session 40 call D (issue 13: GQA/MQA shapes that no config names, drawn with seed 4060 after session 40's "
            f"change, results/h200/s40/calls/held40g.py): batch {b}, {h} query heads on {kv} K/V heads, N = {n}, d = {d}, "
            f"{dt}, causal or not, backward; flash and flash-sm90, verified; scripts/peers.py runs the same cases")
    spec = {"$schema": "../../../../configs/spec.schema.json", "name": "s40-" + nm, "description": desc, "seq": [n],
            "batch": [b], "heads": h, "kv_heads": kv, "head_dim": [d], "dtype": [dt], "causal": [False, True],
            "pass": ["bwd"], "kernels": ["flash", "flash-sm90"], "warmup": 5, "reps": 10, "seed": 4061 + got,
            "verify": True}
    open(nm + ".json", "w").write(json.dumps(spec, indent=2) + "\n")
    print(nm)
    got += 1
