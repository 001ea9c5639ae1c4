#!/usr/bin/env python3
"""Session 25 call C: the non-causal d = 128 GQA backward's head split, the old rule's choice (FB_SM90_BWD_SPLIT=S)
   against the new default (the query tail in the unsplit time), per shape and round: old time / new time (above 1:
   the new choice is faster). split_table.py DIR SHAPE... reads DIR/{old,new}-SHAPE-R.json, R = 1, 2, ..."""
import json, math, os, sys

d, shapes = sys.argv[1], sys.argv[2:]


def t(path):
    try:
        r = [x for x in json.load(open(path))["results"] if x.get("status") == "ok" and x.get("verified") is not False]
    except (OSError, ValueError, KeyError):
        return None
    return r[0]["time_ms"]["median"] if r else None


print("old / new time per round (median ms of each), then the geomean")
for s in shapes:
    cells, ratios = [], []
    r = 1
    while os.path.exists(os.path.join(d, f"old-{s}-{r}.json")):
        a, b = t(os.path.join(d, f"old-{s}-{r}.json")), t(os.path.join(d, f"new-{s}-{r}.json"))
        if a and b:
            ratios.append(a / b)
            cells.append(f"{a:.3f}/{b:.3f} {a / b:.3f}")
        else:
            cells.append("   -   ")
        r += 1
    g = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")
    print(f"  {s:28s} " + "   ".join(cells) + f"   {g:.3f}")
