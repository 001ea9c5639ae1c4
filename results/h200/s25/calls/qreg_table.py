#!/usr/bin/env python3
"""Session 25: qreg against the default, per row and round (time of the default / time of qreg; above 1: qreg faster).
   qreg_table.py DIR SPEC... reads DIR/{def,qreg}-SPEC-R.json for rounds R = 1, 2, ... and prints each row's ratios,
   their geometric mean, and the pre-registered verdict (callA25.sh's header)."""
import json, math, os, sys

d, specs = sys.argv[1], sys.argv[2:]


def times(path):
    try:
        res = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError):
        return {}
    out = {}
    for r in res:
        if r.get("status") == "ok" and r.get("verified") is not False:
            out[r["key"]] = r["time_ms"]["median"]
    return out


rows, rounds = {}, 0
for s in specs:
    r = 1
    while os.path.exists(os.path.join(d, f"def-{s}-{r}.json")):
        a, b = times(os.path.join(d, f"def-{s}-{r}.json")), times(os.path.join(d, f"qreg-{s}-{r}.json"))
        for k in a:
            if k in b:
                rows.setdefault(k, {})[r] = a[k] / b[k]
        r += 1
    rounds = max(rounds, r - 1)
print(f"default / qreg time per round, then geomean ({rounds} rounds)")
small, small_g, low = [], [], []
for k, v in rows.items():
    g = math.exp(sum(math.log(x) for x in v.values()) / len(v))
    cells = " ".join(f"{v[r]:.3f}" if r in v else "  -  " for r in range(1, rounds + 1))
    print(f"  {k:48s} {cells}   {g:.3f}")
    short = "-full-" in k and "-d128-" in k and any(f"-n{n}-" in k for n in (512, 1024, 2048))
    if short:
        small.extend(v.values())
    if all(x < 0.99 for x in v.values()):
        low.append(k)
if small:
    gm = math.exp(sum(math.log(x) for x in small) / len(small))
    print(f"geomean over the non-causal grid rows N <= 2k (all rounds): {gm:.4f}")
    print(f"rows below 0.99 in every round: {low if low else 'none'}")
    print("verdict:", "MET (ship qreg at d = 128)" if gm >= 1.01 and not low else "not met (remove qreg)")
