#!/usr/bin/env python3
"""The regression gate's false-alarm and detection rates on real repeated runs.

    scripts/gate_study.py --exe build/flashbench --base R1.json ... --slow S1.json ... -o gate-study.json

R*.json: runs of one unchanged binary over one sweep (configs/gate-study.json). S*.json: runs of the
same sweep by a binary with a deliberate slowdown (tests/data/gate-slowdown.patch: flash-sm90's
forward spins ~7% of its time). Every compare is `flashbench compare` exactly as a CI job runs it:

  unchanged  each R as the new run, against every 3-run history of the other R runs: any failing row
             is a false alarm. Also reported: single-base compares (one R against another), and the
             same with `--confirm` (the suspects re-measured: another R run stands in for the re-run).
  injected   each S as the new run against every 3-run history of the R runs: the rows the patch
             slowed (flash-sm90 forward) must be regressions, every other row must pass.
The true slowdown of each injected row is the median over S runs / median over R runs.
"""
import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

FAILING = {"regression", "error_exceeded", "unverified", "now_failed", "missing"}


def compare(exe, history, new, confirm=None):
    cmd = [exe, "compare", *history, new, "--format", "json"]
    if confirm:
        cmd += ["--confirm", confirm]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def median_by_row(files):
    rows = {}
    for f in files:
        for r in json.load(open(f))["results"]:
            if r["status"] == "ok":
                rows.setdefault((r["key"], r["kernel"]), []).append(r["time_ms"]["median"])
    return {k: statistics.median(v) for k, v in rows.items()}


def injected(key_kernel):
    key, kernel = key_kernel
    return kernel == "flash-sm90" and key.endswith("-fwd")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exe", required=True)
    ap.add_argument("--base", nargs="+", required=True)
    ap.add_argument("--slow", nargs="+", required=True)
    ap.add_argument("--history", type=int, default=3)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--min-slowdown", type=float, default=0.05,
                    help="injected rows slowed less than this (measured) are listed but not counted")
    ap.add_argument("--mode", default="injected+confirm",
                    help="the headline mode: what a CI job runs (compare, re-measure the suspects, compare --confirm)")
    a = ap.parse_args()
    if len(a.base) < a.history + 1:
        sys.exit(f"gate_study: need at least {a.history + 1} --base runs")

    first = json.load(open(a.base[0]))
    results = len(first["results"])
    base_med, slow_med = median_by_row(a.base), median_by_row(a.slow)
    true_slowdown = {f"{k[0]}|{k[1]}": slow_med[k] / base_med[k] - 1 for k in base_med if injected(k) and k in slow_med}

    jobs = []  # (kind, history, new, confirm)
    for i, new in enumerate(a.base):
        others = [b for j, b in enumerate(a.base) if j != i]
        for hist in itertools.combinations(others, a.history):
            jobs.append(("unchanged", list(hist), new, None))
            spare = [b for b in others if b not in hist]
            jobs.append(("unchanged+confirm", list(hist), new, spare[0] if spare else None))
        for other in others:
            jobs.append(("unchanged-single-base", [other], new, None))
    for i, new in enumerate(a.slow):
        again = a.slow[(i + 1) % len(a.slow)] if len(a.slow) > 1 else None
        for hist in itertools.combinations(a.base, a.history):
            jobs.append(("injected", list(hist), new, None))
            jobs.append(("injected+confirm", list(hist), new, again))

    with ThreadPoolExecutor(a.jobs) as pool:
        reports = list(pool.map(lambda j: compare(a.exe, j[1], j[2], j[3]), jobs))

    summary = {}
    misses = []
    per_row = {}  # injected row -> {mode: [detected, compares]}
    for (kind, hist, new, confirm), rep in zip(jobs, reports):
        s = summary.setdefault(kind, {"compares": 0, "failed_compares": 0, "false_alarm_rows": 0,
                                      "injected": 0, "detected": 0, "rows": 0})
        s["compares"] += 1
        s["failed_compares"] += int(rep["failed"])
        for row in rep["rows"]:
            s["rows"] += 1
            is_injected = kind.startswith("injected") and injected((row["key"], row["kernel"]))
            if is_injected:
                rk = f"{row['key']}|{row['kernel']}"
                big = true_slowdown.get(rk, 0) >= a.min_slowdown
                hit = row["verdict"] == "regression"
                pr = per_row.setdefault(rk, {}).setdefault(kind, [0, 0])
                pr[0] += int(hit)
                pr[1] += 1
                if not big:
                    continue  # a slowdown under the gate's threshold is not one it must catch
                s["injected"] += 1
                s["detected"] += int(hit)
                if not hit:
                    misses.append({"kind": kind, "new": os.path.basename(new), "key": row["key"],
                                   "verdict": row["verdict"], "note": row["note"]})
            elif row["verdict"] in FAILING:
                s["false_alarm_rows"] += 1
                misses.append({"kind": kind, "new": os.path.basename(new), "key": row["key"],
                               "kernel": row["kernel"], "false_alarm": row["verdict"], "note": row["note"]})

    headline = a.mode
    unchanged = summary[headline.replace("injected", "unchanged")]
    inj = summary[headline]
    out = {
        "what": "flashbench compare on repeated H200 runs: false alarms on an unchanged binary, detection "
                "of a deliberate ~7% flash-sm90 forward slowdown (tests/data/gate-slowdown.patch)",
        "device": first.get("device", {}).get("name"),
        "tool": first.get("tool"),
        "sweep": first.get("spec", {}).get("name"),
        "results_per_run": results,
        "base_runs": [os.path.basename(f) for f in a.base],
        "slow_runs": [os.path.basename(f) for f in a.slow],
        "history": a.history,
        "gate_settings": {"max_slowdown": 0.05, "confidence": 0.99, "drift": "3 x 1.4826 MAD of the history's log medians", "bootstrap": 2000, "rule": "ratio > 1 + threshold and interval above 1; --confirm re-measure"},
        # The headline figures: CI's mode (a 3-run history; suspects re-measured and confirmed).
        "mode": headline,
        "min_true_slowdown_counted": a.min_slowdown,
        "compares": unchanged["compares"],
        "false_alarms": unchanged["failed_compares"],
        "false_alarm_rows": unchanged["false_alarm_rows"],
        "injected": inj["injected"],
        "detected": inj["detected"],
        "detection_rate": inj["detected"] / inj["injected"] if inj["injected"] else None,
        "injected_compares_failed": inj["failed_compares"],
        "injected_compares": inj["compares"],
        "true_slowdown": true_slowdown,
        "detection_by_row": per_row,
        "by_mode": summary,
        "misses_and_false_alarms": misses[:200],
    }
    with open(a.output, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    print(f"gate study: {results} results per run, {len(a.base)} base runs, {len(a.slow)} slowed runs")
    for kind, s in summary.items():
        rate = f", detected {s['detected']}/{s['injected']}" if s["injected"] else ""
        print(f"  {kind:24s} compares {s['compares']:4d}  failed {s['failed_compares']:4d}  "
              f"false-alarm rows {s['false_alarm_rows']:4d}{rate}")
    sl = sorted(true_slowdown.values())
    if sl:
        print(f"  true slowdown of the injected rows: {100 * sl[0]:.1f}% .. {100 * sl[-1]:.1f}%")


if __name__ == "__main__":
    main()
