#!/usr/bin/env python3
"""Call Y's rule (docs/perf-notes.md, "Session 55", written before the call): does scripts/peers.py's self hold time
cuDNN's kernels as flashbench times them, nearer than the busy hold does?

    python3 self_rule.py DIR

DIR holds fb-R.json (flashbench run, the in-binary cudnn among its kernels) and busy-R.json / self-R.json (peers.py
under each hold) for rounds R = 1, 2. Rows: the d = 128 non-causal rows, forward and backward (N 512-16k), where
PyTorch's cuDNN 9.19 and the in-binary 9.14 launch the same kernels (session 53's calls W and U), as call P's rule
(results/h200/s54/calls/parity_rule.py). Per hold h, round r and row k: x = ln(torch-cudnn's median time / the
in-binary cudnn's). m_h(r) = the median over the rows of |x| (how far a typical row sits from parity, its bias and its
scatter both); c_h(r) = exp(median x) (call P's figure), c_h their geometric mean over the rounds. Met (peers.py's
default becomes --self-hold) when every round has every row on every side with the in-binary cudnn verified on each,
m_self(r) <= m_busy(r) - ln 1.01 in every round, and 0.98 <= c_self <= 1.02. Otherwise the busy hold stays. Prints a
table and the verdict; writes DIR/rule.json.
"""

import json
import math
import os
import statistics
import sys

ROUNDS = (1, 2)
HOLDS = ("busy", "self")
TC, CUD = "torch-cudnn", "cudnn"


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    return {(r["kernel"], r["key"]): r for r in doc.get("results", []) if r.get("status") == "ok"}


def calibration_row(key):
    return "-d128-" in key and "-full-" in key


def main(d):
    fb = {r: load(os.path.join(d, f"fb-{r}.json")) for r in ROUNDS}
    peers = {(h, r): load(os.path.join(d, f"{h}-{r}.json")) for h in HOLDS for r in ROUNDS}
    keys = sorted({k for (kern, k) in fb[1] if kern == CUD and calibration_row(k)},
                  key=lambda k: (k.endswith("bwd"), int(k.split("-n")[1].split("-")[0])))
    whole = len(keys) == 12
    x = {}  # (hold, round, key) -> ln(torch-cudnn / in-binary cudnn)
    unverified = []
    for r in ROUNDS:
        for k in keys:
            rec = fb[r].get((CUD, k))
            if rec is None or rec.get("verified") is not True:
                unverified.append(f"{k} round {r}")
                continue
            for h in HOLDS:
                p = peers[(h, r)].get((TC, k))
                if p is not None:
                    x[(h, r, k)] = math.log(p["time_ms"]["median"] / rec["time_ms"]["median"])
    print(f"{'row (torch-cudnn / in-binary cudnn)':44s} " + " ".join(f"{h}-{r:d}" for h in HOLDS for r in ROUNDS))
    for k in keys:
        cells = [x.get((h, r, k)) for h in HOLDS for r in ROUNDS]
        print(f"{k:44s} " + " ".join(f"{math.exp(c):6.3f}" if c is not None else "     -" for c in cells))
    out = {"rows": keys, "holds": {}}
    complete = whole and not unverified and all((h, r, k) in x for h in HOLDS for r in ROUNDS for k in keys)
    for h in HOLDS:
        m = [statistics.median([abs(x[(h, r, k)]) for k in keys if (h, r, k) in x] or [float("nan")]) for r in ROUNDS]
        c = [math.exp(statistics.median([x[(h, r, k)] for k in keys if (h, r, k) in x] or [float("nan")]))
             for r in ROUNDS]
        overall = math.exp(sum(math.log(v) for v in c) / len(c))
        out["holds"][h] = {"m": m, "c_rounds": c, "c": overall}
        print(f"{h:5s} m {' '.join(f'{v:.4f}' for v in m)}  c {' '.join(f'{v:.4f}' for v in c)}  "
              f"c geomean {overall:.4f}")
    nearer = all(out["holds"]["self"]["m"][i] <= out["holds"]["busy"]["m"][i] - math.log(1.01)
                 for i in range(len(ROUNDS)))
    band = 0.98 <= out["holds"]["self"]["c"] <= 1.02
    if not complete:
        verdict = "incomplete: " + (", ".join(unverified) if unverified else "a row or a side is missing")
    elif nearer and band:
        verdict = "met: the self hold times cuDNN's kernels as flashbench does; --self-hold becomes peers.py's default"
    else:
        verdict = (f"not met (self's rows nearer parity by >= 1% in every round: {nearer}; c_self in 0.98-1.02: "
                   f"{band}): the busy hold stays")
    out["verdict"] = verdict
    print("rule:", verdict)
    with open(os.path.join(d, "rule.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: self_rule.py DIR")
    main(sys.argv[1])
