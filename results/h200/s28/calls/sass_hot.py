#!/usr/bin/env python3
"""Session 28's call A: ncu's source page (CSV, SASS) of one kernel: executed instructions and warp-stall samples by
opcode, then the hottest instructions by stall samples.

    python3 sass_hot.py FILE.csv [TOP]
"""
import collections
import csv
import sys

path = sys.argv[1]
top = int(sys.argv[2]) if len(sys.argv) > 2 else 30
rows = list(csv.reader(open(path, errors="replace")))
head = next((r for r in rows if any(c.strip() == "Source" for c in r)), None)
if head is None:
    sys.exit(f"{path}: no Source column")
idx = {c.strip(): i for i, c in enumerate(head)}


def col(*names):
    for n in names:
        for k, i in idx.items():
            if k.startswith(n):
                return i
    return None


c_src = idx["Source"]
c_exec = col("Instructions Executed")
c_samp = col("Warp Stall Sampling (All Samples)", "Warp Stall Sampling (All")
c_addr = col("Address")


def num(r, c):
    if c is None or c >= len(r):
        return 0.0
    try:
        return float(r[c].replace(",", "") or 0)
    except ValueError:
        return 0.0


body = [r for r in rows[rows.index(head) + 1:] if len(r) > c_src]
ops = collections.defaultdict(lambda: [0, 0.0, 0.0])
for r in body:
    toks = r[c_src].split()
    if toks and toks[0].startswith("@"):
        toks = toks[1:]
    op = toks[0].split(".")[0] if toks else "?"
    o = ops[op]
    o[0] += 1
    o[1] += num(r, c_exec)
    o[2] += num(r, c_samp)
te = sum(o[1] for o in ops.values()) or 1
ts = sum(o[2] for o in ops.values()) or 1
print(f"{path}: {len(body)} SASS lines, {te:.4g} warp-instructions executed, {ts:.4g} stall samples")
print(f"  {'opcode':10s} {'lines':>6s} {'executed':>12s} {'exec%':>6s} {'samples':>9s} {'samp%':>6s}")
for op, (n, e, s) in sorted(ops.items(), key=lambda kv: -kv[1][2])[:top]:
    print(f"  {op:10s} {n:6d} {e:12.4g} {100 * e / te:6.2f} {s:9.0f} {100 * s / ts:6.2f}")
print("  hottest lines:")
for r in sorted(body, key=lambda r: -num(r, c_samp))[:top]:
    a = r[c_addr] if c_addr is not None else ""
    print(f"  {a:>8s} {num(r, c_samp):8.0f} {num(r, c_exec):10.4g}  {r[c_src][:90]}")
