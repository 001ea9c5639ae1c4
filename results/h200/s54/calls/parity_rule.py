#!/usr/bin/env python3
"""Call P's rule (docs/perf-notes.md, "Session 54", written before the call): which launch hold of scripts/peers.py
times cuDNN's kernels as flashbench times them.

    python3 parity_rule.py DIR

DIR holds fb-R.json (flashbench run, the in-binary cudnn among its kernels) and spin-R.json / busy-R.json (peers.py
under each hold) for rounds R = 1, 2. Calibration rows: the d = 128 non-causal rows, forward and backward, where
PyTorch's cuDNN 9.19 and the in-binary 9.14 launch the same kernels (session 53's calls W and U). For each hold h and
round r: c_h(r) = the median over those rows of torch-cudnn's median time under h / the in-binary cudnn's; c_h = the
geometric mean of its rounds. Met (peers.py's default becomes --busy-hold) when every round has every row on every
side, the in-binary cudnn verified on each, |ln c_busy(r)| <= |ln c_spin(r)| - ln 1.01 in every round (the busy hold
at least 1% nearer parity), and 0.97 <= c_busy <= 1.03. Otherwise the spin hold stays. Prints a table and the
verdict; writes DIR/rule.json.
"""

import json
import math
import os
import statistics
import sys

ROUNDS = (1, 2)
HOLDS = ("spin", "busy")
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
    ratio = {}  # (hold, round, key) -> torch-cudnn / in-binary cudnn
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
                    ratio[(h, r, k)] = p["time_ms"]["median"] / rec["time_ms"]["median"]
    print(f"{'row (torch-cudnn / in-binary cudnn)':44s} " + " ".join(f"{h}-{r:d}" for h in HOLDS for r in ROUNDS))
    for k in keys:
        cells = [ratio.get((h, r, k)) for h in HOLDS for r in ROUNDS]
        print(f"{k:44s} " + " ".join(f"{c:6.3f}" if c else "     -" for c in cells))
    out = {"rows": keys, "holds": {}}
    complete = whole and not unverified and all((h, r, k) in ratio for h in HOLDS for r in ROUNDS for k in keys)
    for h in HOLDS:
        per = [statistics.median([ratio[(h, r, k)] for k in keys if (h, r, k) in ratio] or [float("nan")])
               for r in ROUNDS]
        overall = math.exp(sum(math.log(x) for x in per) / len(per))
        out["holds"][h] = {"rounds": per, "c": overall}
        print(f"c_{h:5s} rounds {' '.join(f'{x:.4f}' for x in per)}  geomean {overall:.4f}")
    nearer = all(abs(math.log(out["holds"]["busy"]["rounds"][i])) <= abs(math.log(out["holds"]["spin"]["rounds"][i]))
                 - math.log(1.01) for i in range(len(ROUNDS)))
    band = 0.97 <= out["holds"]["busy"]["c"] <= 1.03
    if not complete:
        verdict = "incomplete: " + (", ".join(unverified) if unverified else "a row or a side is missing")
    elif nearer and band:
        verdict = "met: the busy hold times cuDNN's kernels as flashbench does; --busy-hold becomes peers.py's default"
    else:
        verdict = (f"not met (busy nearer parity by >= 1% in every round: {nearer}; c_busy in 0.97-1.03: {band}): "
                   "the spin hold stays")
    out["verdict"] = verdict
    print("rule:", verdict)
    with open(os.path.join(d, "rule.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: parity_rule.py DIR")
    main(sys.argv[1])
