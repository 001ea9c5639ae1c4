#!/usr/bin/env python3
"""ncu's details pages (CSV) of kernel pairs side by side: every metric both have and the pair's ratio (second /
first). Prepared for session 27's call F (not run); run in session 28's call A.

    python3 ncu_pairs.py DIR [A:B ...]   (A.csv, B.csv in DIR; default fwd-torch:fwd-flash bwd-mha:bwd-mqa)
"""
import csv
import os
import sys

d = sys.argv[1]


def metrics(name):
    path = os.path.join(d, name + ".csv")
    out = {}
    try:
        rows = list(csv.reader(open(path)))
    except OSError:
        return out
    head = None
    for r in rows:
        if "Metric Name" in r:
            head = r
            continue
        if head and len(r) > head.index("Metric Value"):  # rows without a rule stop short of the header
            row = dict(zip(head, r))
            key = f"{row.get('Section Name', '')} | {row['Metric Name']} [{row.get('Metric Unit', '')}]"
            out.setdefault(key, row["Metric Value"])
    return out


def num(x):
    try:
        return float(x.replace(",", ""))
    except ValueError:
        return None


pairs = [p.split(":") for p in sys.argv[2:]] or [("fwd-torch", "fwd-flash"), ("bwd-mha", "bwd-mqa")]
for a, b in pairs:
    ma, mb = metrics(a), metrics(b)
    print(f"=== {a} -> {b} ({len(ma)} / {len(mb)} metrics)")
    for k in ma:
        if k in mb:
            x, y = num(ma[k]), num(mb[k])
            ratio = f"{y / x:7.3f}" if x and y is not None and x != 0 else "      -"
            print(f"  {k[:95]:95s} {ma[k]:>14s} {mb[k]:>14s} {ratio}")
