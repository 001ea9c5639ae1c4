#!/usr/bin/env python3
"""Writes the fixtures of this folder (README.md says what each is for). Run it again after a change to
the results schema; the files it writes are committed, so the tests never depend on it.

The figures are synthetic (times from assumed rates, memory from the sizes of the tensors each
implementation keeps): they have the shape of real results but were not measured, so do not quote them.
"""

import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "scripts"))
from fbresults import DTYPE_BYTES, SCHEMA_VERSION, case_flops, case_key, encode_number  # noqa: E402

# Assumed sustained rates (TFLOP/s) of the peers on bf16, for the synthetic times.
RATES = {"torch-flash": 380.0, "torch-cudnn": 470.0, "torch-efficient": 260.0, "torch-math": 70.0}
FP64_RATE = 40.0  # the math path in fp64
REPS = 20
SPREAD = 0.004  # relative spread of the synthetic timings
HBM_BYTES = 143771 * 2**20  # the H200's memory, as nvidia-smi shows it


def header(device_extra=None):
    device = {"name": "NVIDIA H200", "sm_count": 132, "memory_bytes": HBM_BYTES, "torch": "2.11.0",
              "cuda": "13.0", "cudnn": 91300}
    device.update(device_extra or {})
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "flashbench-peers", "version": "0.1.0", "git": "fixture"},
        "created": "2025-01-14T10:02:11Z",
        "backend": "torch",
        "device": device,
        "spec": {"name": "plots-fixture", "description": "synthetic, see tests/data/plots/README.md"},
        "settings": {"warmup": 5, "reps": REPS, "seed": 42, "timer": "cuda-events", "l2_flush": True},
    }


def times(median):
    return {"median": median, "min": median * (1 - SPREAD), "max": median * (1 + 2 * SPREAD),
            "mean": median * (1 + SPREAD / 4), "stddev": median * SPREAD / 2, "reps": REPS}


def record(case, kernel, status="ok", reason="", err=None, rate=None):
    flops = case_flops(case)
    e = DTYPE_BYTES[case["dtype"]]
    b, h, n, d = case["batch"], case["heads"], case["seq"], case["head_dim"]
    rec = {"key": case_key(case), "case": case, "kernel": kernel, "status": status, "reason": reason,
           "time_ms": {"median": 0.0, "min": 0.0, "max": 0.0, "mean": 0.0, "stddev": 0.0, "reps": 0},
           "flops": flops, "tflops": 0.0, "bytes_moved": 0.0, "gbps": 0.0, "memory": {"peak_bytes": 0},
           "max_abs_diff": None, "ref_max_abs_err": None, "verified": None, "errors": {}}
    if status != "ok":
        return rec
    median_ms = flops / (rate * 1e12) * 1e3
    # O and LSE; the math path also keeps the scores, their fp32 softmax and the probabilities.
    peak = b * h * n * d * e + b * h * n * 4
    if kernel == "torch-math":
        peak += b * h * n * n * (e + 4 + e)
    rec.update({"time_ms": times(median_ms), "tflops": flops / (median_ms * 1e-3) / 1e12,
                "memory": {"peak_bytes": peak}, "ref_max_abs_err": encode_number(err),
                "errors": {"O": {"ref": encode_number(err)}} if err is not None else {}})
    return rec


def case(seq, dtype="bf16", batch=4, heads=16, head_dim=128, causal=False):
    return {"batch": batch, "heads": heads, "kv_heads": heads, "seq": seq, "head_dim": head_dim,
            "dtype": dtype, "causal": causal, "pass": "fwd"}


REF_MAX_SEQ = 8192  # peers.py's default: no fp64 reference above it


def peers():
    doc = header()
    recs = []
    for n in (1024, 2048, 4096, 8192, 32768):
        c = case(n)
        for k, rate in RATES.items():
            err = None if n > REF_MAX_SEQ else (3.91e-3 if k == "torch-math" else 1.95e-3)
            if k == "torch-efficient" and n == 8192:
                err = math.nan  # planted: the error plot must show a non-finite error as a marker
            need = c["batch"] * c["heads"] * n * n * (2 + 4 + 2)
            if k == "torch-math" and need > HBM_BYTES:
                recs.append(record(c, k, "skipped", f"math backend needs about {need / 2**30:.0f} GiB for its "
                                   f"N x N scores, {HBM_BYTES / 2**30:.0f} GiB on the device"))
            else:
                recs.append(record(c, k, err=err, rate=rate))
    # fp64: only the math path runs it, and it is the reference's own algorithm: error exactly 0.
    for n in (256, 512, 1024):
        c = case(n, dtype="fp64", batch=1, heads=4, head_dim=64)
        for k in RATES:
            if k == "torch-math":
                recs.append(record(c, k, err=0.0, rate=FP64_RATE))
            else:
                recs.append(record(c, k, "skipped", "No available kernel. Aborting execution. (the backend "
                                   "does not support dtype torch.float64)"))
    doc["results"] = recs
    return doc


def main():
    def write(name, doc_or_text):
        text = doc_or_text if isinstance(doc_or_text, str) else json.dumps(doc_or_text, indent=1) + "\n"
        with open(os.path.join(HERE, name), "w") as f:
            f.write(text)

    good = peers()
    write("peers.json", good)
    write("ceilings.json", {"tool": {"name": "flashbench", "version": "0.1.0", "git": "fixture"},
                            "backend": "cuda", "ceilings": {"copy_gbps": 4300.0, "gemm_bf16_tflops": 780.0}})
    small = dict(good, results=good["results"][:4])
    write("bad_major.json", dict(small, schema_version="2.0.0"))
    write("no_ok.json", dict(small, results=[r for r in good["results"] if r["status"] != "ok"][:3]))
    bad_field = json.loads(json.dumps(small))
    bad_field["results"][1]["time_ms"]["median"] = "fast"
    write("bad_field.json", bad_field)
    write("malformed.json", json.dumps(small, indent=1)[:300])
    write("empty.json", "")


if __name__ == "__main__":
    main()
