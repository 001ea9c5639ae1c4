#!/usr/bin/env python3
"""Call C's rule (docs/perf-notes.md, "Session 54", written before the call): does the L2 flush's clean mode take the
process-to-process modes out of short rows' times?

    python3 clean_rule.py DIR

DIR holds fb-MODE-SPEC-I.json (flashbench, MODE write or clean, I = 1..4) and peers-MODE-I.json. For each short row
(c-b32-h8-n1024, c-b32-h16-n512), kernel (flash-sm90, the in-binary cudnn) and mode: the spread = the largest of the
four processes' medians / the smallest - 1. Met (clean becomes the default flush of flashbench and peers.py) when
every file is there with every row verified, the geomean over the four short-row cells of (spread + 0.002) under clean
is at most half that under write, and on the long control row (c-b1-h16-n16384) each kernel's clean / write time (the
geomean of its four processes' medians each way) is within 0.98-1.02. Prints a table and the verdict; writes
DIR/rule.json. torch-cudnn's spread under each mode (three processes, the N = 1024 row) is reported beside, no rule.
"""
import json
import math
import os
import sys

MODES, KERNELS = ("write", "clean"), ("flash-sm90", "cudnn")
SHORT, LONG = ("c-b32-h8-n1024", "c-b32-h16-n512"), "c-b1-h16-n16384"


def medians(d, pattern, n, kernel):
    out, missing = [], []
    for i in range(1, n + 1):
        path = os.path.join(d, pattern.format(i=i))
        try:
            recs = [r for r in json.load(open(path)).get("results", []) if r["kernel"] == kernel]
        except (OSError, ValueError):
            recs = []
        ok = [r for r in recs if r["status"] == "ok" and r.get("verified") is not False]
        if ok:
            out.append(ok[0]["time_ms"]["median"])
        else:
            missing.append(os.path.basename(path))
    return out, missing


def gm(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


def main(d):
    out, missing, spreads = {"cells": {}}, [], {m: [] for m in MODES}
    print(f"{'row / kernel':34s} " + "  ".join(f"{m:>28s}" for m in MODES))
    for s in SHORT + (LONG,):
        for k in KERNELS:
            cells = {}
            for m in MODES:
                ms, miss = medians(d, f"fb-{m}-{s}-{{i}}.json", 4, k)
                missing += miss
                cells[m] = ms
                if s in SHORT and len(ms) == 4:
                    spreads[m].append(max(ms) / min(ms) - 1)
            out["cells"][f"{s} {k}"] = cells
            print(f"{s + ' ' + k:34s} " + "  ".join(" ".join(f"{x:.4f}" for x in cells[m]).rjust(28) for m in MODES))
    for m in MODES:
        ms, _ = medians(d, f"peers-{m}-{{i}}.json", 3, "torch-cudnn")
        out[f"torch-cudnn {m}"] = ms
        print(f"torch-cudnn c-b32-h8-n1024 {m:5s}: " + " ".join(f"{x:.4f}" for x in ms)
              + (f"  spread {max(ms) / min(ms) - 1:.3f}" if ms else ""))
    complete = not missing and all(len(spreads[m]) == 4 for m in MODES)
    if complete:
        sw, sc = (gm([x + 0.002 for x in spreads[m]]) for m in MODES)
        ctl = {k: gm(out["cells"][f"{LONG} {k}"]["clean"]) / gm(out["cells"][f"{LONG} {k}"]["write"]) for k in KERNELS}
        out.update(spread_write=sw, spread_clean=sc, control_clean_over_write=ctl)
        print(f"short rows' spread (geomean of spread + 0.002): write {sw:.4f}, clean {sc:.4f}; "
              f"control clean / write: " + ", ".join(f"{k} {v:.4f}" for k, v in ctl.items()))
        met = sc <= sw / 2 and all(0.98 <= v <= 1.02 for v in ctl.values())
        verdict = ("met: FB_L2_FLUSH=clean becomes the default flush of flashbench and peers.py" if met else
                   f"not met (clean's spread at most half write's: {sc <= sw / 2}; control within 0.98-1.02: "
                   f"{all(0.98 <= v <= 1.02 for v in ctl.values())}): the write alone stays")
    else:
        verdict = "incomplete: " + (", ".join(missing) if missing else "a short row lacks a process")
    out["verdict"] = verdict
    print("rule:", verdict)
    json.dump(out, open(os.path.join(d, "rule.json"), "w"), indent=1)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: clean_rule.py DIR")
    main(sys.argv[1])
