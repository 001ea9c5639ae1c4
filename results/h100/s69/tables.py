#!/usr/bin/env python3
"""The README's per-row tables of session 69's grids (calls W and G), from the committed files only.

    python3 results/h100/s69/tables.py [DIR]    # DIR: results/h100/s69 (default: this script's folder)

Reads W/summary.json, G/summary.json (w_summary.py: each round's medians in microseconds and ratios, their geometric
means over the rounds) and W/paired-bf16.json, W/paired-fp16.json, G/paired-gqa.json (scripts/paired.py: the median of
a row's paired rep-by-rep ratios with its 95% order-statistics interval and a verdict). Prints markdown: one table per
grid and pass, one row per case. A time is the geometric mean of the two rounds' medians; "rounds" the geometric mean
of the rounds' ratios (peer time / ours: above 1, ours is faster); "rep by rep" the paired median [interval] and its
verdict where it is not `ahead`.
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 3, "scripts"))
from ratios import geomean  # noqa: E402

PAIRS = (("torch-cudnn", "flash_sm90"), ("torch-flash", "flash"))
GRID_NAMES = {"gqa": "GQA / MQA (d = 128, bf16)"}
CASE = re.compile(r"b(\d+)-h(\d+)-kv(\d+)-n(\d+)-d(\d+)-(\w+)-(causal|full)-(fwd|bwd)$")


def load(path):
    with open(path) as f:
        return json.load(f)


def cell_time(entry, case, kernel):
    us = [entry["rounds"][r]["us"][case][kernel] for r in entry["rounds"]]
    return f"{geomean(us):.1f}"


def cell_pair(entry, paired_rows, case):
    ratio = entry["over_rounds"]["ratio"][case]
    p = paired_rows[case]
    verdict = "" if p["verdict"] == "ahead" else f" {p['verdict']}"
    return f"{ratio:.3f}", f"{p['median']:.3f} [{p['low']:.3f}, {p['high']:.3f}]{verdict}"


def tables(summary, paired, grid):
    entries = [summary["grids"][f"{grid}/{peer}:{ours}"] for peer, ours in PAIRS]
    rows = [paired["pairs"][f"{ours}:{peer}"]["rows"] for peer, ours in PAIRS]
    def order(c):
        b, h, kv, n, d, _, mask, _ = CASE.match(c).groups()
        return int(d), mask == "causal", -int(h), -int(kv), int(n)

    cases = sorted(entries[0]["over_rounds"]["ratio"], key=order)
    out = []
    for pass_ in ("fwd", "bwd"):
        out.append(f"\n{GRID_NAMES.get(grid, grid)}, {'forward' if pass_ == 'fwd' else 'backward'}:\n")
        out.append("| case | flash-sm90 µs | torch-cudnn µs | rounds | rep by rep | flash µs | FA2 µs | rounds "
                   "| rep by rep |")
        out.append("|---|---|---|---|---|---|---|---|---|")
        for c in cases:
            b, h, kv, n, d, dtype, mask, p = CASE.match(c).groups()
            if p != pass_:
                continue
            heads = f"{h} q / {kv} kv" if h != kv else f"{h} heads"
            label = f"d = {d} {'causal' if mask == 'causal' else 'full'} N = {n} ({b} × {heads})"
            cells = [label]
            for (peer, ours), e, r in zip(PAIRS, entries, rows):
                cells += [cell_time(e, c, ours), cell_time(e, c, peer), *cell_pair(e, r, c)]
            out.append("| " + " | ".join(cells) + " |")
    return out


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    w, g = load(os.path.join(base, "W/summary.json")), load(os.path.join(base, "G/summary.json"))
    lines = []
    lines += tables(w, load(os.path.join(base, "W/paired-bf16.json")), "bf16")
    lines += tables(w, load(os.path.join(base, "W/paired-fp16.json")), "fp16")
    lines += tables(g, load(os.path.join(base, "G/paired-gqa.json")), "gqa")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
