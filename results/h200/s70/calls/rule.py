#!/usr/bin/env python3
"""Call O's rule (session 70, written before the call; docs/perf-notes.md, "Session 70"): the verdict on `ones`.

    python3 results/h200/s70/calls/rule.py DIR

DIR: the call's folder (paired-bf16.json, paired-fp16.json, ab-*.json, the step logs). `ones` becomes d = 64's
inference default (FwdDefaults::kOnesSum64) when
  * the tests passed: gpu-ones.log (Catch2's "All tests passed"), memcheck-ones.log ("ERROR SUMMARY: 0 errors"),
    fb-torch.log ("gpu_fb_torch.py: 0 problems");
  * every flash_sm90 and flash_sm90_ones record of ab-*.json is ok and verified (peers.py's judge);
  * over the rule's rows, the d = 64 forwards of both grids that `ones` launches on (20 of 24 on 132 SMs), the paired
    medians of flash_sm90's rep over flash_sm90_ones' (above 1.0: ones faster) have a geometric mean >= 1.010, and
    no row's 95% interval lies wholly below 0.995;
  * over the controls, the d = 128 forwards (24) and the d = 64 forwards the tail split splits (non-causal N = 2048
    and 4096 on 132 SMs: `ones` does not take split launches; splits.json, the library's own plan on the call's
    device), the same kernel on both sides, the geometric mean lies in [0.995, 1.005].
Session 71 (before the call ran): the rows were all 24 d = 64 forwards, the 4 split ones among them, which `ones`
cannot move; counted as rows they would have diluted a real gain (1.2% on the 20 reads as 1.0% on the 24).
Prints each check and the verdict; exit 0 when met, 1 when not, 2 for missing files.
"""
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 4, "scripts"))
from ratios import geomean  # noqa: E402

PAIR = "flash_sm90_ones:flash_sm90"



def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    d = sys.argv[1]
    checks = []

    def log_has(name, pattern):
        path = os.path.join(d, name)
        text = open(path, errors="replace").read() if os.path.exists(path) else ""
        checks.append((f"{name}: {pattern!r}", re.search(pattern, text) is not None))

    log_has("gpu-ones.log", r"All tests passed")
    log_has("memcheck-ones.log", r"ERROR SUMMARY: 0 errors")
    log_has("fb-torch.log", r"gpu_fb_torch\.py: 0 problems")
    files = sorted(glob.glob(os.path.join(d, "ab-*-[12].json")))
    bad = []
    for f in files:
        for r in json.load(open(f))["results"]:
            if r["kernel"] in ("flash_sm90", "flash_sm90_ones") and (r["status"] != "ok" or r["verified"] is not True):
                bad.append(f"{os.path.basename(f)} {r['key']} {r['kernel']}")
    checks.append((f"{len(files)} files of 4, every flash_sm90 / flash_sm90_ones record ok and verified "
                   f"({len(bad)} not: {bad[:3]})", len(files) == 4 and not bad))
    # Which d = 64 forwards the tail split splits on the call's device (splits.py, from the library's own plan).
    split_path = os.path.join(d, "splits.json")
    split = json.load(open(split_path))["workspace_bytes"] if os.path.exists(split_path) else None
    checks.append(("splits.json (the tail split's launches, from the library)", split is not None))
    split = split or {}
    rows, controls = {}, {}
    for g in ("bf16", "fp16"):
        path = os.path.join(d, f"paired-{g}.json")
        if not os.path.exists(path):  # a grid the call did not run (GRIDS): its rows are missing, the rule not met
            print(f"rule: {path} missing")
            continue
        for case, v in json.load(open(path))["pairs"][PAIR]["rows"].items():
            (rows if "-d64-" in case and not split.get(case, 0) > 0 else controls)[case] = v
    n64 = sum(1 for c in list(rows) + list(controls) if "-d64-" in c)
    med = [v["median"] for v in rows.values()]
    low_rows = [c for c, v in rows.items() if v["high"] < 0.995]
    g_rows = geomean(med) if med else 0.0
    span = f"{min(med):.3f}-{max(med):.3f}" if med else "none"
    checks.append((f"rows: {len(rows)} d = 64 forwards `ones` launches on ({n64} of 24 d = 64 forwards in the files), "
                   f"geomean {g_rows:.4f} (>= 1.010), range {span}", n64 == 24 and len(rows) > 0 and g_rows >= 1.010))
    checks.append((f"rows with the interval below 0.995: {low_rows}", not low_rows))
    cmed = [v["median"] for v in controls.values()]
    g_ctl = geomean(cmed) if cmed else 0.0
    n_split = n64 - len(rows)
    checks.append((f"controls: {len(controls)} ({len(controls) - n_split} d = 128 forwards, {n_split} split d = 64 "
                   f"ones), geomean {g_ctl:.4f} (in [0.995, 1.005])",
                   len(rows) + len(controls) == 48 and 0.995 <= g_ctl <= 1.005))
    for what, ok in checks:
        print(f"{'pass' if ok else 'FAIL'}  {what}")
    met = all(ok for _, ok in checks)
    print(f"rule: {'MET' if met else 'NOT MET'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
