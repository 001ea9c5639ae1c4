#!/usr/bin/env python3
"""Call H's rule (docs/perf-notes.md, "Session 44", written before the call) over the rows it names: those that split.

    python3 results/h200/s46/h_split_rule.py results/h200/s46/H

A row splits where its workspace as built differs from its workspace under FB_SM90_BWD_SPLIT=1 (H/split.txt, listed
in the call); the rows' ratios come from H/rule-all.json (scripts/ab_rule.py over every row the call ran, the controls
beside them). Prints the split rows, their geomean and minimum, the controls and the verdict (exit 0 met, 1 not)."""
import json
import math
import re
import sys


def main():
    call = sys.argv[1]
    split = set()
    for line in open(f"{call}/split.txt"):
        # "SPEC: built I CASE MEM MiB | split=1: I CASE MEM MiB"
        m = re.match(r"\S+: built \d+ (\S+) ([\d.]+) MiB \| split=1: \d+ \S+ ([\d.]+) MiB", line)
        if m and m.group(2) != m.group(3):
            split.add(m.group(1))
    rule = json.load(open(f"{call}/rule-all.json"))
    rows = [r for r in rule["rows"] if r["role"] == "row" and r["key"] in split]
    controls = [r for r in rule["rows"] if r["role"] == "control"]
    reasons = []
    for r in rows:
        print(f"  row     {r['key']:<40} {r['ratio']:.4f}")
        if r["ratio"] < 0.99:
            reasons.append(f"row {r['key']} reads {r['ratio']:.4f}, below 0.99")
        reasons += [f"row {r['key']}: {p}" for p in r["problems"]]
    for r in controls:
        print(f"  control {r['key']:<40} {r['ratio']:.4f}")
        if not 0.99 <= r["ratio"] <= 1.01:
            reasons.append(f"control {r['key']} reads {r['ratio']:.4f}, outside 0.99-1.01")
    gm = math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows))
    print(f"split rows: {len(rows)}, geomean {gm:.4f} ({min(r['ratio'] for r in rows):.3f}-"
          f"{max(r['ratio'] for r in rows):.3f}); controls: {len(controls)}")
    if gm < 1.01:
        reasons.append(f"the split rows' geomean {gm:.4f} is below 1.01")
    print("verdict: " + ("NOT MET" if reasons else "MET"))
    for r in reasons:
        print("  - " + r)
    return 1 if reasons else 0


if __name__ == "__main__":
    sys.exit(main())
