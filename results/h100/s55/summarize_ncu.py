#!/usr/bin/env python3
"""Session 55: calls S and B's ncu figures and call L's profiler readings as JSON, built from the committed pages and
logs in this folder.

    python3 summarize_ncu.py    (writes S/ncu-summary.json, B/ncu-summary.json and L/probe-summary.json)

S: per profile (ours / cudnn at N = 512 / 1024) the elapsed cycles and duration (details.txt), the warp samples in
all and at the work tile's start waits named in docs/perf-notes.md (source-sass.csv rows by index), and the fit
samples = a + steps x b over the two rows. B: per row the duration of every launch of one backward (light-*.txt).
"""
import csv
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))


def details(path):
    out = {}
    for line in open(path):
        m = re.match(r"\s+(Elapsed Cycles|Duration)\s+(\S+)\s+([\d,.]+)", line)
        if m and m.group(1) not in out:
            out[m.group(1)] = (float(m.group(3).replace(",", "")), m.group(2))
    return {"elapsed_cycles": out["Elapsed Cycles"][0],
            "duration_us": out["Duration"][0] * (1000.0 if out["Duration"][1] == "ms" else 1.0)}


def samples(path):
    rows = list(csv.reader(open(path)))
    hdr, data = rows[1], rows[2:]
    col = hdr.index("Warp Stall Sampling (All Samples)")
    return [float(r[col].replace(",", "") or 0) for r in data if len(r) == len(hdr)]


def main():
    s = {}
    for side in ("ours", "cudnn"):
        for n in (512, 1024):
            d = os.path.join(HERE, "S", f"{side}-n{n}")
            per = samples(os.path.join(d, "source-sass.csv"))
            s[f"{side}-n{n}"] = {**details(os.path.join(d, "details.txt")), "warp_samples": sum(per)}
            if side == "ours":  # the tile-start waits: Q full (SASS row 84), K_0 full (161), the turn barrier (182)
                s[f"{side}-n{n}"]["tile_start_samples"] = {"q_full": per[84], "k0_full": per[161], "turn": per[182]}
    for side in ("ours", "cudnn"):
        a512, a1024 = s[f"{side}-n512"]["warp_samples"], s[f"{side}-n1024"]["warp_samples"]
        b = (a1024 - a512) / 4  # 8 against 4 K/V steps a tile, 2048 tiles both
        c512, c1024 = s[f"{side}-n512"]["elapsed_cycles"], s[f"{side}-n1024"]["elapsed_cycles"]
        cb = (c1024 - c512) / 15.5 / 4  # cycles a K/V step, 2048 tiles = 15.5 a block on 132 SMs
        s[f"{side}-fit"] = {"samples_per_step": b, "samples_fixed": a512 - 4 * b,
                            "cycles_per_step": cb, "cycles_per_tile_fixed": c512 / 15.5 - 4 * cb}
    json.dump(s, open(os.path.join(HERE, "S", "ncu-summary.json"), "w"), indent=1)

    b = {}
    for row in ("b1-h16-kv16", "b1-h32-kv8", "b1-h32-kv1"):
        launches, name = [], None
        for line in open(os.path.join(HERE, "B", f"light-{row}.txt")):
            m = re.search(r"(\w+_kernel)\b", line)
            if m and "Context" in line:
                name = m.group(1)
            m = re.match(r"\s+Duration\s+(\S+)\s+([\d,.]+)", line)
            if m and name:
                us = float(m.group(2).replace(",", "")) * (1000.0 if m.group(1) == "ms" else 1.0)
                launches.append({"kernel": name, "duration_us": us})
                name = None
        b[row] = [x for x in launches if "fill_normal" not in x["kernel"]]
    json.dump(b, open(os.path.join(HERE, "B", "ncu-summary.json"), "w"), indent=1)

    # L: cudnn_kernels.py's stdout a round: each kernel's profiler median, then the reps without any hold.
    probes = {}
    for r in (1, 2, 3):
        got = {"kernels": {}}
        for line in open(os.path.join(HERE, "L", f"probe-{r}.log")):
            m = re.match(r"kernel (\S+)\s+x(\d+)\s+median ([\d.]+) us", line)
            if m:
                got["kernels"][m.group(1)] = float(m.group(3))
            m = re.match(r"reps: median ([\d.]+) ms, min ([\d.]+), max ([\d.]+)", line)
            if m:
                got["reps_ms"] = {"median": float(m.group(1)), "min": float(m.group(2)), "max": float(m.group(3))}
        probes[f"round-{r}"] = got
    json.dump(probes, open(os.path.join(HERE, "L", "probe-summary.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
