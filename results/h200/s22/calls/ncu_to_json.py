#!/usr/bin/env python3
"""Session 22: the ncu CSV logs of calls A, D and E as one JSON file per call folder (ncu-summary.json), so that the
figures the notes quote from them come from a committed JSON with the device, the settings and the build commit.
Each launch: its log, position, kernel name, and every metric ncu printed for it (in ncu's unit and as a plain
number). Run from the repository root: python3 results/h200/s22/calls/ncu_to_json.py"""
import csv, json, os

ROOT = "results/h200/s22"
CALLS = {
    "callA": {"logs": ["ncudram.log", "fp32/ncu-default.log", "fp32/ncu-fp16pair128w2f.log"],
              "settings": "ncu (default clock control: base clocks) --csv, one flash-sm90 fp32 backward of "
                          "b16-h16-kv16-n1024-d128-fp32-full-bwd per log (ncudram.log: the w2 kernel alone under "
                          "each block-order word, in the order of its '== word' lines; fp32/ncu-*.log: every launch "
                          "of one run, the default and fp16pair128w2f)"},
    "callD": {"logs": sorted(f for f in os.listdir(os.path.join(ROOT, "callD")) if f.startswith("ncu-")),
              "settings": "ncu --clock-control none --csv, one bwd run (--warmup 0 --reps 1) of flash-sm90 or the "
                          "in-binary cudnn per log; rows: ncu-<row>-<kernel>.log"},
    "callE": {"logs": ["ncu-torch-cudnn.log"],
              "settings": "ncu --clock-control none --csv of scripts/peers.py --backends cudnn on "
                          "results/h200/s22/calls/peer-n1k.json (the attention kernels by name, 16 launches)"},
}


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def launches(path):
    out, label = {}, None
    with open(path) as f:
        for line in f:
            if line.startswith("== "):  # ncudram.log: '== <word>' before each word's launches
                label = line[3:].strip()
                continue
            if not line.startswith('"'):
                continue
            r = next(csv.reader([line]))
            if len(r) < 15 or not r[0].isdigit():
                continue
            key = (label, int(r[0]))
            e = out.setdefault(key, {"setting": label, "id": int(r[0]), "kernel": r[4], "block": r[7], "grid": r[8],
                                     "metrics": {}})
            e["metrics"][r[-3]] = {"unit": r[-2], "value": number(r[-1])}
    return list(out.values())


for call, spec in CALLS.items():
    folder = os.path.join(ROOT, call)
    commit = open(os.path.join(folder, "commit.txt")).read().strip() if os.path.exists(
        os.path.join(folder, "commit.txt")) else None
    doc = {"device": "NVIDIA H200 (sm_90, 132 SMs), the session's device tool", "call": call, "commit": commit,
           "settings": spec["settings"], "logs": {}}
    for log in spec["logs"]:
        doc["logs"][log] = launches(os.path.join(folder, log))
    with open(os.path.join(folder, "ncu-summary.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(call, {k: len(v) for k, v in doc["logs"].items()})
