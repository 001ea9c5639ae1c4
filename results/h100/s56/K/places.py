#!/usr/bin/env python3
"""Session 56, call K: flash-sm90 / torch-cudnn (torch-cudnn's time over ours) by place and round, from rule.json
(order_rule.py's per-row readings), into places.json: each pass's range, geomean and rows >= 1.0 with both sides
second (as committed), both first, and the two-place protocol (round 1 second, round 2 first: the geomean of the
two readings a row), which is what the tables' rounds take from now on."""
import json, math, os

here = os.path.dirname(os.path.abspath(__file__))
rows = json.load(open(os.path.join(here, "rule.json")))["rows"]


def stats(v):
    return {"min": round(min(v), 3), "max": round(max(v), 3),
            "geomean": round(math.exp(sum(map(math.log, v)) / len(v)), 3),
            "at_least_1": sum(x >= 1.0 for x in v), "rows": len(v)}


out = {}
for p in ("fwd", "bwd"):
    sel = [x["rounds"] for k, x in rows.items() if k.endswith(p)]
    out[p] = {f"{place}-{r + 1}": stats([x[r][place] for x in sel]) for place in ("second", "first") for r in (0, 1)}
    out[p]["protocol"] = stats([math.sqrt(x[0]["second"] * x[1]["first"]) for x in sel])
json.dump(out, open(os.path.join(here, "places.json"), "w"), indent=1)
print(json.dumps(out, indent=1))
