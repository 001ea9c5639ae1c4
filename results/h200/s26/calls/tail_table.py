#!/usr/bin/env python3
"""Session 27's prepared call K: the portable backward's non-causal GQA passes at d = 128 under three settings, per
shape and round: `ship` (the default: the head-split model's pick), `whole` (FB_FLASH_BWD_SPLIT=1: the whole group,
its last partial wave under the tail split) and `notail` (FB_FLASH_BWD=notail: the whole group, no tail split).
Prints the times (us) and whole / notail (the tail split's gain) and ship / whole. Only verified rows count.

    python3 tail_table.py DIR   (DIR: {ship,whole,notail}-SPEC-R.json)
"""
import glob
import json
import os
import re
import sys

d = sys.argv[1]


def times(path):
    try:
        rs = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError):
        return {}
    return {r["key"]: r["time_ms"]["median"] for r in rs if r.get("status") == "ok" and r.get("verified") is True}


files = [os.path.basename(f) for f in glob.glob(os.path.join(d, "*.json"))]
specs = sorted({m.group(1) for f in files if (m := re.match(r"ship-(.*)-\d+\.json$", f))})
rounds = sorted({int(m.group(1)) for f in files if (m := re.search(r"-(\d+)\.json$", f))})
print("time (us) ship / whole / notail; notail / whole (above 1: the tail split faster), whole / ship (above 1: the "
      "pick faster)")
for s in specs:
    for r in rounds:
        t = {v: times(os.path.join(d, f"{v}-{s}-{r}.json")) for v in ("ship", "whole", "notail")}
        for key in sorted(t["ship"]):
            a, b, c = (t[v].get(key) for v in ("ship", "whole", "notail"))
            if a and b and c:
                print(f"  r{r} {key:40s} {1000 * a:7.0f} {1000 * b:7.0f} {1000 * c:7.0f}   {c / b:.3f}   {b / a:.3f}")
