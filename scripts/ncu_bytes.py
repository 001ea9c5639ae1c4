#!/usr/bin/env python3
"""Measured DRAM traffic of flashbench's kernels, from Nsight Compute's counters, beside the byte model.

    python3 scripts/ncu_bytes.py SPEC.json -o results/ncu-bytes.json [--flashbench build/flashbench]
                                 [--ncu ncu] [--kernels naive,flash] [--device K]

For every case of the spec and every kernel, flashbench runs ONE pass of that kernel on that case
(a one-case spec: warmup 0, reps 1, verify false) under

    ncu --clock-control none --print-units base --csv --metrics dram__bytes_read.sum,dram__bytes_write.sum

and the DRAM bytes of every profiled launch are summed by kernel family:
    flash      flashbench's tiled kernels (fb::cuda::flash::...)
    gemm       cuBLAS GEMMs (nvjet / xmma / cutlass / *gemm* names): the naive path's S = Q K^T and O = P V
    softmax    the naive path's softmax kernels
    naive      other kernels of fb::cuda::naive
    setup      input generation and error reductions (fill_normal, to_fp64, max_abs_diff): not counted
    reference  the fp64 reference (not run: verify is off), not counted
    other      anything else: counted, and listed by name so that it can be looked at
`dram_bytes` (read + write of every family but setup and reference) is what one pass moved; the output
puts it beside `bytes_moved`, flashbench's model of the fewest bytes the algorithm must move
(src/case.cpp), from the results JSON of the same run.

Notes: ncu serialises kernels and by default flushes caches before each one (--cache-control all), so
each kernel starts with a cold L2, as flashbench's L2 flush intends; --clock-control none leaves the
clocks as they are. Only forward passes are measured: a backward run includes its untimed forward,
whose cuBLAS GEMMs cannot be told from the backward's by name. cudaMemset (the output poisoning and
the L2 flush) is not a kernel and ncu does not count it.

Exit status: 0 done, 1 a run failed, 2 bad spec or arguments, or ncu / flashbench not usable here.
"""

import argparse
import csv
import datetime
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import OrderedDict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fbresults import ResultsError, case_key, load_results, seq_lengths  # noqa: E402
from fbspec import SpecError, load_spec  # noqa: E402

PROG = "ncu_bytes.py"
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

READ, WRITE = "dram__bytes_read.sum", "dram__bytes_write.sum"
METRICS = (READ, WRITE)
NCU_ARGS = ["--clock-control", "none", "--print-units", "base", "--csv", "--metrics", ",".join(METRICS)]

# (family, pattern on the demangled kernel name); the first match wins.
FAMILIES = (
    ("setup", re.compile(r"fill_normal|to_fp64|max_abs_diff")),
    ("reference", re.compile(r"::reference::")),
    ("flash", re.compile(r"::flash::|flash_")),
    ("softmax", re.compile(r"softmax", re.IGNORECASE)),
    ("naive", re.compile(r"::naive::")),
    ("gemm", re.compile(r"gemm|nvjet|cutlass|xmma|cublas", re.IGNORECASE)),
)
NOT_COUNTED = ("setup", "reference")

# ncu's byte units: SI prefixes are powers of 1000; the binary ones are spelled KiB, MiB...
BYTE_UNITS = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12,
              "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
REQUIRED_COLUMNS = ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value")
# "12,582,912": thousands separators (what ncu prints unless told otherwise).
GROUPED = re.compile(r"\d{1,3}(,\d{3})+(\.\d+)?")


class NcuCsvError(Exception):
    pass


def parse_value(text, unit, where):
    """A metric value with its unit -> bytes (float). Raises NcuCsvError naming `where`."""
    s = text.strip()
    if GROUPED.fullmatch(s):
        s = s.replace(",", "")
    try:
        v = float(s)
    except ValueError:
        raise NcuCsvError(f"{where}: metric value '{text}' is not a number") from None
    if unit not in BYTE_UNITS:
        raise NcuCsvError(f"{where}: unit '{unit}' is not a byte unit ({', '.join(BYTE_UNITS)})")
    return v * BYTE_UNITS[unit]


