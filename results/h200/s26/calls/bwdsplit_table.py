#!/usr/bin/env python3
"""Session 26 call G: the portable flash backward's GQA head split, forced (FB_FLASH_BWD_SPLIT=S, S dividing the
group) and as shipped, beside FlashAttention-2 (torch-flash), per shape and round: FA2 time / our time (above 1: ours
faster), and which forced S reads fastest in every round. Only verified rows count.

    python3 bwdsplit_table.py DIR   (DIR: ship-SHAPE-R.json, split{S}-SHAPE-R.json, peers-SHAPE-R.json)
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
    return {r["key"]: r["time_ms"]["median"] for r in rs
            if r.get("status") == "ok" and r.get("verified") is not False}


files = glob.glob(os.path.join(d, "*.json"))
rounds = sorted({int(m.group(1)) for f in files if (m := re.search(r"-(\d+)\.json$", f))})
shapes = sorted({m.group(1) for f in files if (m := re.match(r"ship-(.*)-\d+\.json$", os.path.basename(f)))})
for s in shapes:
    settings = sorted({m.group(1) for f in files
                       if (m := re.match(r"(split\d+)-" + re.escape(s) + r"-\d+\.json$", os.path.basename(f)))},
                      key=lambda x: int(x[5:]))
    for r in rounds:
        peer = times(os.path.join(d, f"peers-{s}-{r}.json"))
        for key in sorted(peer):
            cells = []
            best = None
            for st in ["ship"] + settings:
                t = times(os.path.join(d, f"{st}-{s}-{r}.json")).get(key)
                cells.append(f"{st} {peer[key] / t:.3f}" if t else f"{st}   -  ")
                if t and st != "ship" and (best is None or t < best[1]):
                    best = (st, t)
            print(f"  r{r} {key:40s} FA2 {1000 * peer[key]:7.1f} us   " + "  ".join(cells) +
                  (f"   fastest {best[0]}" if best else ""))
