#!/usr/bin/env python3
"""Session 65: the figures of calls J, K and G (flashbench run --interleave on an H100) in one file:

    python3 summary.py RESULTS_DIR OUT.json

RESULTS_DIR holds the calls' folders (J: bf16, K: fp16, G: GQA; each with I/ and, for J and K, B/ of
peers-GRID-ROUND.json, flashbench's files of two rounds; agree.json; paired.json; gate/ the compares of one round
against the other). Per call, timing and round: flash-sm90 against the in-binary cudnn (cudnn's median / ours) over
the grid, its lowest and highest rows, the geometric mean and the rows >= 1.0; then agree.json's round gaps,
paired.json's verdict counts and the rows behind, and per compare file whether the gate failed and its rows flagged.
"""
import glob
import json
import math
import os
import sys


def ratios(path):
    med = {}
    for r in json.load(open(path))["results"]:
        t = r.get("time_ms") or {}
        if r.get("status") == "ok" and t.get("median") and r.get("verified") is not False:
            med.setdefault(r["key"], {})[r["kernel"]] = t["median"]
    return {k: m["cudnn"] / m["flash-sm90"] for k, m in med.items() if "cudnn" in m and "flash-sm90" in m}


def grid_figures(rs):
    v = sorted(rs.values())
    lo, hi = min(rs, key=rs.get), max(rs, key=rs.get)
    return {"rows": len(v), "min": round(v[0], 3), "min_row": lo, "max": round(v[-1], 3), "max_row": hi,
            "geomean": round(math.exp(sum(map(math.log, v)) / len(v)), 3), "at_least_1": sum(x >= 1.0 for x in v)}


def main(root, out):
    doc = {"device": None, "commit": None, "calls": {}}
    for call in ("J", "K", "G"):
        d = os.path.join(root, call)
        if not os.path.isdir(d):
            continue
        c = {"timings": {}}
        for timing in ("I", "B"):
            for f in sorted(glob.glob(os.path.join(d, timing, "peers-*-[12].json"))):
                res = json.load(open(f))
                doc["device"] = res["device"].get("name")
                doc["commit"] = res["tool"].get("git")
                c["timings"].setdefault(timing, {})[os.path.basename(f)] = dict(
                    grid_figures(ratios(f)), rep_order=res["settings"].get("rep_order"))
        c["agree"] = json.load(open(os.path.join(d, "agree.json")))
        p = json.load(open(os.path.join(d, "paired.json")))
        c["paired"] = {pair: {"counts": v["counts"], "behind": {k: v["rows"][k] for k in v["behind"]}}
                       for pair, v in p["pairs"].items()}
        doc["calls"][call] = c
    gates = {}
    for f in sorted(glob.glob(os.path.join(root, "gate", "*.json"))):
        g = json.load(open(f))
        gates[os.path.basename(f)] = {
            "failed": g["failed"],
            "flagged": [[r["key"], r["kernel"], r["verdict"], round(r["new_median_ms"] / r["base_median_ms"], 3)]
                        for r in g["rows"] if r["verdict"] in ("regression", "slower_noise")]}
    doc["gate"] = gates
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: summary.py RESULTS_DIR OUT.json")
    main(sys.argv[1], sys.argv[2])
