#!/usr/bin/env python3
"""Call P's clock windows: for each round, the time flash_sm90 was timed at the fp16 d = 64 N = 512 causal forward
(from the log line before its own to its own: peers.py prints a kernel's line once its reps are done) and the 50 ms
nvidia-smi samples inside it (SM clock, power, event reasons). Writes clock-windows.json beside this script.

    python3 results/h100/s63/P/clock_windows.py
"""
import csv
import glob
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
KEY = "b32-h32-kv32-n512-d64-fp16-causal-fwd flash_sm90:"


def seconds(hms):
    h, m, s = hms.split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


samples = []
with open(os.path.join(HERE, "smi50.csv")) as f:
    for row in csv.reader(f):
        if len(row) < 5 or not re.match(r"\d{4}/", row[0]):
            continue
        samples.append((seconds(row[0].split()[1]), int(row[1].split()[0]), float(row[2].split()[0]), row[4].strip()))
out = {}
for log in sorted(glob.glob(os.path.join(HERE, "peers-*.log"))):
    lines = open(log).read().splitlines()
    i = next(n for n, l in enumerate(lines) if KEY in l)
    start, end = seconds(lines[i - 1].split()[0]), seconds(lines[i].split()[0])
    inside = [s for s in samples if start <= s[0] <= end]
    out[os.path.basename(log)[len("peers-"):-len(".log")]] = {
        "window": [lines[i - 1].split()[0], lines[i].split()[0]],
        "flash_sm90_ms": float(lines[i].split()[-2]),
        "samples": len(inside),
        "sm_mhz": [min(s[1] for s in inside), max(s[1] for s in inside)] if inside else None,
        "sm_mhz_mean": round(sum(s[1] for s in inside) / len(inside)) if inside else None,
        "power_w": [min(s[2] for s in inside), max(s[2] for s in inside)] if inside else None,
        "event_reasons": sorted({s[3] for s in inside}),
    }
with open(os.path.join(HERE, "clock-windows.json"), "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
print(json.dumps(out, indent=1))
