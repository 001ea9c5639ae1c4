#!/usr/bin/env python3
"""Session 64: how far two rounds of one grid agree, reps back to back (blocked) against reps interleaved
(peers.py --interleave), from call folders of callW.sh (peers-GRID-ROUND.json):

    python3 agree.py OUT.json NAME=DIR [NAME=DIR ...]

Per folder, grid and pair (PEER:OURS from DIR/pairs.txt): each row's ratio (the peer's median / ours) in round 1 and
round 2 (round 1 times ours after the peers in each case, round 2 before them; under --interleave both rounds take
turns, the design starting from a different kernel), and over the rows: the median and largest |log(r2 / r1)| as a
percentage (exp - 1), how many rows read >= 1.0 in one round and < 1.0 in the other, the lowest ratio of each round,
and the rows under 1.0 in both. Every figure comes from the files named; the file's settings.rep_order says which
timing ran ("blocked" where a file does not say: peers.py before session 64).
"""
import glob
import json
import math
import os
import re
import statistics
import sys


def load(path):
    doc = json.load(open(path))
    med = {}
    for r in doc["results"]:
        t = r.get("time_ms") or {}
        if r.get("status") == "ok" and t.get("median"):
            med.setdefault(r["key"], {})[r["kernel"]] = t["median"]
    return doc.get("settings", {}).get("rep_order", "blocked"), med


def pairs_of(folder):
    with open(os.path.join(folder, "pairs.txt")) as f:
        return [tuple(p.split(":")) for p in f.read().split()]


def folder_summary(folder):
    out = {}
    for f1 in sorted(glob.glob(os.path.join(folder, "peers-*-1.json"))):
        grid = re.match(r"peers-(.+)-1\.json", os.path.basename(f1)).group(1)
        f2 = f1[:-len("1.json")] + "2.json"
        if not os.path.exists(f2):
            continue
        (o1, m1), (o2, m2) = load(f1), load(f2)
        for peer, ours in pairs_of(folder):
            rows = {}
            for key in sorted(set(m1) & set(m2)):
                a, b = m1[key], m2[key]
                if peer in a and ours in a and peer in b and ours in b:
                    rows[key] = (a[peer] / a[ours], b[peer] / b[ours])
            if not rows:
                continue
            d = [abs(math.log(r2 / r1)) for r1, r2 in rows.values()]
            out[f"{grid}/{peer}:{ours}"] = {
                "rep_order": [o1, o2],
                "rows": len(rows),
                "round_gap_pct_median": round(100 * (math.exp(statistics.median(d)) - 1), 2),
                "round_gap_pct_max": round(100 * (math.exp(max(d)) - 1), 2),
                "largest_gap_row": max(rows, key=lambda k: abs(math.log(rows[k][1] / rows[k][0]))),
                "verdict_flips": sum(1 for r1, r2 in rows.values() if (r1 >= 1.0) != (r2 >= 1.0)),
                "lowest": [round(min(r[0] for r in rows.values()), 3), round(min(r[1] for r in rows.values()), 3)],
                "under_1_both": {k: [round(r1, 3), round(r2, 3)] for k, (r1, r2) in rows.items()
                                 if r1 < 1.0 and r2 < 1.0},
            }
    return out


def main(argv):
    if len(argv) < 3 or any("=" not in a for a in argv[2:]):
        print(__doc__, file=sys.stderr)
        return 2
    summary = {}
    for arg in argv[2:]:
        name, folder = arg.split("=", 1)
        summary[name] = {"folder": folder, "grids": folder_summary(folder)}
    with open(argv[1], "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    print("| call | grid / pair | reps | round gap, median / max % | flips | lowest r1 / r2 | under 1.0 in both |")
    print("|---|---|---|---|---|---|---|")
    for name, s in summary.items():
        for g, v in s["grids"].items():
            print(f"| {name} | {g} | {v['rep_order'][0]} | {v['round_gap_pct_median']} / {v['round_gap_pct_max']} | "
                  f"{v['verdict_flips']} | {v['lowest'][0]} / {v['lowest'][1]} | "
                  f"{', '.join(f'{k} {a}/{b}' for k, (a, b) in v['under_1_both'].items()) or '-'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
