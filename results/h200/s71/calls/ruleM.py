#!/usr/bin/env python3
"""Call M's rule (session 71, written before the call; docs/perf-notes.md, "Session 71"): the verdict on c20d618's
causal masks (each score's column a literal against its row's limit), already in main.

    python3 results/h200/s71/calls/ruleM.py DIR

DIR: the call's folder (ab-{bf16,fp16}-{1,2}.json, paired-{bf16,fp16}.json, base_commit.txt, same-bits.log). The
masks stay when
  * the two builds give the same bits (same-bits.log: "same_bits.py: 0 problems");
  * the base build was packed (base_commit.txt) and both grids ran: 4 files, every flash_sm90 and flash_sm90_base
    record ok and verified (peers.py's judge);
  * over the rows the change reaches, the causal rows of both grids (48: forward and backward), the paired medians of
    flash_sm90_base's rep over flash_sm90's (above 1.0: this commit faster) have a geometric mean >= 0.998 and no row's
    95% interval lies wholly below 0.990;
  * over the controls, the non-causal rows (48, where no grid shape masks a tile: the same source, another binary),
    the geometric mean lies in [0.995, 1.005].
Otherwise the column sums come back (git revert of c20d618's kernel hunks); an unverified record is a wrong kernel,
whichever build it is, and stops everything else. Without the base build or with a grid missing the call read
nothing: run it again. Prediction: causal forwards at N <= 2048 1.003-1.010 (the masked step is one of 1-4 a work
tile there), level beyond; backwards level to 1.005.
Prints each check and the verdict; exit 0 when met, 1 when not, 3 when the call read nothing, 2 for bad arguments.
"""
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 4, "scripts"))
from ratios import geomean  # noqa: E402

PAIR = "flash_sm90:flash_sm90_base"


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    d = sys.argv[1]
    checks = []
    base = open(os.path.join(d, "base_commit.txt")).read().strip() if os.path.exists(
        os.path.join(d, "base_commit.txt")) else ""
    checks.append((f"base build packed: '{base}'", bool(base)))
    bits = os.path.join(d, "same-bits.log")
    text = open(bits, errors="replace").read() if os.path.exists(bits) else ""
    checks.append(("same-bits.log: 'same_bits.py: 0 problems'", "same_bits.py: 0 problems" in text))
    files = sorted(glob.glob(os.path.join(d, "ab-*-[12].json")))
    bad = []
    for f in files:
        for r in json.load(open(f))["results"]:
            if r["kernel"] in ("flash_sm90", "flash_sm90_base") and (r["status"] != "ok" or r["verified"] is not True):
                bad.append(f"{os.path.basename(f)} {r['key']} {r['kernel']}")
    checks.append((f"{len(files)} files of 4, every flash_sm90 / flash_sm90_base record ok and verified "
                   f"({len(bad)} not: {bad[:3]})", len(files) == 4 and not bad))
    rows, controls = {}, {}
    for g in ("bf16", "fp16"):
        path = os.path.join(d, f"paired-{g}.json")
        if not os.path.exists(path):
            print(f"ruleM: {path} missing")
            continue
        for case, v in json.load(open(path))["pairs"][PAIR]["rows"].items():
            (rows if re.search(r"-causal-(fwd|bwd)$", case) else controls)[case] = v
    med = [v["median"] for v in rows.values()]
    g_rows = geomean(med) if med else 0.0
    low = [c for c, v in rows.items() if v["high"] < 0.990]
    span = f"{min(med):.3f}-{max(med):.3f}" if med else "none"
    checks.append((f"rows: {len(rows)} causal rows of 48, geomean {g_rows:.4f} (>= 0.998), range {span}",
                   len(rows) == 48 and g_rows >= 0.998))
    checks.append((f"rows with the interval below 0.990: {low}", not low))
    cmed = [v["median"] for v in controls.values()]
    g_ctl = geomean(cmed) if cmed else 0.0
    checks.append((f"controls: {len(controls)} non-causal rows of 48, geomean {g_ctl:.4f} (in [0.995, 1.005])",
                   len(controls) == 48 and 0.995 <= g_ctl <= 1.005))
    short = [v["median"] for c, v in rows.items() if re.search(r"-n(512|1024|2048)-.*-fwd$", c)]
    if short:
        print(f"(not a check) causal forwards at N <= 2048: {len(short)} rows, geomean {geomean(short):.4f}")
    for what, ok in checks:
        print(f"{'pass' if ok else 'FAIL'}  {what}")
    if not base or len(files) != 4:
        print("ruleM: NO READING (no base build, or a grid missing): run the call again")
        return 3
    met = all(ok for _, ok in checks)
    print(f"ruleM: {'MET: the masks stay' if met else 'NOT MET: restore the column sums'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
