#!/usr/bin/env python3
"""Session 18: the clock and ncu figures a call's notes quote, as JSON (summary.json beside each job's table).

Parses what the jobs left (nvidia-smi samples smi.csv, run windows windows.txt, the timed runs' JSON, ncu CSV logs)
with the same rule as the jobs' tables: a run's clock and power are the medians of the samples after its first 0.7 s
and before its last 0.2 s.
  python3 results/h200/s18/calls/summarize18.py JOBDIR "what" "script" "call"
"""
import csv, glob, json, os, statistics, sys
from datetime import datetime

job, what, script, call = sys.argv[1:5]
samples = []
smi = os.path.join(job, "smi.csv")
for r in csv.reader(open(smi) if os.path.exists(smi) else []):
    try:
        samples.append((datetime.strptime(r[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp(), float(r[1]),
                        float(r[2]), r[4].strip()))
    except (ValueError, IndexError):
        pass
windows = {}
win = os.path.join(job, "windows.txt")
for line in open(win) if os.path.exists(win) else []:
    p = line.split()
    if p[0].isdigit():  # "N name start|end T [rc=..]"
        name, edge, t = f"{p[0]}-{p[1]}", p[2], float(p[3])
    else:  # "name start|end T"
        name, edge, t = p[0], p[1], float(p[2])
    windows.setdefault(name, {})[edge] = t
clocks = []
for name, w in windows.items():
    s = [x for x in samples if w.get("start", 0) + 0.7 <= x[0] <= w.get("end", 0) - 0.2]
    us = None
    for j in glob.glob(os.path.join(job, f"{name}.json")):
        try:
            us = 1000 * json.load(open(j))["results"][0]["time_ms"]["median"]
        except (OSError, KeyError, IndexError, ValueError):
            pass
    clocks.append({"run": name, "median_us": us, "smi_samples": len(s),
                   "sm_mhz_median": statistics.median(x[1] for x in s) if s else None,
                   "power_w_median": statistics.median(x[2] for x in s) if s else None,
                   "throttle_reasons": sorted({x[3] for x in s})})
ncu = {}
for p in sorted(glob.glob(os.path.join(job, "ncu-*.log")) + glob.glob(os.path.join(job, "ncu-*.csv"))):
    tag = os.path.basename(p)[4:].rsplit(".", 1)[0]
    for r in csv.reader(open(p)):
        if len(r) > 14 and r[0].isdigit() and r[0] == "0":
            d = ncu.setdefault(tag, {"kernel": r[4], "block": r[7], "grid": r[8]})
            try:
                d[r[12]] = float(r[14].replace(",", ""))
            except ValueError:
                d[r[12]] = r[14]
json.dump({"what": what, "script": script, "call": call, "clocks": clocks, "ncu": ncu},
          open(os.path.join(job, "summary.json"), "w"), indent=1)
print(f"{job}/summary.json: {len(clocks)} clock runs, {len(ncu)} ncu launches")
