#!/usr/bin/env python3
"""Session 61: call V's figures as JSON, built from the committed files in this folder.

    python3 summarize.py    (writes summary.json)

V (results/h200/s60/calls/callV.sh, two rounds of fresh processes): each process's median (us) and lowest SM clock
(MHz, with the power cap's flag) by row and kernel; the in-binary cudnn / flash-sm90 ratio by row in the processes
that ran both (`ab`: flash-sm90 first, `ba`: cudnn first, `clean`: FB_L2_FLUSH=clean); the range over processes of
each kernel's medians at each GQA row, by loop (flashbench's under each flush, peers.py's torch-cudnn under each);
the 16 x 16 N = 1024 d = 128 causal row's reading in `short` (last of eight cases) and `short12` (eighth of twelve);
from smi.csv the SM clock's range and the most power over the samples drawing more than 150 W.
"""
import csv
import glob
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def row_name(c):
    return f"{c['batch']}x{c['heads']}/{c['kv_heads']} n{c['seq_q']} d{c['head_dim']} " \
           f"{'causal' if c['causal'] else 'full'}"


def processes():
    procs = {}
    for path in sorted(glob.glob(os.path.join(HERE, "V", "*-[0-9].json"))):
        meds = {}
        for r in json.load(open(path))["results"]:
            if not r.get("time_ms"):
                continue
            clk = r.get("clocks") or {}
            meds.setdefault(row_name(r["case"]), {})[r["kernel"]] = {
                "median_us": round(r["time_ms"]["median"] * 1e3, 1), "sm_mhz_min": clk.get("sm_mhz_min"),
                "sw_power_cap": "sw_power_cap" in clk.get("event_reasons", [])}
        procs[os.path.basename(path)[:-5]] = meds
    return procs


def main():
    procs = processes()
    ratios = {name: {row: round(k["cudnn"]["median_us"] / k["flash-sm90"]["median_us"], 3)
                     for row, k in meds.items() if "cudnn" in k and "flash-sm90" in k}
              for name, meds in procs.items() if name.split("-")[0] in ("ab", "ba", "clean")}
    loops = {"flashbench, write flush": ("ab", "ba"), "flashbench, clean flush": ("clean",),
             "peers.py, write flush": ("pe",), "peers.py, clean flush": ("peclean",)}
    ranges = {}
    for loop, prefixes in loops.items():
        for name, meds in procs.items():
            if name.split("-")[0] not in prefixes:
                continue
            for row, kernels in meds.items():
                for kernel, m in kernels.items():
                    lo, hi = ranges.setdefault(loop, {}).setdefault(row, {}).get(kernel, (m["median_us"],) * 2)
                    ranges[loop][row][kernel] = (min(lo, m["median_us"]), max(hi, m["median_us"]))
    causal = "16x16/16 n1024 d128 causal"
    position = {name: procs[name][causal]["flash-sm90"] for name in procs if name.split("-")[0] in ("short", "short12")}
    smi = [r for r in csv.reader(open(os.path.join(HERE, "V", "smi.csv")), skipinitialspace=True)][1:]
    busy = [(int(r[1].split()[0]), float(r[2].split()[0])) for r in smi if len(r) >= 5 and float(r[2].split()[0]) > 150]
    s = {"processes": procs, "cudnn_over_flash_sm90": ratios,
         "range_us_by_loop": {loop: {row: {k: list(v) for k, v in ks.items()} for row, ks in rows.items()}
                              for loop, rows in ranges.items()},
         "causal_row_by_position": position,
         "smi_busy": {"samples": len(busy), "sm_mhz_min": min(m for m, _ in busy),
                      "sm_mhz_max": max(m for m, _ in busy), "power_w_max": max(w for _, w in busy)}}
    with open(os.path.join(HERE, "summary.json"), "w") as f:
        json.dump(s, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
