#!/usr/bin/env python3
"""Session 27's call C: per shape, the time (us, two rounds) under each forced split, then each rule's pick
(gsplit-picks.tsv) as old time / its time (above 1: the rule faster), the mean of the rounds, and FlashAttention-2's
time over the rule's pick; last, each rule's geomean, its lowest row and the call's decision under the rule written
before it (the best geomean ships if >= 1.01 with no row below 0.98).

    python3 gsplit_table.py DIR PICKS_TSV
"""
import json
import math
import os
import sys

d, picks = sys.argv[1], sys.argv[2]


def time_us(path, peer=False):
    try:
        rs = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError):
        return None
    ok = [r for r in rs if r.get("status") == "ok" and (peer or r.get("verified") is True)]
    return 1000 * ok[0]["time_ms"]["median"] if ok else None


rules = ("R1", "R2", "R3")
ratios = {r: [] for r in rules}
for line in open(picks):
    if line.startswith("#") or not line.strip():
        continue
    s, *ks = line.split()
    old, *new = map(int, ks)
    t = {}
    for k in sorted({old, *new}):
        rounds = [time_us(os.path.join(d, f"split{k}-{s}-{r}.json")) for r in (1, 2)]
        t[k] = sum(rounds) / 2 if all(rounds) else None
        print(f"{s:22s} split {k:3d}: " + " / ".join(f"{x:.0f}" if x else "-" for x in rounds))
    ship = [time_us(os.path.join(d, f"ship-{s}-{r}.json")) for r in (1, 2)]
    print(f"{s:22s} ship (no split forced): " + " / ".join(f"{x:.0f}" if x else "-" for x in ship))
    fa2 = time_us(os.path.join(d, f"peers-{s}.json"), peer=True)
    cells = []
    for rule, k in zip(rules, new):
        if t.get(old) and t.get(k):
            ratios[rule].append((t[old] / t[k], s))
            cells.append(f"{rule} {k}: {t[old] / t[k]:.3f}")
        else:
            cells.append(f"{rule} {k}: -")
    fa = f"FA2/old {fa2 / t[old]:.3f}" if fa2 and t.get(old) else "FA2 -"
    print(f"  {s}: old {old}; " + "; ".join(cells) + f"; {fa}" +
          "".join(f"; FA2/{rule} {fa2 / t[k]:.3f}" for rule, k in zip(rules, new) if fa2 and t.get(k)))
best = None
for rule in rules:
    rs = ratios[rule]
    if not rs:
        continue
    g = math.exp(sum(math.log(x) for x, _ in rs) / len(rs))
    lo = min(rs)
    print(f"{rule}: {len(rs)} rows, geomean {g:.4f}, lowest {lo[0]:.3f} ({lo[1]})")
    if g >= 1.01 and lo[0] >= 0.98 and (best is None or g > best[1]):
        best = (rule, g)
print("decision:", f"{best[0]} ships (geomean {best[1]:.4f})" if best else "none ships")
