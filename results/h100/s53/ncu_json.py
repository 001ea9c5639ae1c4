#!/usr/bin/env python3
"""Calls U and Z of session 53 printed their ncu tables as text (ncu-summary.txt); this writes the same launches as
JSON beside them (FOLDER/ncu-summary.json), from the committed ncu logs, so that the figures quoted from them stand
in a JSON file: per log, every launch's kernel name, time (us) and DRAM bytes read / written (MiB).

    python3 results/h100/s53/ncu_json.py results/h100/s53/U results/h100/s53/Z
"""
import csv
import glob
import io
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "scripts"))
import ncu_bytes  # noqa: E402  (the repo's ncu CSV reader: bytes)

TIME_US = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}


def launches(text):
    times = {}
    lines = text.splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith('"ID",'))
    for r in csv.DictReader(io.StringIO("\n".join(l for l in lines[head:] if not l.startswith("==")))):
        if r["Metric Name"] == "gpu__time_duration.sum":
            times[int(r["ID"])] = float(r["Metric Value"].replace(",", "")) * TIME_US[r["Metric Unit"]]
    return [{"kernel": l["kernel"], "time_us": round(times[l["id"]], 3),
             "dram_read_mib": round(l["metrics"][ncu_bytes.READ] / 2**20, 3),
             "dram_write_mib": round(l["metrics"][ncu_bytes.WRITE] / 2**20, 3)}
            for l in ncu_bytes.parse_ncu_csv(text)]


for folder in sys.argv[1:]:
    out = {"device": "NVIDIA H100 80GB HBM3", "commit": open(os.path.join(folder, "commit.txt")).read().strip(),
           "source": "the ncu-*.log files of this folder (ncu --clock-control none --csv)", "launches": {}}
    for f in sorted(glob.glob(os.path.join(folder, "ncu-*.log"))):
        out["launches"][os.path.basename(f)[4:-4]] = launches(open(f).read())
    json.dump(out, open(os.path.join(folder, "ncu-summary.json"), "w"), indent=1)
    print(f"{folder}/ncu-summary.json: {len(out['launches'])} logs")
