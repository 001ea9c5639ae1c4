#!/usr/bin/env python3
"""Session 27's call B: the portable backward under every forced query-head split (splitK-SPEC-1.json), the model's
pick (ship-SPEC-{1,2}.json) and torch-flash (peers-SPEC-{1,2}.json). Per row: times in us, the fastest split, the
pick's time over the fastest's, and FlashAttention-2's time over the pick's and the fastest's (above 1: ours faster).
Only verified flashbench rows count; peers rows count where ok.

    python3 bigsplit_table.py DIR
"""
import glob
import json
import os
import re
import sys

d = sys.argv[1]


def times(path, peer=False):
    try:
        rs = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError):
        return {}
    return {r["key"]: 1000 * r["time_ms"]["median"] for r in rs
            if r.get("status") == "ok" and (peer or r.get("verified") is True)}


specs = sorted({m.group(1) for f in glob.glob(os.path.join(d, "ship-*-1.json"))
                if (m := re.match(r"ship-(.*)-1\.json$", os.path.basename(f)))})
for s in specs:
    splits = sorted(int(m.group(1)) for f in glob.glob(os.path.join(d, f"split*-{s}-1.json"))
                    if (m := re.match(r"split(\d+)-", os.path.basename(f))))
    t = {k: times(os.path.join(d, f"split{k}-{s}-1.json")) for k in splits}
    ship = [times(os.path.join(d, f"ship-{s}-{r}.json")) for r in (1, 2)]
    fa2 = [times(os.path.join(d, f"peers-{s}-{r}.json"), peer=True) for r in (1, 2)]
    for key in sorted(ship[0]):
        cells = {k: t[k].get(key) for k in splits}
        ok = {k: v for k, v in cells.items() if v}
        if not ok:
            continue
        best = min(ok, key=ok.get)
        sh = [x.get(key) for x in ship]
        fa = [x.get(key) for x in fa2]
        line = " ".join(f"{k}:{v:.0f}" if v else f"{k}:-" for k, v in cells.items())
        ratios = " ".join(f"{f / p:.3f}" if f and p else "-" for f, p in zip(fa, sh))
        print(f"{key:40s} ship {' / '.join(f'{x:.0f}' if x else '-' for x in sh)}  fastest {best} ({ok[best]:.0f}); "
              f"ship/fastest {sh[0] / ok[best]:.3f}; FA2/ship {ratios}; FA2/fastest "
              f"{fa[0] / ok[best]:.3f}" if sh[0] and fa[0] else f"{key} incomplete")
        print(f"    {line}")
