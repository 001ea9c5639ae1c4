#!/usr/bin/env python3
"""Session 29 call E's inline steps E2 / E3: the portable forward's times by N under probe words (geomean of the
rounds' medians, verified rows only) and each word's speed over the first's (first time / word time).

    python3 ragged_table.py DIR WORD...   (DIR holds WORD-*-R.json)
"""
import glob
import json
import math
import re
import sys

d, words = sys.argv[1], sys.argv[2:]
acc = {}
for w in words:
    for f in sorted(glob.glob(f"{d}/{w}-*-[0-9].json")):
        for r in json.load(open(f))["results"]:
            if r["kernel"] == "flash" and r["status"] == "ok" and r.get("verified") is True:
                acc.setdefault((w, r["key"]), []).append(r["time_ms"]["median"] * 1e3)
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))
keys = sorted({k for _, k in acc}, key=lambda k: int(re.search(r"-n(\d+)-", k).group(1)))
print("us (geomean of the rounds' medians, rounds in brackets); speed over " + words[0] + " (its time / the word's)")
print(f"{'case':40s} " + " ".join(f"{w:>16s}" for w in words))
for k in keys:
    base = acc.get((words[0], k))
    cells = []
    for w in words:
        v = acc.get((w, k))
        cells.append(f"{gm(v):7.1f}({len(v)}) {gm(base) / gm(v):5.3f}" if v and base else f"{'-':>16s}")
    print(f"{k:40s} " + " ".join(f"{c:>16s}" for c in cells))
