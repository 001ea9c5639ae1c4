#!/usr/bin/env python3
"""Call K's rule (docs/perf-notes.md, "Session 55", written before the call): does a kernel's place in its case move
the tables' verdicts on this card?

    python3 order_rule.py DIR

DIR holds fb-second-R.json / fb-first-R.json (flashbench, flash-sm90 after the portable flash / first) and
peers-second-R.json / peers-first-R.json (peers.py, torch-cudnn after torch-flash / alone) for rounds R = 1, 2. Per row
k and round r: a_k(r) = torch-cudnn's time / flash-sm90's with both second, b_k(r) the same with both first; d_k = the
geomean over the rounds of b_k(r) / a_k(r). Met (the tables' rounds take both places: one round with both sides
second, one with both first, their ratios' geomean the row's) when at least three rows have |ln d_k| > ln 1.03 and
the same sign of ln(b_k(r) / a_k(r)) in both rounds, every row on every side in every round and flash-sm90 verified in
each. Otherwise the committed order stays the tables'. Prints the rows and the verdict; writes DIR/rule.json.
"""

import json
import math
import os
import sys

ROUNDS = (1, 2)
OURS, PEER = "flash-sm90", "torch-cudnn"


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    return {(r["kernel"], r["key"]): r for r in doc.get("results", []) if r.get("status") == "ok"}


def main(d):
    files = {(p, side, r): load(os.path.join(d, f"{side}-{p}-{r}.json"))
             for p in ("second", "first") for side in ("fb", "peers") for r in ROUNDS}
    keys = sorted({k for (kern, k) in files[("second", "fb", 1)] if kern == OURS})
    rows, incomplete = [], []
    for k in keys:
        per = []
        for r in ROUNDS:
            ratio = {}
            for p in ("second", "first"):
                o, t = files[(p, "fb", r)].get((OURS, k)), files[(p, "peers", r)].get((PEER, k))
                if o is None or t is None or o.get("verified") is not True:
                    incomplete.append(f"{k} round {r} ({p})")
                    continue
                ratio[p] = t["time_ms"]["median"] / o["time_ms"]["median"]
            per.append(ratio)
        if all(len(x) == 2 for x in per):
            logs = [math.log(x["first"] / x["second"]) for x in per]
            rows.append((k, per, math.exp(sum(logs) / len(logs)), all(v > 0 for v in logs) or all(v < 0 for v in logs)))
    print(f"{'row':42s} " + " ".join(f"second-{r} first-{r}" for r in ROUNDS) + "   first/second")
    for k, per, dk, same in rows:
        cells = " ".join(f"{x['second']:8.3f} {x['first']:7.3f}" for x in per)
        print(f"{k:42s} {cells}   {dk:6.3f}{'' if same else '  (signs differ)'}")
    moved = [k for k, _, dk, same in rows if same and abs(math.log(dk)) > math.log(1.03)]
    out = {"rows": {k: {"d": dk, "same_sign": same, "rounds": per} for k, per, dk, same in rows}, "moved": moved}
    if incomplete or not rows:
        verdict = "incomplete: " + ", ".join(incomplete[:6]) if incomplete else "incomplete: no rows"
    elif len(moved) >= 3:
        verdict = (f"met ({len(moved)} rows move by more than 3% with the place, the same way in both rounds): the "
                   "tables' rounds take both places")
    else:
        verdict = f"not met ({len(moved)} rows move by more than 3%): the committed order stays the tables'"
    out["verdict"] = verdict
    print("rule:", verdict)
    with open(os.path.join(d, "rule.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: order_rule.py DIR")
    main(sys.argv[1])
