#!/usr/bin/env python3
"""Session 26 call E: the portable flash forward at d = 128 under FB_FLASH_FWD_PROBE=epi,pro against the shipped
kernels, case by case and round by round (shipped time / epi,pro time: above 1, epi,pro is faster), grouped by the
keys a query row sees on average (seq_k, or seq_k - seq_q / 2 under the causal mask; shipped launches above 1024 run
without the lean prologue and epilogue, TcTiles<128>::kShortKeys). Only verified rows count.

    python3 epi_table.py DIR   (DIR holds def-SPEC-R.json and epi-SPEC-R.json)
"""
import glob
import json
import math
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


rounds = sorted({int(m.group(1)) for f in glob.glob(os.path.join(d, "def-*-*.json"))
                 if (m := re.search(r"-(\d+)\.json$", f))})
specs = sorted({re.sub(r"^def-|-\d+\.json$", "", os.path.basename(f)) for f in glob.glob(os.path.join(d, "def-*.json"))})
rows = {}
for s in specs:
    for r in rounds:
        a, b = times(os.path.join(d, f"def-{s}-{r}.json")), times(os.path.join(d, f"epi-{s}-{r}.json"))
        for k in a:
            if k in b:
                rows.setdefault(k, {})[r] = a[k] / b[k]


def keys_seen(k):
    n = int(re.search(r"-n(\d+)-", k).group(1))
    return n - n / 2 if "-causal-" in k else n


def gm(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


print("shipped time / epi,pro time (above 1: epi,pro faster); rounds " + " / ".join(map(str, rounds)) + ", geomean")
groups = {}
for k in sorted(rows, key=lambda k: ("-causal-" in k, keys_seen(k), k)):
    rs = rows[k]
    if len(rs) != len(rounds):
        print(f"  {k:44s} missing a round")
        continue
    g = gm(list(rs.values()))
    long_ = keys_seen(k) > 1024
    groups.setdefault(("causal" if "-causal-" in k else "non-causal", "long" if long_ else "short"), []).append((g, k))
    print(f"  {k:44s} " + "  ".join(f"{rs[r]:.3f}" for r in rounds) + f"   {g:.3f}" + ("" if long_ else "  (short)"))
print("summary (rows' combined ratios):")
for (c, l), xs in sorted(groups.items()):
    lo = min(xs)
    print(f"  {c:10s} {l:5s} n={len(xs):2d} geomean {gm([x for x, _ in xs]):.3f}  min {lo[0]:.3f} ({lo[1]})  "
          f"max {max(xs)[0]:.3f}")
