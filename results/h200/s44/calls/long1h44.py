#!/usr/bin/env python3
"""Session 44's call I specs (issue 13: the probe long1h, FB_SM90_BWD_SPLIT=long1h), drawn with seed 4445 before any
run: eight causal d = 128 GQA/MQA backward shapes no config names where the probe should act. Groups of 4, 6 or 8
query heads (long1h's one-head units can exceed the default's group / 2 subsets only there: the cap is 8), N 7700-12000
(one-head units of >= 48 steps a key tile at 64 or 80 queries a step), and grids the default splits: groups of 8
always (big8), groups of 4 and 6 under one wave (batch x kv heads <= 2). Two controls: a group of 8 at N = 3000 (units
too short: the probe changes nothing) and MHA at N = 8000 (no split). One case a spec, flash-sm90 only, verified.
Writes long1h44-*.json here."""
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))


def spec(name, b, h, kv, n, dtype, seed, what):
    return {"$schema": "../../../../configs/spec.schema.json", "name": f"s44-{name}",
            "description": f"Session 44 call I (issue 13: the probe long1h, FB_SM90_BWD_SPLIT=long1h): {what}; "
                           "flash-sm90 only, verified (results/h200/s44/calls/long1h44.py)",
            "seq": [n], "batch": [b], "heads": h, "kv_heads": kv, "head_dim": [128], "dtype": [dtype],
            "causal": [True], "pass": ["bwd"], "kernels": ["flash-sm90"], "warmup": 5, "reps": 10,
            "seed": seed, "verify": True}


def main():
    rng = random.Random(4445)
    out = []
    while len(out) < 8:
        group = rng.choice([4, 6, 8, 8])
        if group == 8:
            b, kv = rng.choice([(1, 1), (2, 1), (1, 2), (3, 1), (2, 2), (1, 4), (4, 1), (2, 3)])
        else:
            b, kv = rng.choice([(1, 1), (2, 1), (1, 2)])
        n = rng.randrange(7700, 12100, 100)
        name = f"long1h44-b{b}-h{group * kv}-kv{kv}-n{n}"
        if any(o[0] == name for o in out):
            continue
        out.append((name, spec(name, b, group * kv, kv, n, rng.choice(["bf16", "fp16"]), 4445 + len(out),
                               "a causal d = 128 GQA/MQA shape drawn with seed 4445")))
    out.append(("long1h44ctl-b2-h16-kv2-n3000",
                spec("long1h44ctl-b2-h16-kv2-n3000", 2, 16, 2, 3000, "bf16", 4470, "a control (units too short)")))
    out.append(("long1h44ctl-b1-h16-kv16-n8000",
                spec("long1h44ctl-b1-h16-kv16-n8000", 1, 16, 16, 8000, "fp16", 4471, "an MHA control (no split)")))
    for name, s in out:
        with open(os.path.join(HERE, name + ".json"), "w") as f:
            json.dump(s, f, indent=2)
            f.write("\n")
        print(name, s["dtype"][0])


if __name__ == "__main__":
    main()
