#!/usr/bin/env python3
"""Session 26 call H: the portable flash backward under the new head-split model against the old model's split forced
(FB_FLASH_BWD_SPLIT), on the rows where the two models pick differently (hsplit-flips.tsv): old time / new time per
round (above 1: the new pick faster), their geometric mean, and FlashAttention-2's time over ours (new and old) where
peers ran. Only verified rows count.

    python3 hsplit_table.py DIR FLIPS.tsv   (DIR: new-SPEC-MASK-R.json, old-SPEC-MASK-R.json, peers-SPEC.json)
"""
import json
import math
import os
import sys

d, flips = sys.argv[1], sys.argv[2]


def times(path, verified=True):
    """Median times of a results file's ok rows; ours verified (the peers' rows carry verified: null)."""
    try:
        rs = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError):
        return {}
    return {r["key"]: r["time_ms"]["median"] for r in rs
            if r.get("status") == "ok" and (r.get("verified") is True or not verified and r.get("verified") is None)}


def gm(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


combined = []
print("old-model split time / new-model split time (above 1: the new pick faster), rounds 1 / 2, geomean;"
      " FA2 / ours (new, old)")
for line in open(flips):
    if line.startswith("#") or not line.strip():
        continue
    spec, mask, old, new = line.split()[:4]
    rs = []
    key = None
    for r in (1, 2):
        a = times(os.path.join(d, f"old-{spec}-{mask}-{r}.json"))
        b = times(os.path.join(d, f"new-{spec}-{mask}-{r}.json"))
        ks = [k for k in b if k in a]
        if ks:
            key = ks[0]
            rs.append((a[key] / b[key], a[key], b[key]))
    if len(rs) != 2:
        print(f"  {spec:34s} {mask:6s} S {old} -> {new}: missing a round")
        continue
    g = gm([x for x, _, _ in rs])
    combined.append((g, f"{spec} {mask}"))
    peer = times(os.path.join(d, f"peers-{spec}.json"), verified=False).get(key)
    fa2 = f"   FA2 {peer / rs[0][2]:.3f} / {peer / rs[0][1]:.3f}" if peer else ""
    print(f"  {spec:34s} {mask:6s} S {old} -> {new}: {rs[0][0]:.3f} {rs[1][0]:.3f}  {g:.3f}"
          f"  ({1000 * rs[0][1]:.0f} -> {1000 * rs[0][2]:.0f} us){fa2}")
if combined:
    lo, hi = min(combined), max(combined)
    print(f"summary: {len(combined)} rows, geomean {gm([g for g, _ in combined]):.3f}, min {lo[0]:.3f} ({lo[1]}), "
          f"max {hi[0]:.3f} ({hi[1]}), below 1.0: {sum(g < 1.0 for g, _ in combined)}")
