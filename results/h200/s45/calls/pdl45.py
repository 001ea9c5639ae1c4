#!/usr/bin/env python3
"""Session 45 call J's specs (issue 13: flash-sm90's backward launches as programmatic dependents, the probe
FB_SM90_BWD_LAUNCHES=pdl): eight short backward shapes no config names, drawn with seed 4545 before the call (MHA and
GQA/MQA, batch 1-4, N 256-2047, d 64 or 128: batch x heads x N at most 96k query rows, backwards of tens to a
hundred-odd microseconds, where a kernel boundary is a few percent), one case a spec; and two of the papers' 16k-token
grid's long rows as controls (N = 8192, d = 128, both masks: milliseconds, where it cannot show). flash-sm90 only,
verified. Writes pdl45-*.json here."""
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
HEADS = [(8, 8), (16, 16), (32, 32), (8, 1), (16, 2), (16, 4), (32, 8), (24, 3), (40, 8), (12, 2)]


def spec(name, b, h, kv, seqs, d, dtypes, causal, seed, what):
    return {"$schema": "../../../../configs/spec.schema.json", "name": f"s45-{name}",
            "description": f"Session 45 call J (issue 13: the backward's launches as programmatic dependents, "
                           f"FB_SM90_BWD_LAUNCHES=pdl): {what}; flash-sm90 only, verified "
                           "(results/h200/s45/calls/pdl45.py)",
            "seq": seqs, "batch": [b], "heads": h, "kv_heads": kv, "head_dim": [d], "dtype": dtypes,
            "causal": causal, "pass": ["bwd"], "kernels": ["flash-sm90"], "warmup": 5, "reps": 10,
            "seed": seed, "verify": True}


def main():
    rng = random.Random(4545)
    out = []
    while len(out) < 8:
        b = rng.choice([1, 2, 3, 4])
        h, kv = rng.choice(HEADS)
        n = rng.randrange(256, 2048)
        d = rng.choice([64, 128])
        if b * h * n > 96 * 1024:
            continue
        dtype, causal = rng.choice(["bf16", "fp16"]), rng.choice([False, True])
        name = f"pdl45-b{b}-h{h}-kv{kv}-n{n}-d{d}"
        if any(o[0] == name for o in out):
            continue
        out.append((name, spec(name, b, h, kv, [n], d, [dtype], [causal], 4545 + len(out),
                               "a short backward drawn with seed 4545")))
    name = "pdl45ctl-b2-h16-n8192-d128"
    out.append((name, spec(name, 2, 16, 16, [8192], 128, ["bf16"], [False, True], 4560,
                           "a control: the papers' 16k-token grid's N = 8192 d = 128 rows")))
    for name, s in out:
        with open(os.path.join(HERE, name + ".json"), "w") as f:
            json.dump(s, f, indent=2)
            f.write("\n")
        print(name, s["dtype"][0], "causal" if s["causal"][0] else "full")


if __name__ == "__main__":
    main()
