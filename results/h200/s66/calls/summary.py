#!/usr/bin/env python3
"""Session 66's call A in figures: each variant's paired ratio (flash-sm90's rep / the variant's rep: above 1.0 the
variant is faster) per row, pooled over the call's two processes (paired.py's JSON) and in each process alone, and
how far the two processes' medians lie apart.

    python3 results/h200/s66/calls/summary.py results/h100/s66/A > results/h100/s66/summary.json
"""
import glob
import json
import math
import os
import statistics
import sys


def paired_median(path, ours, peer):
    """Per case, the median of peer rep / ours rep over one file's rounds."""
    d = json.load(open(path))
    by = {}
    for r in d["results"]:
        by[(r["key"], r["kernel"])] = r["time_ms"]["samples"]
    out = {}
    for (key, k), s in by.items():
        if k != ours or (key, peer) not in by:
            continue
        p = by[(key, peer)]
        out[key] = statistics.median(b / a for a, b in zip(s, p))
    return out


def main():
    call = sys.argv[1]
    out = {"call": "s66/A", "device": None, "commit": open(os.path.join(call, "commit.txt")).read().strip(),
           "ratio": "flash-sm90 rep / variant rep, paired, median (> 1.0: the variant is faster)", "pass": {}}
    for pas, name, pattern in (("fwd", "paired-fwd.json", "f*"), ("bwd", "paired-bwd.json", "b2k")):
        pooled = json.load(open(os.path.join(call, name)))
        files = sorted(glob.glob(os.path.join(call, "ab", pattern + "-*.json")))
        out["device"] = json.load(open(files[0]))["device"]["name"]
        table = {}
        for pair, body in pooled["pairs"].items():
            variant = pair.split(":")[0]
            per_process = {"1": {}, "2": {}}
            for f in files:
                per_process[f.rsplit("-", 1)[1][0]].update(paired_median(f, variant, "flash-sm90"))
            rows = {}
            for key, st in body["rows"].items():
                m1, m2 = per_process["1"].get(key), per_process["2"].get(key)
                rows[key] = {"median": round(st["median"], 4), "interval": [round(st["low"], 4), round(st["high"], 4)],
                             "verdict": st["verdict"], "n": st["n"],
                             "process_1": round(m1, 4), "process_2": round(m2, 4),
                             "process_gap_pct": round(abs(m1 / m2 - 1) * 100, 2)}
            meds = [r["median"] for r in rows.values()]
            table[variant] = {"env": json.load(open(files[0]))["settings"]["variants"][variant]["env"],
                              "lowest": min(meds), "highest": max(meds),
                              "geomean": round(math.exp(sum(math.log(m) for m in meds) / len(meds)), 4),
                              "counts": body["counts"], "rows": rows}
        out["pass"][pas] = table
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