def parse_ncu_csv(text, metrics=METRICS):
    """ncu --csv output (its ==PROF== lines and anything else before the header are skipped) ->
    [{"id", "kernel", "metrics": {name: bytes}}], one per profiled launch, in ID order. Raises
    NcuCsvError when there is no CSV header, a column is missing, or a requested metric is absent from
    a launch."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        raise NcuCsvError("no CSV table in ncu's output (no line starting with \"ID\",): did ncu profile "
                          "any kernel?")
    reader = csv.DictReader(io.StringIO("\n".join(l for l in lines[start:] if not l.startswith("==PROF=="))))
    missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise NcuCsvError(f"ncu CSV header lacks column(s) {', '.join(missing)}")
    launches = OrderedDict()
    for n, row in enumerate(reader, start + 2):  # line numbers as an editor counts them
        if row.get("Metric Name") not in metrics:
            continue
        where = f"ncu CSV line {n}"
        try:
            launch_id = int(row["ID"])
        except (TypeError, ValueError):
            raise NcuCsvError(f"{where}: ID '{row['ID']}' is not an integer") from None
        launch = launches.setdefault(launch_id, {"id": launch_id, "kernel": row["Kernel Name"], "metrics": {}})
        launch["metrics"][row["Metric Name"]] = parse_value(row["Metric Value"], row["Metric Unit"], where)
    for launch in launches.values():
        absent = [m for m in metrics if m not in launch["metrics"]]
        if absent:
            raise NcuCsvError(f"launch {launch['id']} ({launch['kernel'][:80]}): no value for {', '.join(absent)}")
    return sorted(launches.values(), key=lambda l: l["id"])


def family_of(kernel_name):
    for family, pattern in FAMILIES:
        if pattern.search(kernel_name):
            return family
    return "other"


def summarize_launches(launches):
    """Per-kernel and per-family sums of DRAM bytes, and the total of the counted families."""
    kernels = OrderedDict()
    families = OrderedDict()
    for l in launches:
        fam = family_of(l["kernel"])
        read, write = l["metrics"][READ], l["metrics"][WRITE]
        k = kernels.setdefault(l["kernel"], {"name": l["kernel"], "family": fam, "launches": 0,
                                             "read_bytes": 0.0, "write_bytes": 0.0})
        f = families.setdefault(fam, {"launches": 0, "read_bytes": 0.0, "write_bytes": 0.0})
        for d in (k, f):
            d["launches"] += 1
            d["read_bytes"] += read
            d["write_bytes"] += write
    counted = [f for name, f in families.items() if name not in NOT_COUNTED]
    read = sum(f["read_bytes"] for f in counted)
    write = sum(f["write_bytes"] for f in counted)
    return {"dram_read_bytes": read, "dram_write_bytes": write, "dram_bytes": read + write,
            "families": families, "kernels": list(kernels.values())}


# ---------------------------------------------------------------------------------------------------
# Running


def one_case_spec(case, kernel):
    """A spec that runs exactly `case` with `kernel`, once, without verification."""
    spec = {"name": f"ncu-bytes {case_key(case)} {kernel}", "batch": [case["batch"]],
            "heads": [case["heads"]], "kv_heads": [case["kv_heads"]], "head_dim": [case["head_dim"]],
            "dtype": [case["dtype"]], "causal": [case["causal"]], "pass": [case["pass"]], "kernels": [kernel],
            "warmup": 0, "reps": 1, "verify": False}
    nq, nk = seq_lengths(case)
    if nq == nk:
        spec["seq"] = [nq]
    else:
        spec.update({"seq_q": [nq], "seq_k": [nk]})
    return spec


def tool_version(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [l.strip() for l in (out.stdout + out.stderr).splitlines() if l.strip()]
    return next((l for l in lines if "ersion" in l), lines[-1] if lines else None)


def git_describe():
    try:
        out = subprocess.run(["git", "-C", HERE, "describe", "--always", "--dirty", "--abbrev=12"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def measure(args, case, kernel, workdir):
    spec_path = os.path.join(workdir, "spec.json")
    results_path = os.path.join(workdir, "results.json")
    with open(spec_path, "w") as f:
        json.dump(one_case_spec(case, kernel), f)
    if os.path.exists(results_path):
        os.remove(results_path)
    fb_cmd = [args.flashbench, "run", spec_path, "-o", results_path, "--backend", "cuda",
              "--device", str(args.device), "-q"]
    cmd = [args.ncu] + NCU_ARGS + fb_cmd
    out = subprocess.run(cmd, capture_output=True, text=True)
    # The command as run, with the temporary folder's path left out (it is gone afterwards).
    shown = [os.path.basename(args.ncu)] + NCU_ARGS + fb_cmd
    entry = {"key": case_key(case), "case": case, "kernel": kernel,
             "command": " ".join(shown).replace(workdir + os.sep, "")}
    if out.returncode != 0:
        tail = " ".join((out.stderr or out.stdout).strip().splitlines()[-3:])
        entry.update({"status": "failed", "reason": f"exit status {out.returncode}: {tail[:400]}"})
        return entry, None
    try:
        summary = summarize_launches(parse_ncu_csv(out.stdout))
        results = load_results(results_path)
    except (NcuCsvError, ResultsError) as e:
        entry.update({"status": "failed", "reason": str(e)})
        return entry, None
    rec = next((r for r in results["results"] if r["kernel"] == kernel and r["key"] == case_key(case)), None)
    if rec is None or rec["status"] != "ok":
        entry.update({"status": rec["status"] if rec else "failed",
                      "reason": rec["reason"] if rec else "flashbench wrote no record for this case"})
        return entry, results["device"]
    entry["status"] = "ok"
    entry.update(summary)
    entry["modelled_bytes"] = rec["bytes_moved"]
    entry["measured_over_modelled"] = (summary["dram_bytes"] / rec["bytes_moved"]
                                       if rec["bytes_moved"] > 0 else None)
    return entry, results["device"]


def format_table(entries):
    lines = [f"{'case':<44} {'kernel':<8} {'measured MB':>12} {'modelled MB':>12} {'ratio':>6}  families"]
    for e in entries:
        if e["status"] != "ok":
            lines.append(f"{e['key']:<44} {e['kernel']:<8} {e['status']}: {e['reason'][:80]}")
            continue
        fams = ", ".join(f"{n} {f['read_bytes'] / 1e6 + f['write_bytes'] / 1e6:.1f}"
                         for n, f in e["families"].items() if n not in NOT_COUNTED)
        ratio = e["measured_over_modelled"]
        lines.append(f"{e['key']:<44} {e['kernel']:<8} {e['dram_bytes'] / 1e6:>12.2f} "
                     f"{e['modelled_bytes'] / 1e6:>12.2f} {ratio if ratio is None else f'{ratio:6.2f}'}  {fams}")
    return "\n".join(lines)


def parse_args(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("spec", help="a small flashbench sweep spec (JSON); every case must be pass fwd")
    p.add_argument("-o", "--output", required=True, help="write the measurements (JSON) here")
    p.add_argument("--flashbench", default=os.environ.get("FLASHBENCH_EXE", "build/flashbench"),
                   help="the flashbench binary (default $FLASHBENCH_EXE or build/flashbench)")
    p.add_argument("--ncu", default="ncu", help="the Nsight Compute CLI (default: ncu on PATH)")
    p.add_argument("--kernels", help="comma-separated flashbench kernels (default: the spec's, or naive,flash)")
    p.add_argument("--device", type=int, default=0, help="CUDA device index")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    try:
        sweep = load_spec(args.spec)
    except SpecError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return EXIT_USAGE
    not_fwd = [case_key(c) for c in sweep["cases"] if c["pass"] != "fwd"]
    if not_fwd:
        print(f"{PROG}: {args.spec}: spec.pass: only fwd can be measured ({not_fwd[0]} is not): a backward run "
              "includes its untimed forward, whose GEMMs cannot be told apart", file=sys.stderr)
        return EXIT_USAGE
    kernels = ([k.strip() for k in args.kernels.split(",") if k.strip()] if args.kernels
               else sweep["kernels"] or ["naive", "flash"])
    folder = os.path.dirname(args.output) or "."
    if not os.path.isdir(folder):
        print(f"{PROG}: --output {args.output}: folder '{folder}' does not exist", file=sys.stderr)
        return EXIT_USAGE
    for tool, flag in ((args.ncu, "--ncu"), (args.flashbench, "--flashbench")):
        if shutil.which(tool) is None:
            print(f"{PROG}: {flag} {tool}: not found or not executable", file=sys.stderr)
            return EXIT_USAGE

    entries, device = [], None
    cases = sweep["cases"]
    with tempfile.TemporaryDirectory(prefix="ncu-bytes-") as workdir:
        for i, case in enumerate(cases, 1):
            for kernel in kernels:
                entry, dev = measure(args, case, kernel, workdir)
                device = device or dev
                entries.append(entry)
                what = (f"{entry['dram_bytes'] / 1e6:.2f} MB" if entry["status"] == "ok"
                        else f"{entry['status']}: {entry['reason'][:100]}")
                print(f"[{i}/{len(cases)}] {entry['key']} {kernel}: {what}", file=sys.stderr, flush=True)

    doc = {"tool": {"name": "flashbench-ncu-bytes", "git": git_describe()},
           "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "device": device or {}, "ncu": tool_version([args.ncu, "--version"]),
           "flashbench": tool_version([args.flashbench, "--version"]), "metrics": list(METRICS),
           "ncu_args": NCU_ARGS, "spec": sweep["spec"], "measurements": entries}
    tmp = f"{args.output}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2, allow_nan=False)
        f.write("\n")
    os.replace(tmp, args.output)
    print(format_table(entries))
    print(f"{PROG}: {len(entries)} measurements -> {args.output}", file=sys.stderr)
    return EXIT_FAILED if any(e["status"] == "failed" for e in entries) else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
