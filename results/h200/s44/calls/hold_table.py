#!/usr/bin/env python3
"""Session 44 call G's table: the peers timed with and without peers.py's launch hold, beside flashbench.

    hold_table.py DIR     (DIR/fb-SPEC-R.json, DIR/hold-SPEC-R.json, DIR/nohold-SPEC-R.json)

Per row (case x peer): the peer's median time without / with the hold (above 1: the hold's timing is shorter, the
time the GPU waited for PyTorch's host), its median / min spread each way, and ours against it each way (peer time /
ours: flash-sm90 against torch-cudnn, flash against torch-flash), each the geometric mean over the rounds. A case
that flashbench did not verify gets no ratio."""
import glob
import json
import math
import os
import re
import sys

PAIRS = {"torch-cudnn": "flash-sm90", "torch-flash": "flash"}


def load(path):
    with open(path) as f:
        return {(r["key"], r["kernel"]): r for r in json.load(f)["results"] if r["status"] == "ok"}


def gmean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(d):
    runs = {}  # (spec, round) -> {what: records}
    for path in glob.glob(os.path.join(d, "*.json")):
        m = re.match(r"(fb|hold|nohold)-(.+)-(\d+)\.json$", os.path.basename(path))
        if m:
            runs.setdefault((m.group(2), int(m.group(3))), {})[m.group(1)] = load(path)
    rows = {}  # (key, peer) -> lists
    for (spec, rnd), got in sorted(runs.items()):
        if len(got) < 3:
            print(f"{spec} round {rnd}: only {sorted(got)}", file=sys.stderr)
            continue
        for (key, kernel), h in got["hold"].items():
            n = got["nohold"].get((key, kernel))
            ours = got["fb"].get((key, PAIRS.get(kernel, "")))
            if n is None:
                continue
            row = rows.setdefault((key, kernel), {"t": [], "sh": [], "sn": [], "rh": [], "rn": []})
            th, tn = h["time_ms"]["median"], n["time_ms"]["median"]
            row["t"].append(tn / th)
            row["sh"].append(th / h["time_ms"]["min"])
            row["sn"].append(tn / n["time_ms"]["min"])
            if ours and ours.get("verified"):
                to = ours["time_ms"]["median"]
                row["rh"].append(th / to)
                row["rn"].append(tn / to)
    print(f"{'case':44s} {'peer':12s} {'nohold/hold':>11s} {'med/min h':>9s} {'med/min n':>9s} "
          f"{'ours/peer h':>11s} {'ours/peer n':>11s}  rounds")
    for (key, peer), r in sorted(rows.items()):
        print(f"{key:44s} {peer:12s} {gmean(r['t']):11.3f} {gmean(r['sh']):9.3f} {gmean(r['sn']):9.3f} "
              f"{gmean(r['rh']):11.3f} {gmean(r['rn']):11.3f}  {len(r['t'])}")
    for peer in PAIRS:
        ts = [gmean(r["t"]) for (k, p), r in rows.items() if p == peer]
        rh = [gmean(r["rh"]) for (k, p), r in rows.items() if p == peer and r["rh"]]
        rn = [gmean(r["rn"]) for (k, p), r in rows.items() if p == peer and r["rn"]]
        if ts:
            print(f"{peer}: nohold/hold {min(ts):.3f}-{max(ts):.3f} (geomean {gmean(ts):.3f}) on {len(ts)} rows; "
                  f"{PAIRS[peer]} vs it {min(rh):.3f}-{max(rh):.3f} (geomean {gmean(rh):.3f}) with the hold, "
                  f"{min(rn):.3f}-{max(rn):.3f} (geomean {gmean(rn):.3f}) without" if rh and rn else
                  f"{peer}: nohold/hold {min(ts):.3f}-{max(ts):.3f} on {len(ts)} rows")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
