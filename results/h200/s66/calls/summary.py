#!/usr/bin/env python3
"""Session 66's calls in figures: each variant's paired ratio (its kernel's rep / the variant's rep: above 1.0 the
variant is faster; a pair written KERNEL:VARIANT the other way round) per row, pooled over a call's two processes
(each paired*.json of paired.py) and in each process alone, and how far the two processes' medians lie apart; and
the peers' pairs (paired-peers*.json: flash against FlashAttention-2).

    python3 results/h200/s66/calls/summary.py results/h100/s66/{A,B,C,D} > results/h100/s66/summary.json
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


def summarize(call):
    out = {"commit": open(os.path.join(call, "commit.txt")).read().strip(), "device": None, "sets": {}, "peers": {}}
    for name in sorted(glob.glob(os.path.join(call, "paired-peers*.json"))):
        # peers.py's files: flash (the C API callable) against FlashAttention-2, rep by rep
        for pair, body in json.load(open(name))["pairs"].items():
            out["peers"][os.path.basename(name)[len("paired-peers"):-len(".json")].lstrip("-") or "shipped"] = {
                "pair": pair, "rows": {k: {"median": round(r["median"], 4), "interval": [round(r["low"], 4),
                                                                                       round(r["high"], 4)]}
                                       for k, r in body["rows"].items()}}
    for name in sorted(glob.glob(os.path.join(call, "paired*.json"))):
        if os.path.basename(name).startswith("paired-peers"):
            continue
        pooled = json.load(open(name))
        files = [os.path.join(call, "ab", os.path.basename(f)) for f in pooled["files"]]
        first = json.load(open(files[0]))
        out["device"] = first["device"]["name"]
        table = {}
        for pair, body in pooled["pairs"].items():
            variant, kernel = pair.split(":")
            per_process = {"1": {}, "2": {}}
            for f in files:
                per_process[f.rsplit("-", 1)[1][0]].update(paired_median(f, variant, kernel))
            rows = {}
            for key, st in body["rows"].items():
                m1, m2 = per_process["1"].get(key), per_process["2"].get(key)
                rows[key] = {"median": round(st["median"], 4), "interval": [round(st["low"], 4), round(st["high"], 4)],
                             "verdict": st["verdict"], "n": st["n"],
                             "process_1": round(m1, 4), "process_2": round(m2, 4),
                             "process_gap_pct": round(abs(m1 / m2 - 1) * 100, 2)}
            meds = [r["median"] for r in rows.values()]
            defined = first["settings"]["variants"]
            table[pair] = {"variant": variant if variant in defined else kernel,
                           "env": defined[variant if variant in defined else kernel]["env"],
                           "lowest": min(meds), "highest": max(meds),
                           "geomean": round(math.exp(sum(math.log(m) for m in meds) / len(meds)), 4),
                           "counts": body["counts"], "rows": rows}
        out["sets"][os.path.basename(name)[len("paired"):-len(".json")].lstrip("-") or "ab"] = table
    return out


def main():
    out = {"ratio": "the kernel's rep / the variant's rep, paired, median (> 1.0: the variant is faster)",
           "calls": {os.path.basename(os.path.normpath(c)): summarize(c) for c in sys.argv[1:]}}
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
