#!/usr/bin/env python3
"""Kernel-only A/B of two flashbench builds under Nsight Compute: the same spec through both, every launch of
one kernel timed by `gpu__time_duration` with ncu's clock control (clocks locked to base), so that the
harness, the host and the device's clock drift drop out of the comparison. This is how the Hopper forward's
causal regression was pinned (docs/perf-notes.md, session 4); scripts/ab_runs.sh is the timing-based A/B.

  scripts/ncu_ab.py A_EXE B_EXE SPEC --kernel NAME --kernel-regex RE -o OUT.json [--out-dir DIR]
                    [--a-args "..."] [--b-args "..."] [--ncu ncu]

  --kernel        the flashbench kernel whose launches are compared (its `ok` records, in the order the run
                  writes them, name the cases)
  --kernel-regex  ncu's --kernel-name regex for that kernel's CUDA kernel (e.g. flash_sm90_fwd): it must match
                  exactly the launches flashbench times, warm-up included (for a backward spec, the backward
                  kernel only: the untimed forward before it must not match)
  --a-args/--b-args  extra `run` flags per side; `--warmup-time 0` is added by itself to a build that has the
                  flag, so that both sides launch the spec's warmup + reps times per case

Each case's launches (the spec's warmup + reps) must share one kernel name and grid, else the script stops:
the chunking would compare the wrong launches. Per case: the median of the timed launches (after the warm-up
ones) on each side, and B/A. OUT.json holds every case, the geometric mean and the command lines. Exit status:
0 done, 1 a run or the chunking failed, 2 bad arguments.
"""

import argparse
import csv
import io
import json
import math
import os
import shlex
import statistics
import subprocess
import sys

METRIC = "gpu__time_duration.sum"


def fail(msg, code=1):
    print(f"ncu_ab.py: {msg}", file=sys.stderr)
    sys.exit(code)


def launches(csv_text):
    """(kernel name, grid, ns) per launch, in launch order, from `ncu --csv` output."""
    rows = [line for line in csv_text.splitlines() if line.startswith('"')]
    out = []
    for r in csv.DictReader(io.StringIO("\n".join(rows))):
        if r.get("Metric Name") != METRIC:
            continue
        value = float(r["Metric Value"].replace(",", ""))
        unit = r.get("Metric Unit", "ns")
        scale = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6}.get(unit)
        if scale is None:
            raise ValueError(f"unknown unit '{unit}' for {METRIC}")
        out.append((r["Kernel Name"], r.get("Grid Size", ""), value * scale))
    return out


def per_case(launch_list, per_case_launches, warmup):
    """Median ns of the timed launches of each case; launches are chunked per case in order."""
    if per_case_launches <= warmup:
        raise ValueError("a case needs more launches than its warm-up ones")
    if len(launch_list) % per_case_launches:
        raise ValueError(f"{len(launch_list)} launches are not a whole number of cases of {per_case_launches}")
    cases = []
    for i in range(0, len(launch_list), per_case_launches):
        chunk = launch_list[i:i + per_case_launches]
        if len({(n, g) for n, g, _ in chunk}) != 1:
            raise ValueError(f"launches {i}..{i + per_case_launches - 1} mix kernels or grids: "
                             "the regex matches more than the timed kernel, or the spec's warmup/reps differ")
        cases.append({"cuda_kernel": chunk[0][0], "grid": chunk[0][1],
                      "median_ns": statistics.median(v for _, _, v in chunk[warmup:])})
    return cases


def compare(a_cases, b_cases, keys):
    if not (len(a_cases) == len(b_cases) == len(keys)):
        raise ValueError(f"case counts differ: A {len(a_cases)}, B {len(b_cases)}, records {len(keys)}")
    rows = []
    for key, a, b in zip(keys, a_cases, b_cases):
        rows.append({"key": key, "grid_a": a["grid"], "grid_b": b["grid"], "a_us": a["median_ns"] / 1e3,
                     "b_us": b["median_ns"] / 1e3, "ratio": b["median_ns"] / a["median_ns"]})
    geo = math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows)) if rows else float("nan")
    return rows, geo


def ok_keys(run_json, kernel):
    with open(run_json) as f:
        doc = json.load(f)
    return [r["key"] for r in doc["results"] if r["kernel"] == kernel and r["status"] == "ok"]


def has_flag(exe, flag):
    try:
        out = subprocess.run([exe, "run", "--help"], capture_output=True, text=True, timeout=60)
    except OSError:
        return False
    return flag in out.stdout + out.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a_exe")
    ap.add_argument("b_exe")
    ap.add_argument("spec")
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--kernel-regex", required=True)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--out-dir", default=None, help="where the CSV and run JSON of each side go "
                    "(default: next to OUTPUT)")
    ap.add_argument("--a-args", default="")
    ap.add_argument("--b-args", default="")
    ap.add_argument("--ncu", default="ncu")
    args = ap.parse_args()

    try:
        with open(args.spec) as f:
            spec = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"spec {args.spec}: {e}", 2)
    warmup, reps = int(spec.get("warmup", 0)), int(spec.get("reps", 0))
    if reps < 1:
        fail(f"spec {args.spec}: 'reps' must be at least 1 (it fixes the launches per case)", 2)
    for exe in (args.a_exe, args.b_exe):
        if not os.access(exe, os.X_OK):
            fail(f"not an executable: {exe}", 2)
    out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.output))
    os.makedirs(out_dir, exist_ok=True)

    sides = {}
    for side, exe, extra in (("a", args.a_exe, args.a_args), ("b", args.b_exe, args.b_args)):
        run_json = os.path.join(out_dir, f"run-{side}.json")
        cmd = [args.ncu, "--metrics", METRIC, "--kernel-name", f"regex:{args.kernel_regex}", "--csv",
               exe, "run", args.spec, "-q", "-o", run_json] + shlex.split(extra)
        if "--warmup-time" not in extra and has_flag(exe, "--warmup-time"):
            cmd += ["--warmup-time", "0"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        with open(os.path.join(out_dir, f"ncu-{side}.csv"), "w") as f:
            f.write(proc.stdout)
        if proc.returncode != 0:
            fail(f"side {side.upper()} failed (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
        try:
            sides[side] = {"cmd": cmd, "cases": per_case(launches(proc.stdout), warmup + reps, warmup),
                           "keys": ok_keys(run_json, args.kernel)}
        except (ValueError, KeyError, OSError) as e:
            fail(f"side {side.upper()}: {e}")
    if sides["a"]["keys"] != sides["b"]["keys"]:
        fail("the two runs name different cases for the kernel (a kernel skipped or failed on one side)")
    try:
        rows, geo = compare(sides["a"]["cases"], sides["b"]["cases"], sides["a"]["keys"])
    except ValueError as e:
        fail(str(e))
    doc = {"kind": "ncu-ab", "metric": METRIC, "spec": args.spec, "kernel": args.kernel,
           "commands": {s: sides[s]["cmd"] for s in sides}, "geomean_ratio": geo, "cases": rows}
    with open(args.output, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"{'case':52s} {'A us':>9s} {'B us':>9s} {'B/A':>7s}")
    for r in rows:
        print(f"{r['key']:52s} {r['a_us']:9.1f} {r['b_us']:9.1f} {r['ratio']:7.3f}")
    print(f"geomean B/A {geo:.4f} over {len(rows)} cases -> {args.output}")


if __name__ == "__main__":
    main()
