#!/usr/bin/env python3
"""Runs a flashbench sweep spec through PyTorch's scaled_dot_product_attention, one SDPA backend at a time,
and writes flashbench's results schema, so that `flashbench compare`, `flashbench merge` and
scripts/plot.py put the peers beside `naive` and `flash`.

    python3 scripts/peers.py SPEC.json -o results/peers.json [--backends flash,cudnn,efficient,math]
                             [--callable MODULE:FUNCTION [--name NAME]] [--device K] [--ref-max-seq N]
                             [--busy-hold | --self-hold | --spin-hold | --no-launch-hold] [--fwd-training]
                             [--interleave] [--list]

Kernels (each SDPA backend forced with torch.nn.attention.sdpa_kernel):
  torch-flash      SDPBackend.FLASH_ATTENTION      (FlashAttention-2 inside PyTorch)
  torch-cudnn      SDPBackend.CUDNN_ATTENTION
  torch-efficient  SDPBackend.EFFICIENT_ATTENTION  (memory-efficient attention, xFormers' kernel)
  torch-math       SDPBackend.MATH                 (plain PyTorch ops, N x N scores in memory)
Each case times them in the order --backends names them (default: the order above), as `flashbench run` times
a spec's kernels in its order: where a kernel stands in its case moves long rows by several percent (the one
before it leaves the GPU's clock where it left it; docs/perf-notes.md, session 56's call K).

Your own kernel (Triton, CuTe's Python DSL, torch, ...): --callable MODULE:FUNCTION (repeatable) imports
FUNCTION from MODULE (an importable module name, or a path to a .py file) and runs it as
    FUNCTION(q, k, v, is_causal=bool, scale=float) -> O
with SDPA's signature: q (B, H, seq_q, d), k and v (B, kv_heads, seq_k, d), O like q, all in the case's
dtype on the GPU. Note where it differs from SDPA: causal is flashbench's bottom-right rule (query i sees keys
j <= i + seq_k - seq_q; the same as SDPA's is_causal when seq_q == seq_k) and k, v keep their kv_heads heads
(GQA when fewer than H). Its kernel name is FUNCTION (or --name, with one --callable). An exception on its
first call (e.g. a dtype or head dim it does not take) records the case `skipped` with the message; the
backward runs through torch.autograd, so a forward-only callable (an output without grad_fn) is skipped
on bwd cases. Without --backends, only the callables run; with them, the callables run after the backends in
each case (--callables-first: before). flashbench's own kernels come as callables from scripts/fb_torch.py
(e.g. --callable scripts/fb_torch.py:flash_sm90), so that they and SDPA are timed in one loop. Unlike the SDPA
peers, a callable is judged:
`verified` by flashbench's relative rule (src/judge.h) against a plain attention in the case's dtype
(S and P stored in it, flashbench's naive): err(T) <= f * err_plain(T) + 2 ulps of T's dtype at M
+ eps(fp32) * sqrt(seq_k) * M, f = 2 for O and 3 for gradients, M = max |T_ref| (dQ, dK: at least
max |dV_ref| / 16, and when that lifts them, cancelled, the dtype's own bound there); the bound, scale and
rule are kept in the record's errors, as flashbench keeps them.

What is measured, the way flashbench measures it:
  * cases: the spec's Cartesian product, expanded exactly as `flashbench run` expands it
    (scripts/fbspec.py mirrors src/spec.cpp); layout (B, H, N, d) = flashbench's BHSD (Q, dO with seq_q
    rows, K, V with seq_k); GQA through enable_gqa=True; scale 1/sqrt(d); causal: is_causal when
    seq_q == seq_k, no mask when seq_q == 1 (the one row sees every key), and otherwise PyTorch's
    causal_lower_right bias, since is_causal aligns top-left and flashbench bottom-right (query i sees keys
    j <= i + seq_k - seq_q). Causal with seq_q > seq_k is skipped: SDPA leaves rows with no visible key
    undefined (NaN), flashbench defines them as O = 0;
  * inputs: standard normal from torch's generator seeded by the spec's seed and the case key (the
    same distribution as flashbench's inputs, not the same numbers);
  * time: CUDA events around each rep after the warm-up; before each rep the L2 cache is flushed by
    writing a buffer of twice its size; median/min/max/mean/sample stddev in ms. The reps are queued back
    to back behind a GPU-side hold lasting twice the host's time to queue them (measured in the warm-up),
    so that PyTorch's host work (autograd, dispatch) never leaves the GPU idle inside a timed window:
    kernel time, as flashbench's own reps measure it. The hold is bf16 matrix products (fp16 before
    sm_80) that keep the GPU at work, so that the reps start on a GPU as warm as flashbench's, whose reps
    follow its warm-up back to back. (Session 54's call P, results/h100/s54/P/, on an H100: behind a
    one-thread spin the GPU idles, and cuDNN's kernels timed by peers.py took 0.956x the time flashbench
    measures for the same kernels, the median d = 128 non-causal row; behind the products 0.972x.) A hold
    that ended too soon is retried longer, and a case whose hold was still short is named on stderr and in
    the settings' launch_hold_short (--self-hold: the hold as the peer's own reps, untimed, so the reps start
    in the peer's own steady state as flashbench's do; where PyTorch's host time per rep outlasts the kernel
    the case falls back to the busy hold, named in launch_hold_fallback; --spin-hold: the hold as a
    one-thread spin, the default of sessions 44-53; --no-launch-hold: no hold, the timing before session 44;
    the settings' launch_hold_kind says which).
    With --interleave the case's kernels take their reps in turn, one rep of each a round, behind one hold:
    the rounds' orders are a Williams design (each kernel in each place, and after each other kernel, equally
    often), so that what moves the GPU's speed over a case (the clock under a power cap, the heat the kernel
    before left) falls on every kernel alike; each kernel's first call and warm-up come first, one kernel after
    another (the settings' rep_order: "interleaved", or "blocked" for each kernel's reps back to back).
    fwd times the forward, by default as
    inference: under torch.no_grad, inputs that need no gradient, so a backend may skip what only a backward
    needs (PyTorch's cuDNN then plans its graph without the Stats output, the row log-sum-exp); with
    --fwd-training as in training: inputs that require grad, autograd on, so that every backend computes
    the log-sum-exp as flashbench's forwards always do (the settings' fwd_mode says which, "inference" or
    "training"; the backward's own forward is always the training one);
    bwd times torch.autograd.grad of the output w.r.t. q, k, v with a random dO, after one untimed
    forward (retain_graph, so each rep redoes only the backward); fwd+bwd times both;
  * memory: torch.cuda.max_memory_allocated() over one untimed run, minus what was allocated before it
    (the inputs, dO and the L2 flush buffer), after reset_peak_memory_stats();
  * FLOPs: 4*B*H*seq_q*seq_k*d for the forward, halved when causal and seq_q == seq_k (the visible pairs
    counted exactly otherwise); bwd 2.5x, fwd+bwd 3.5x (src/case.cpp);
    bytes_moved and gbps are 0: PyTorch's kernels have no byte model here;
  * accuracy: max |x - x_ref| per output (O for fwd; dQ, dK, dV for bwd; all four for fwd+bwd) against
    an fp64 evaluation of softmax(Q K^T * scale) V on the same inputs (and its fp64 autograd gradients),
    computed on the GPU in blocks of query rows. Only for max(seq_q, seq_k) <= --ref-max-seq (default 8192)
    and when
    the spec does not say "verify": false; above it ref_max_abs_err is null. A non-finite output gives
    an error of inf. `verified` is null: the peers are measured, not judged.

A backend that refuses a case (an exception on its first call: unsupported dtype, head dim, GQA, ...)
or runs out of memory is recorded `skipped` with the reason on one line; so is torch-math when its
estimated N x N memory exceeds the device's free memory. An exception after a first call that worked is
recorded `failed`, and the exit status is then 1.

Exit status: 0 done, 1 a case failed or a --callable failed verification, 2 bad spec or arguments, or no
PyTorch with CUDA here.
"""

import argparse
import contextlib
import datetime
import importlib
import importlib.util
import json
import time
import math
import os
import re
import subprocess
import sys
import warnings
import zlib
from collections import OrderedDict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fbresults import (SCHEMA_VERSION, case_flops, case_json, case_key, encode_number, seq_lengths,  # noqa: E402
                       write_atomic)
from fbspec import SpecError, load_spec  # noqa: E402

PROG = "peers.py"
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

# Kernel name -> torch.nn.attention.SDPBackend member, in the order they run.
BACKENDS = OrderedDict([
    ("torch-flash", "FLASH_ATTENTION"),
    ("torch-cudnn", "CUDNN_ATTENTION"),
    ("torch-efficient", "EFFICIENT_ATTENTION"),
    ("torch-math", "MATH"),
])
TORCH_DTYPES = {"fp64": "float64", "fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}

DEFAULT_REF_MAX_SEQ = 8192
# Bytes of fp64 N x N blocks the reference may hold at once (scores, probabilities and their gradients).
REF_BLOCK_BUDGET = 1 << 30
REF_TEMPS = 4  # N x N fp64 temporaries alive at once in one reference block (S, P, dP, dS)
L2_FLUSH_FACTOR = 2  # the flush buffer is this many times the L2 size
MATH_FREE_FRACTION = 0.9  # torch-math runs only if its estimate fits in this share of free memory
MAX_REASON = 300  # characters of an exception kept in a skipped record's reason
MIB = 2**20
# The launch hold (Peers.timed_reps): the timed reps are queued behind a spin kernel on the GPU lasting
# HOLD_MARGIN times the host's measured time to queue them (plus HOLD_PAD_MS), at most HOLD_CAP_MS; a hold
# that ended before the last rep was queued is retried HOLD_RETRIES times, each HOLD_GROWTH times longer.
HOLD_MARGIN, HOLD_PAD_MS, HOLD_CAP_MS, HOLD_RETRIES, HOLD_GROWTH = 2.0, 0.5, 2000.0, 2, 4.0
HOLD_CALIBRATION_CYCLES = 2_000_000  # ~1 ms of spin at H200 clocks: measures cycles per ms after warm-up
# The busy hold (--busy-hold): bf16 products of BUSY_N x BUSY_N matrices (~0.1-0.2 ms each on an H100 / H200, the
# tensor cores at the power an attention kernel draws) instead of the spin; BUSY_CALIBRATION of them timed once.
BUSY_N, BUSY_CALIBRATION = 4096, 4
# The self hold (--self-hold): the peer's own reps, where one's GPU time is at least this many times the host's.
SELF_HOLD_MARGIN = 1.25
# What a backend raises when it will not take a case: "No available kernel" (RuntimeError) for an
# unsupported dtype/head dim/GQA, cuDNN frontend errors, and argument errors of older PyTorch versions.
REFUSALS = (RuntimeError, ValueError, NotImplementedError, TypeError)


# ---------------------------------------------------------------------------------------------------
# Pure helpers (no torch): tested offline by tests/test_scripts.py


def backend_names(arg):
    """--backends "flash,cudnn" or "torch-flash,..." -> kernel names, in the order named (each once). ValueError if
    a name is unknown."""
    if arg is None:
        return list(BACKENDS)
    wanted = []
    for raw in arg.split(","):
        name = raw.strip()
        if not name:
            continue
        full = name if name.startswith("torch-") else "torch-" + name
        if full not in BACKENDS:
            raise ValueError(f"--backends: unknown backend '{name}'; valid: "
                             f"{', '.join(k[len('torch-'):] for k in BACKENDS)}")
        if full not in wanted:
            wanted.append(full)
    if not wanted:
        raise ValueError("--backends: no backend named")
    return wanted


def l2_flush_mode(env):
    """FB_L2_FLUSH (the variable flashbench's CUDA backend reads too): "write" (unset, empty or write: the flush is a
    write of twice the L2 size) or "clean" (the write, then a read of a second buffer as large, so that the timed reps
    open on an L2 of clean lines, not of the write's dirty ones). ValueError naming the variable otherwise."""
    value = env.get("FB_L2_FLUSH") or "write"
    if value not in ("write", "clean"):
        raise ValueError(f"FB_L2_FLUSH={value}: the L2 flush is 'write' (the default) or 'clean'")
    return value


def hold_kind(launch_hold, busy, self_hold=False):
    """The settings' launch_hold_kind: "busy" (the default), "self" (--self-hold), "spin" (--spin-hold) or None
    (--no-launch-hold)."""
    if not launch_hold:
        return None
    return "self" if self_hold else "busy" if busy else "spin"


def self_hold_builds(rep_ms, host_ms, hold_ms):
    """Whether the self hold can build hold_ms of GPU queue: a rep's GPU time outlasts the host's time to queue it
    by SELF_HOLD_MARGIN, and the reps it takes run at most HOLD_CAP_MS."""
    if not (rep_ms > SELF_HOLD_MARGIN * host_ms and math.isfinite(rep_ms)):
        return False
    return self_hold_reps(rep_ms, host_ms, hold_ms) * rep_ms <= HOLD_CAP_MS


def self_hold_reps(rep_ms, host_ms, hold_ms):
    """Reps the self hold queues for hold_ms of GPU queue: each adds rep_ms - host_ms (self_hold_builds first)."""
    return max(1, math.ceil(hold_ms / (rep_ms - host_ms)))


def fwd_mode(training):
    """The settings' fwd_mode: how fwd cases were timed ("training": --fwd-training, else "inference")."""
    return "training" if training else "inference"


# flashbench's relative verification rule (src/judge.h, judge.cpp), for --callable kernels.
DTYPE_EPS = {"fp64": 2.0 ** -52, "fp32": 2.0 ** -23, "fp16": 2.0 ** -10, "bf16": 2.0 ** -7}
FLOOR_ULPS = 2.0
TOL_TILED = {"fp64": 1e-12, "fp32": 2.0 ** -13, "fp16": 2.0 ** -8, "bf16": 2.0 ** -5}  # no plain baseline
CANCELLED_GRADIENT_SHARE = 1.0 / 16
KERNEL_NAME = re.compile(r"^[A-Za-z0-9_.+-]+$")


def parse_callable(arg):
    """--callable "module:function" (module: a dotted name or a path to a .py file; function: a name, or
    dotted attributes such as Class.method) -> (module, function). ValueError with the flag's name."""
    module, sep, function = arg.rpartition(":")
    if not sep or not module or not function:
        raise ValueError(f"--callable {arg}: expected MODULE:FUNCTION, e.g. mykernels:attention or "
                         "examples/python/triton_attention.py:attention")
    if not all(part.isidentifier() for part in function.split(".")):
        raise ValueError(f"--callable {arg}: '{function}' is not a Python name")
    return module, function


def timing_order(backends, callables, callables_first=False):
    """The kernels in the order each case times them: the SDPA backends as --backends names them, the callables
    after them (before them with --callables-first)."""
    return list(callables) + list(backends) if callables_first else list(backends) + list(callables)


def callable_kernel_names(specs, name=None):
    """Kernel names of the --callable specs [(module, function)]: the function's name, or --name (only
    with one callable). ValueError if a name is taken twice, is an SDPA backend's, or has characters
    flashbench's kernel names do not."""
    if name is not None and len(specs) != 1:
        raise ValueError(f"--name {name}: give it with exactly one --callable (got {len(specs)})")
    names = [name] if name is not None else [function.split(".")[-1] for _, function in specs]
    for n in names:
        flag = "--name" if name is not None else "--callable"
        if not KERNEL_NAME.match(n):
            raise ValueError(f"{flag}: kernel name '{n}' may hold only A-Z a-z 0-9 _ . + -")
        if n in BACKENDS:
            raise ValueError(f"{flag}: kernel name '{n}' is an SDPA backend's; choose another with --name")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"--callable: two callables named '{dup[0]}'; run them one at a time with --name")
    return names


def load_callable(module, function):
    """Imports `function` from `module` (a .py path or a module name). ValueError saying what failed."""
    where = f"--callable {module}:{function}"
    try:
        if module.endswith(".py") or os.sep in module:
            if not os.path.isfile(module):
                raise ValueError(f"{where}: no such file '{module}'")
            name = "fb_callable_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(module))[0])
            spec = importlib.util.spec_from_file_location(name, module)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[name] = mod  # decorators such as triton.jit look their module up here
            spec.loader.exec_module(mod)
        else:
            mod = importlib.import_module(module)
    except ValueError:
        raise
    except Exception as e:  # ImportError, and whatever the module raises while importing
        raise ValueError(f"{where}: importing it failed ({type(e).__name__}: {one_line(e, 200)})") from None
    obj = mod
    for attr in function.split("."):
        if not hasattr(obj, attr):
            raise ValueError(f"{where}: {module} has no '{function}'")
        obj = getattr(obj, attr)
    if not callable(obj):
        raise ValueError(f"{where}: '{function}' is a {type(obj).__name__}, not a function")
    return obj


def ulp_at(m, dtype):
    """Spacing of `dtype`'s numbers at magnitude m (judge.cpp's ulp_at)."""
    if not (m > 0) or not math.isfinite(m):
        return 0.0
    return DTYPE_EPS[dtype] * 2.0 ** math.floor(math.log2(m))


def judge_callable(case, errors, magnitudes, plain_errors):
    """flashbench's verdict for a callable's outputs (module docstring): errors, magnitudes (max |ref|)
    and plain_errors (the plain attention's errors, or None when it could not run) per tensor name ->
    (verified, {name: bound}, rule, {name: (scale, rule of that tensor when it differs)}).
    A cancelled dQ/dK (its own scale below dV's / 16) meets the dtype's own bound at dV's / 16 even
    beside the plain baseline, as in judge.cpp's tensor_bound."""
    dtype = case["dtype"]
    _, seq_k = seq_lengths(case)
    acc = "fp64" if dtype == "fp64" else "fp32"
    dv_scale = magnitudes.get("dV", math.nan)
    bounds, details = {}, {}
    rule = "2x-baseline" if plain_errors is not None and all(
        math.isfinite(plain_errors.get(t, math.nan)) for t in errors) else "dtype-bound"
    for t, err in errors.items():
        own = magnitudes[t]
        m = own
        if t in ("dQ", "dK") and math.isfinite(dv_scale):
            m = max(own, CANCELLED_GRADIENT_SHARE * dv_scale)
        cancelled = m > own
        if rule == "2x-baseline" and not cancelled:
            f = 3.0 if t.startswith("d") else 2.0
            bounds[t] = (f * plain_errors[t] + FLOOR_ULPS * ulp_at(m, dtype)
                         + DTYPE_EPS[acc] * math.sqrt(max(seq_k, 1)) * m)
        else:
            bounds[t] = TOL_TILED[dtype] * m
        details[t] = (m, "dtype-bound (cancelled)" if cancelled and rule == "2x-baseline" else None)
    verified = bool(errors) and all(err <= bounds[t] for t, err in errors.items())  # NaN never passes
    return verified, bounds, rule, details


def one_line(text, limit=MAX_REASON):
    """An exception's text as one line: whitespace runs folded, cut at `limit` characters."""
    s = re.sub(r"\s+", " ", str(text)).strip()
    return s if len(s) <= limit else s[:limit - 3] + "..."


def summarize(times_ms):
    """The time statistics record.cpp writes: median (mean of the middle two for even n), min, max,
    mean, sample stddev (n - 1; 0 for one rep)."""
    v = sorted(times_ms)
    n = len(v)
    if n == 0:
        return {"median": 0.0, "min": 0.0, "max": 0.0, "mean": 0.0, "stddev": 0.0, "reps": 0}
    median = v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])
    mean = sum(v) / n
    stddev = math.sqrt(sum((x - mean) ** 2 for x in v) / (n - 1)) if n > 1 else 0.0
    return {"median": median, "min": v[0], "max": v[-1], "mean": mean, "stddev": stddev, "reps": n}


def math_bytes_estimate(case):
    """Bytes torch-math needs beyond its inputs: N x N scores and probabilities (computed in fp32 for
    fp16/bf16 inputs, PyTorch's default), their gradients for a backward, and K/V expanded to every
    query head for GQA. An estimate for deciding whether to try, not a measurement."""
    b, h, d = case["batch"], case["heads"], case["head_dim"]
    nq, nk = seq_lengths(case)
    elem = 8 if case["dtype"] == "fp64" else 4
    nn_tensors = 3 if case["pass"] == "fwd" else 6
    gqa = 2 * b * h * nk * d * elem if case["kv_heads"] != h else 0
    return b * h * nq * nk * elem * nn_tensors + gqa


def wants_reference(case, ref_max_seq, verify):
    return verify and max(seq_lengths(case)) <= ref_max_seq


def mask_refusal(case):
    """Why the peers do not run a case (None when they do): causal with seq_q > seq_k has query rows
    that see no key, which SDPA leaves undefined (NaN) while flashbench defines O = 0 there."""
    nq, nk = seq_lengths(case)
    if case["causal"] and nq > nk:
        return (f"causal with seq_q {nq} > seq_k {nk}: SDPA leaves the {nq - nk} query rows that see no "
                "key undefined (flashbench: O = 0, LSE = -inf)")
    return None


def output_names(pass_):
    return {"fwd": ["O"], "bwd": ["dQ", "dK", "dV"], "fwd+bwd": ["O", "dQ", "dK", "dV"]}[pass_]


def make_record(case, kernel, status, reason="", times_ms=(), peak_bytes=0, errors=None, verdict=None):
    """One results record in the schema src/record.cpp writes. `verdict`: judge_callable's verdict for a
    judged kernel; None leaves `verified` null (the SDPA peers are measured only)."""
    flops = case_flops(case)
    t = summarize(list(times_ms)) if status == "ok" else summarize([])
    tflops = flops / (t["median"] * 1e-3) / 1e12 if status == "ok" and t["median"] > 0 else 0.0
    ref = None
    if errors:
        ref = max(errors.values(), key=lambda e: (math.isnan(e), e))  # NaN counts as the worst
        if not math.isfinite(ref):
            ref = math.inf
    return {
        "key": case_key(case),
        "case": case_json(case),
        "kernel": kernel,
        "status": status,
        "reason": reason,
        "time_ms": {**{k: (encode_number(v) if k != "reps" else v) for k, v in t.items()},
                    "samples": [encode_number(x) for x in times_ms] if status == "ok" else []},
        "flops": flops,
        "tflops": tflops,
        "bytes_moved": 0.0,
        "gbps": 0.0,
        "memory": {"peak_bytes": int(peak_bytes)},
        "max_abs_diff": None,
        "ref_max_abs_err": encode_number(ref),
        "verified": verdict[0] if verdict else None,
        "errors": errors_json(errors, verdict),
    }


def errors_json(errors, verdict):
    out = {}
    for name, e in (errors or {}).items():
        out[name] = {"ref": encode_number(e)}
        if verdict:
            scale, tensor_rule = verdict[3][name]
            out[name]["scale"] = encode_number(scale)
            out[name]["bound"] = encode_number(verdict[1][name])
            if tensor_rule:
                out[name]["rule"] = tensor_rule
    if verdict:
        out["rule"] = verdict[2]
    return out


GIT_NAME = re.compile(r"[A-Za-z0-9._-]+")


def env_git():
    """The environment's FLASHBENCH_GIT (as cmake/version.cmake reads it: the commit to name where the checkout's git
    metadata is not the tree's, e.g. a copy of a checkout on another machine), or None where unset or empty. A name
    that is not letters, digits, '.', '_', '-' raises ValueError."""
    git = os.environ.get("FLASHBENCH_GIT", "")
    if not git:
        return None
    if not GIT_NAME.fullmatch(git):
        raise ValueError(f"FLASHBENCH_GIT: '{git}' is not a commit name (letters, digits, '.', '_', '-')")
    return git


def tool_info():
    """{name, version, git}: the version from CMakeLists.txt's project(), the commit from FLASHBENCH_GIT (env_git)
    or else from git."""
    version = "unknown"
    try:
        with open(os.path.join(HERE, "..", "CMakeLists.txt")) as f:
            m = re.search(r"project\(\s*flashbench\s+VERSION\s+([0-9.]+)", f.read())
            if m:
                version = m.group(1)
    except OSError:
        pass
    git = env_git()
    if git is not None:
        return {"name": "flashbench-peers", "version": version, "git": git}
    git = "unknown"
    try:
        out = subprocess.run(["git", "-C", HERE, "describe", "--always", "--dirty", "--abbrev=12"],
                             capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            git = out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return {"name": "flashbench-peers", "version": version, "git": git}


def case_seed(seed, key):
    """A per-case seed from the spec's seed and the case key: a case's inputs do not depend on which
    other cases the spec holds."""
    return (seed * 1000003 + zlib.crc32(key.encode())) % (1 << 63)


def format_table(records):
    lines = [f"{'case':<44} {'kernel':<16} {'status':<8} {'median ms':>10} {'TFLOP/s':>8} "
             f"{'peak MiB':>9} {'err vs fp64':>11}"]
    for r in records:
        if r["status"] == "ok":
            err = r["ref_max_abs_err"]
            err_s = "-" if err is None else (err if isinstance(err, str) else f"{err:.2e}")
            lines.append(f"{r['key']:<44} {r['kernel']:<16} {'ok':<8} {r['time_ms']['median']:>10.4f} "
                         f"{r['tflops']:>8.1f} {r['memory']['peak_bytes'] / MIB:>9.1f} {err_s:>11}")
        else:
            lines.append(f"{r['key']:<44} {r['kernel']:<16} {r['status']:<8} {one_line(r['reason'], 60)}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# PyTorch side


class Unavailable(Exception):
    """No PyTorch with CUDA here: the message says what is missing."""


def import_torch(device_index):
    try:
        import torch
    except ImportError as e:
        raise Unavailable(f"PyTorch is not installed here (import torch: {e}); run peers.py where torch "
                          "with CUDA is") from None
    if not torch.cuda.is_available():
        raise Unavailable(f"PyTorch {getattr(torch, '__version__', '?')} is here but sees no CUDA device; "
                          "peers.py measures GPU kernels")
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as e:
        raise Unavailable(f"PyTorch {torch.__version__} has no torch.nn.attention.sdpa_kernel ({e}); "
                          "peers.py needs PyTorch 2.3 or newer") from None
    if device_index >= torch.cuda.device_count():
        raise Unavailable(f"--device {device_index}: only {torch.cuda.device_count()} CUDA device(s) visible")
    return torch, SDPBackend, sdpa_kernel


class Ready:
    """A kernel that took the case's first call and its warm-up (Peers.ready): its record's name, the UserKernel (None
    for an SDPA backend), one rep (timed), a factory of the context each call runs in (the SDPA backend's choice),
    the host's and the GPU's time per rep from the warm-up (ms) and the first call's peak memory (bytes)."""

    def __init__(self, kernel, user, timed, context, host_ms, rep_ms, peak):
        self.kernel, self.user, self.timed, self.context = kernel, user, timed, context
        self.host_ms, self.rep_ms, self.peak = host_ms, rep_ms, peak


class RoundFailure(Exception):
    """Peers.timed_rounds: the kernel at `index` of its list raised `error` in a timed rep."""

    def __init__(self, index, error):
        super().__init__(str(error))
        self.index, self.error = index, error


def round_orders(n_kernels):
    """The kernels' orders, a round each, of interleaved reps (--interleave): a Williams design, so that over its
    rounds (n_kernels of them, 2 n_kernels for an odd count) each kernel takes each place equally often and follows
    each other kernel within a round equally often (the kernel before one leaves the GPU's clock and heat where it
    left them: docs/perf-notes.md, session 56's call K)."""
    n = n_kernels
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:  # 0, 1, n - 1, 2, n - 2, ...
        if len(first) % 2:
            first.append(lo)
            lo += 1
        else:
            first.append(hi)
            hi -= 1
    rows = [[(x + r) % n for x in first] for r in range(n)]
    if n % 2:
        rows += [row[::-1] for row in rows]
    return rows


def round_order(n_kernels, rep):
    """The kernels' order in the rep-th round of interleaved reps (round_orders, cycled; timed_rounds' order)."""
    rows = round_orders(n_kernels)
    return rows[rep % len(rows)]


class UserKernel:
    """A --callable: its kernel name, where it came from ("module:function") and the function."""

    def __init__(self, name, origin, fn):
        self.name, self.origin, self.fn = name, origin, fn


def kernel_name(kernel):
    return kernel.name if isinstance(kernel, UserKernel) else kernel


class Peers:
    def __init__(self, torch, SDPBackend, sdpa_kernel, device_index, warmup, reps, ref_max_seq, verify,
                 launch_hold=True, fwd_training=False, busy_hold=True, self_hold=False):
        import torch.nn.functional as F
        self.torch, self.F = torch, F
        self.SDPBackend, self.sdpa_kernel = SDPBackend, sdpa_kernel
        self.dev = torch.device("cuda", device_index)
        torch.cuda.set_device(self.dev)
        self.props = torch.cuda.get_device_properties(self.dev)
        self.warmup, self.reps = warmup, reps
        self.warmup_time_s = 0.1  # flashbench run's default --warmup-time
        self.ref_max_seq, self.verify = ref_max_seq, verify
        l2 = int(getattr(self.props, "L2_cache_size", 0)) or 64 * MIB  # older torch: assume a large L2
        self.flush_buf = torch.empty(L2_FLUSH_FACTOR * l2, dtype=torch.uint8, device=self.dev)
        self.l2_flush_mode = l2_flush_mode(os.environ)  # FB_L2_FLUSH, as flashbench's CUDA backend reads it
        # clean: a second buffer as large, read after the write (float32: one reduction reads it at full speed)
        self.clean_buf = (torch.zeros(L2_FLUSH_FACTOR * l2 // 4, dtype=torch.float32, device=self.dev)
                          if self.l2_flush_mode == "clean" else None)
        # The spin hold without torch.cuda._sleep (a private function, there since PyTorch 1.x): no hold, and the
        # settings say so.
        self.launch_hold = launch_hold and (busy_hold or callable(getattr(torch.cuda, "_sleep", None)))
        self.hold_short = []  # keys of the records whose last hold ended before their reps were queued
        self.fwd_training = fwd_training  # fwd cases as a training forward (--fwd-training)
        self.busy_hold = busy_hold  # the hold as matrix products (the default), not a spin (--spin-hold)
        self.self_hold = self_hold  # the hold as the peer's own reps (--self-hold)
        self.hold_fallback = []  # keys of the records the self hold could not hold: timed behind the busy hold
        self.busy_bufs, self.busy_ms = None, None  # made and timed at the first busy hold

    def device_json(self):
        t = self.torch
        p = self.props
        cudnn = t.backends.cudnn.version() if t.backends.cudnn.is_available() else None
        return {"name": p.name, "index": self.dev.index, "sm_count": p.multi_processor_count,
                "memory_bytes": int(p.total_memory), "l2_bytes": int(getattr(p, "L2_cache_size", 0)),
                "compute_capability": f"{p.major}.{p.minor}", "torch": t.__version__,
                "cuda": t.version.cuda, "cudnn": cudnn}

    def flush_l2(self):
        self.flush_buf.zero_()
        if self.clean_buf is not None:  # the write's dirty lines go back to memory here, not in the timed rep
            self.clean_buf.sum()

    # ---- inputs and one run ----

    def inputs(self, case, seed, input_scale=1.0):
        t = self.torch
        g = t.Generator(device=self.dev)
        g.manual_seed(case_seed(seed, case_key(case)))
        dt = getattr(t, TORCH_DTYPES[case["dtype"]])
        b, h, kv, d = case["batch"], case["heads"], case["kv_heads"], case["head_dim"]
        nq, nk = seq_lengths(case)
        grad = case["pass"] != "fwd" or self.fwd_training  # a training forward's inputs need gradients
        do_needed = case["pass"] != "fwd"

        def randn(heads, n, scale=1.0):
            x = t.randn(b, heads, n, d, generator=g, device=self.dev, dtype=t.float32) * scale
            return x.to(dt).requires_grad_(grad)

        # Q and K scaled like flashbench's (spec input_scale): scores grow as its square.
        q, k, v = randn(h, nq, input_scale), randn(kv, nk, input_scale), randn(kv, nk)
        do = t.randn(b, h, nq, d, generator=g, device=self.dev, dtype=dt) if do_needed else None
        return q, k, v, do

    def mask_args(self, case):
        """SDPA's masking arguments for flashbench's causal rule (bottom-right aligned)."""
        nq, nk = seq_lengths(case)
        if not case["causal"] or nq == 1:  # one query row sees every key: no mask at all
            return {"is_causal": False}
        if nq == nk:
            return {"is_causal": True}
        # is_causal aligns top-left; the lower-right causal bias is what flashbench computes (PyTorch
        # >= 2.3; before it, the same rule as a boolean mask, which fewer backends take).
        try:
            from torch.nn.attention.bias import causal_lower_right
            return {"attn_mask": causal_lower_right(nq, nk)}
        except ImportError:
            t = self.torch
            keep = t.ones(nq, nk, dtype=t.bool, device=self.dev).tril(diagonal=nk - nq)
            return {"attn_mask": keep}

    def forward(self, case, q, k, v):
        return self.F.scaled_dot_product_attention(
            q, k, v, scale=1.0 / math.sqrt(case["head_dim"]),
            enable_gqa=case["heads"] != case["kv_heads"], **self.mask_args(case))

    def runner(self, case, q, k, v, do, forward):
        """(prepare, timed): prepare() runs untimed before the reps; timed() is one rep and returns the
        outputs {name: tensor}. forward(case, q, k, v) -> O."""
        t = self.torch

        def differentiable(o):
            if not o.requires_grad:  # e.g. a Triton forward with no autograd.Function around it
                raise NotImplementedError("the callable's output has no grad_fn: it is forward only")
            return o

        if case["pass"] == "fwd":
            if self.fwd_training:  # autograd on, inputs that require grad: the backend keeps what a backward needs
                def timed():
                    with t.enable_grad():
                        return {"O": forward(case, q, k, v)}
            else:
                def timed():
                    with t.no_grad():
                        return {"O": forward(case, q, k, v)}
            return (lambda: None), timed
        if case["pass"] == "bwd":
            state = {}

            def prepare():
                state["o"] = differentiable(forward(case, q, k, v))

            def timed():
                dq, dk, dv = t.autograd.grad(state["o"], (q, k, v), do, retain_graph=True)
                return {"dQ": dq, "dK": dk, "dV": dv}
            return prepare, timed

        def timed():
            o = differentiable(forward(case, q, k, v))
            dq, dk, dv = t.autograd.grad(o, (q, k, v), do)
            return {"O": o.detach(), "dQ": dq, "dK": dk, "dV": dv}
        return (lambda: None), timed

    # ---- the fp64 reference ----

    def reference(self, case, q, k, v, do):
        """fp64 outputs {name: tensor} of softmax(Q K^T * scale) V (and its gradients for a backward),
        in blocks of query rows so that no more than REF_BLOCK_BUDGET bytes of N x N temporaries live
        at once. Each block covers one (batch, K/V head) with its group of query heads, so dK and dV
        add up over the blocks of rows."""
        t = self.torch
        b, h, kv, d = case["batch"], case["heads"], case["kv_heads"], case["head_dim"]
        nq, n = seq_lengths(case)  # n: keys, the columns of the score blocks
        offset = n - nq  # causal: query i sees keys j <= i + offset
        group = h // kv
        scale = 1.0 / math.sqrt(d)
        grad = case["pass"] != "fwd"
        q64, k64, v64 = (x.detach().to(t.float64) for x in (q, k, v))
        do64 = do.to(t.float64) if grad else None
        out = {"O": t.empty_like(q64)} if case["pass"] != "bwd" else {}
        if grad:
            out.update({"dQ": t.empty_like(q64), "dK": t.zeros_like(k64), "dV": t.zeros_like(v64)})
        rows = max(1, min(nq, REF_BLOCK_BUDGET // (REF_TEMPS * 8 * group * n)))
        cols = t.arange(n, device=self.dev)
        for bi in range(b):
            for kh in range(kv):
                hs = slice(kh * group, (kh + 1) * group)
                kk = k64[bi, kh].detach().requires_grad_(grad)  # (N, d)
                vv = v64[bi, kh].detach().requires_grad_(grad)
                for r0 in range(0, nq, rows):
                    r1 = min(nq, r0 + rows)
                    qq = q64[bi, hs, r0:r1].detach().requires_grad_(grad)  # (group, rows, d)
                    with t.set_grad_enabled(grad):
                        s = (qq @ kk.transpose(0, 1)) * scale  # (group, rows, N)
                        if case["causal"]:
                            masked = cols[None, :] > t.arange(r0, r1, device=self.dev)[:, None] + offset
                            s = s.masked_fill(masked, -math.inf)
                        o = t.softmax(s, dim=-1) @ vv  # (group, rows, d)
                    if "O" in out:
                        out["O"][bi, hs, r0:r1] = o.detach()
                    if grad:
                        gq, gk, gv = t.autograd.grad(o, (qq, kk, vv), do64[bi, hs, r0:r1])
                        out["dQ"][bi, hs, r0:r1] = gq
                        out["dK"][bi, kh] += gk
                        out["dV"][bi, kh] += gv
        return out

    def plain(self, case, q, k, v, do):
        """Plain attention in the case's dtype, S and P stored in it (flashbench's naive): the yardstick
        a callable's error is set against. Outputs {name: tensor}, like reference()."""
        t = self.torch
        h, kv = case["heads"], case["kv_heads"]
        nq, nk = seq_lengths(case)
        grad = case["pass"] != "fwd"
        qq, kk, vv = (x.detach().requires_grad_(grad) for x in (q, k, v))
        with t.set_grad_enabled(grad):
            ke = kk.repeat_interleave(h // kv, dim=1)  # (B, H, seq_k, d)
            ve = vv.repeat_interleave(h // kv, dim=1)
            s = (qq @ ke.transpose(-2, -1)) * (1.0 / math.sqrt(case["head_dim"]))  # (B, H, seq_q, seq_k)
            if case["causal"]:
                rows = t.arange(nq, device=self.dev)[:, None]
                s = s.masked_fill(t.arange(nk, device=self.dev)[None, :] > rows + (nk - nq), -math.inf)
            o = t.softmax(s, dim=-1) @ ve
        out = {"O": o.detach()} if case["pass"] != "bwd" else {}
        if grad:
            dq, dk, dv = t.autograd.grad(o, (qq, kk, vv), do)
            out.update({"dQ": dq, "dK": dk, "dV": dv})
        return out

    def verdict(self, case, errs, tensors, ref_cache):
        """judge_callable's verdict, with the plain attention's errors computed once per case (None, and
        the dtype's own bound, if it does not fit in memory)."""
        t = self.torch
        ref = ref_cache["ref"]
        if "plain" not in ref_cache:
            try:
                ref_cache["plain"] = self.errors(self.plain(case, *tensors), ref)
            except t.cuda.OutOfMemoryError:
                t.cuda.empty_cache()
                ref_cache["plain"] = None
        mags = {name: float(ref[name].abs().max()) for name in ref}
        plain = ref_cache["plain"]
        return judge_callable(case, errs, mags, {n: plain[n] for n in errs} if plain else None)

    def errors(self, outputs, ref):
        t = self.torch
        errs = {}
        for name in ref:
            x = outputs[name].detach()
            if not bool(t.isfinite(x).all()):
                errs[name] = math.inf
            else:
                errs[name] = float((x.to(t.float64) - ref[name]).abs().max())
        return errs

    # ---- one case x backend ----

    def measure(self, case, kernel, tensors, ref_cache):
        """One record of `kernel` (an SDPA backend's name or a UserKernel) on the case, its reps back to back."""
        t = self.torch
        ready = self.ready(case, kernel, tensors)
        if not isinstance(ready, Ready):
            return ready
        refusals = (Exception,) if ready.user else REFUSALS
        with ready.context():
            try:
                times, outputs = self.timed_reps(ready.timed, ready.host_ms, case_key(case), ready.kernel,
                                                 ready.rep_ms)
            except t.cuda.OutOfMemoryError as e:
                return self._skip(case, ready.kernel, "out of memory: " + one_line(e))
            except refusals as e:
                t.cuda.empty_cache()
                return make_record(case, ready.kernel, "failed", one_line(e))
        return self.finish(case, ready, times, outputs, tensors, ref_cache)

    def measure_interleaved(self, case, kernels, tensors, ref_cache):
        """The records of `kernels` on the case, in their order, their reps interleaved (--interleave): each kernel
        is checked and warmed up as measure() does, then timed_rounds() takes one rep of each in turn. A kernel that
        raises in the rounds is recorded failed (skipped: out of memory) and the rounds run again without it."""
        t = self.torch
        records, readies = {}, []
        for kernel in kernels:
            r = self.ready(case, kernel, tensors)
            if isinstance(r, Ready):
                readies.append(r)
            else:
                records[kernel_name(kernel)] = r
        results = {}
        while readies:
            try:
                results = self.timed_rounds(readies, case_key(case))
                break
            except RoundFailure as f:
                bad = readies.pop(f.index)
                t.cuda.synchronize(self.dev)
                t.cuda.empty_cache()
                oom = isinstance(f.error, t.cuda.OutOfMemoryError)
                records[bad.kernel] = make_record(case, bad.kernel, "skipped" if oom else "failed",
                                                  ("out of memory: " if oom else "") + one_line(f.error))
        for r in readies:
            times, outputs = results[r.kernel]
            records[r.kernel] = self.finish(case, r, times, outputs, tensors, ref_cache)
        return [records[kernel_name(k)] for k in kernels]

    def ready(self, case, kernel, tensors):
        """A kernel checked and warmed up on the case (a Ready), or its record where it cannot run: skipped (mask,
        memory, a refusal on the first call) or failed."""
        t = self.torch
        q, k, v, do = tensors
        user = kernel if isinstance(kernel, UserKernel) else None
        kernel = kernel_name(kernel)
        why = mask_refusal(case)
        if why:
            return make_record(case, kernel, "skipped", why)
        if kernel == "torch-math":
            need = math_bytes_estimate(case)
            t.cuda.empty_cache()  # memory the caching allocator holds but does not use counts as free
            free, _ = t.cuda.mem_get_info(self.dev)
            if need > MATH_FREE_FRACTION * free:
                return make_record(case, kernel, "skipped",
                                   f"math backend needs about {need / 2**30:.1f} GiB for its N x N tensors "
                                   f"(estimate), {free / 2**30:.1f} GiB free")
        if user:
            scale = 1.0 / math.sqrt(case["head_dim"])

            def forward(case_, q_, k_, v_):
                return user.fn(q_, k_, v_, is_causal=bool(case_["causal"]), scale=scale)
            context = contextlib.nullcontext
        else:
            forward = self.forward
            backend = getattr(self.SDPBackend, BACKENDS[kernel])

            def context():
                return self.sdpa_kernel([backend])
        # Whatever a user's function raises is its refusal (first call) or failure (later): Triton's
        # compilation errors, assertions on shapes, ...
        refusals = (Exception,) if user else REFUSALS
        prepare, timed = self.runner(case, q, k, v, do, forward)
        with context():
            # First call: does the backend take the case at all, and how much memory does it use.
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    t.cuda.synchronize(self.dev)
                    t.cuda.reset_peak_memory_stats(self.dev)
                    base = t.cuda.memory_allocated(self.dev)
                    prepare()
                    outputs = timed()
                    t.cuda.synchronize(self.dev)
                    peak = t.cuda.max_memory_allocated(self.dev) - base
                except t.cuda.OutOfMemoryError as e:
                    return self._skip(case, kernel, "out of memory: " + one_line(e))
                except refusals as e:
                    why = [one_line(w.message, 120) for w in caught]
                    return self._skip(case, kernel, one_line(e) + (f" ({'; '.join(why)})" if why else ""))
            if user and "O" in outputs and tuple(outputs["O"].shape) != tuple(q.shape):
                return make_record(case, kernel, "failed", f"the callable returned O of shape "
                                   f"{tuple(outputs['O'].shape)}, not q's {tuple(q.shape)}")
            try:
                del outputs
                for _ in range(self.warmup):
                    timed()
                # Then by time, as flashbench run does (--warmup-time, 0.1 s): an H200 that idled
                # comes back at lower clocks and steps up over ~100 ms. The host's time to queue a rep
                # (flush and timed(), no sync between) is measured here for the launch hold.
                # The GPU's time per rep (flush and timed()) too, for the self hold: the shortest batch's.
                t.cuda.synchronize(self.dev)
                host_ms, rep_ms = 0.0, math.inf
                t0 = time.perf_counter()
                while time.perf_counter() - t0 < self.warmup_time_s:
                    a, b = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
                    h0 = time.perf_counter()
                    a.record()
                    for _ in range(4):
                        self.flush_l2()
                        timed()
                    b.record()
                    host_ms = max(host_ms, (time.perf_counter() - h0) * 1e3 / 4)
                    t.cuda.synchronize(self.dev)
                    rep_ms = min(rep_ms, a.elapsed_time(b) / 4)
            except t.cuda.OutOfMemoryError as e:
                return self._skip(case, kernel, "out of memory: " + one_line(e))
            except refusals as e:
                t.cuda.empty_cache()
                return make_record(case, kernel, "failed", one_line(e))
        return Ready(kernel, user, timed, context, host_ms, rep_ms, max(0, peak))

    def finish(self, case, ready, times, outputs, tensors, ref_cache):
        """The record of a kernel timed: its errors against the fp64 reference where the case wants one, and for a
        callable the verdict."""
        errs = None
        if wants_reference(case, self.ref_max_seq, self.verify):
            if "ref" not in ref_cache:
                ref_cache["ref"] = self.reference(case, *tensors)
            errs = self.errors(outputs, ref_cache["ref"])
        del outputs
        verdict = self.verdict(case, errs, tensors, ref_cache) if ready.user and errs is not None else None
        return make_record(case, ready.kernel, "ok", times_ms=times, peak_bytes=ready.peak, errors=errs,
                           verdict=verdict)

    def timed_reps(self, timed, host_ms, key, kernel, rep_ms=math.inf):
        """The reps' times (ms) and the last rep's outputs. Each rep: the L2 flush, a start event, timed(),
        an end event, queued back to back with no sync between, as flashbench queues its reps.

        The launch hold: PyTorch's host work per rep (autograd, SDPA's dispatch; host_ms as measured in the
        warm-up) can outlast a short kernel, and a GPU that runs out of queued work would then wait for the
        next launch inside a timed window, adding host time to the peer's. So the reps are queued behind a
        spin kernel (torch.cuda._sleep) lasting HOLD_MARGIN times the host's time to queue them all; the
        GPU starts the first rep once every rep is queued. Whether the hold lasted that long is checked (its
        end event not yet reached when the host has queued the last rep); if not, the reps are run again
        behind a longer hold, and a hold that was still short is reported (self.hold_short).

        The self hold (--self-hold): the hold is the rep itself (flush and timed(), untimed) queued again and
        again, so the GPU runs the peer's own kernels back to back up to the first timed rep, as flashbench's
        reps follow its own. It builds a queue only where a rep's GPU time (rep_ms, from the warm-up) outlasts
        the host's time to queue one (host_ms): hold_ms of queue takes hold_ms / (rep_ms - host_ms) reps. Where
        that is not so by SELF_HOLD_MARGIN, or takes more than HOLD_CAP_MS of GPU time, the case falls back to
        the busy hold (named on stderr and in self.hold_fallback)."""
        t = self.torch
        events = [(t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)) for _ in range(self.reps)]
        hold_ms = min(HOLD_CAP_MS, HOLD_MARGIN * host_ms * self.reps + HOLD_PAD_MS)
        self_ops = self.launch_hold and self.self_hold
        if self_ops and not self_hold_builds(rep_ms, host_ms, hold_ms):
            self_ops = False
            self.hold_fallback.append(f"{key} {kernel}")
            print(f"{PROG}: {key} {kernel}: a rep's GPU time ({rep_ms:.3f} ms) does not outlast the host's "
                  f"({host_ms:.3f} ms) enough for the self hold: the busy hold instead", file=sys.stderr, flush=True)
        queue_hold = None if self_ops else self.hold_queuer(self.busy_hold or self.self_hold)

        def hold(ms):
            if queue_hold:
                return queue_hold(ms)
            held = t.cuda.Event()  # the peer's own reps, untimed, until the first timed one
            for _ in range(self_hold_reps(rep_ms, host_ms, ms)):
                self.flush_l2()
                timed()
            held.record()
            return held
        last = {}

        def reps():
            for start, end in events:
                self.flush_l2()
                start.record()
                last["outputs"] = timed()
                end.record()
        covered, hold_ms = self.run_held(hold_ms, hold, reps)
        outputs = last["outputs"]
        if self.launch_hold and not covered:
            self.hold_short.append(f"{key} {kernel}")
            print(f"{PROG}: {key} {kernel}: the launch hold ({hold_ms:.1f} ms) ended before the last rep was "
                  "queued: its times may include host time", file=sys.stderr, flush=True)
        return [s.elapsed_time(e) for s, e in events], outputs

    def run_held(self, hold_ms, hold, reps):
        """hold(ms) queues the launch hold and returns an event recorded after it; reps() queues the timed reps behind
        it. Where the hold ended before the last rep was queued (the event reached), both run again behind a hold
        HOLD_GROWTH times longer, up to HOLD_RETRIES times and HOLD_CAP_MS. Returns (covered, the last hold's ms)."""
        t = self.torch
        covered = False
        for attempt in range(HOLD_RETRIES + 1):
            held = hold(hold_ms)
            reps()
            covered = self.launch_hold and not held.query()  # the GPU still in the hold: every rep queued
            t.cuda.synchronize(self.dev)
            if covered or not self.launch_hold or hold_ms >= HOLD_CAP_MS:
                break
            if attempt < HOLD_RETRIES:
                hold_ms = min(HOLD_CAP_MS, hold_ms * HOLD_GROWTH)
        return covered, hold_ms

    def hold_queuer(self, busy):
        """queue(ms): queues the launch hold (busy products where busy, else a spin; nothing without a hold) and
        returns an event recorded after it. The products' or the spin's rate is measured here, once per call."""
        t = self.torch
        busy = self.launch_hold and busy
        cycles_per_ms = self.spin_cycles_per_ms() if self.launch_hold and not busy else 0.0
        busy_ms = self.busy_product_ms() if busy else 0.0

        def queue(hold_ms):
            held = t.cuda.Event()
            if busy:  # the GPU at work, not idling on one spinning thread, until the first rep
                for _ in range(max(1, math.ceil(hold_ms / busy_ms))):
                    self.busy_product()
            elif self.launch_hold:
                t.cuda._sleep(int(hold_ms * cycles_per_ms))
            if self.launch_hold:
                held.record()
            return held
        return queue

    def timed_rounds(self, readies, key):
        """--interleave: the reps of several kernels (Ready) taken in turn, one rep of each a round, the orders a
        Williams design (round_order), all queued behind one launch hold as timed_reps queues one kernel's; each rep
        the L2 flush, a start event, the kernel's timed() in its context, an end event. Whatever moves the GPU's speed
        over the case's time (the clock under a power cap, the heat the kernel before left) then falls on every
        kernel alike, where back-to-back reps (measure) give each kernel its own stretch of it.
        Returns {kernel: (times in ms, the last rep's outputs)}; RoundFailure where a kernel raises."""
        t = self.torch
        n = len(readies)
        events = [[(t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)) for _ in range(self.reps)]
                  for _ in readies]
        outputs = [None] * n
        hold_ms = min(HOLD_CAP_MS, HOLD_MARGIN * sum(r.host_ms for r in readies) * self.reps + HOLD_PAD_MS)
        orders = round_orders(n)  # once, not per rep: the host's time per rep is what the hold must cover

        def rounds():
            for rep in range(self.reps):
                for i in orders[rep % len(orders)]:
                    start, end = events[i][rep]
                    self.flush_l2()
                    start.record()
                    try:
                        with readies[i].context():
                            outputs[i] = readies[i].timed()
                    except Exception as e:  # noqa: BLE001 -- a kernel's own failure, recorded against it
                        raise RoundFailure(i, e) from e
                    end.record()
        covered, hold_ms = self.run_held(hold_ms, self.hold_queuer(self.busy_hold), rounds)
        if self.launch_hold and not covered:
            for r in readies:
                self.hold_short.append(f"{key} {r.kernel}")
            print(f"{PROG}: {key}: the launch hold ({hold_ms:.1f} ms) ended before the last interleaved rep was "
                  "queued: the times may include host time", file=sys.stderr, flush=True)
        return {r.kernel: ([s.elapsed_time(e) for s, e in events[i]], outputs[i]) for i, r in enumerate(readies)}

    def busy_product(self):
        """One launch of the busy hold: a bf16 product of two BUSY_N x BUSY_N matrices (fp16 on GPUs before sm_80,
        which have no bf16 tensor cores; buffers made at first use)."""
        t = self.torch
        if self.busy_bufs is None:
            dtype = t.bfloat16 if getattr(self.props, "major", 8) >= 8 else t.float16
            a = t.randn(BUSY_N, BUSY_N, device=self.dev, dtype=t.float32).to(dtype)
            self.busy_bufs = (a, a.clone(), t.empty_like(a))
        a, b, c = self.busy_bufs
        t.matmul(a, b, out=c)

    def busy_product_ms(self):
        """Milliseconds of one busy_product(), timed once (after two untimed ones) and kept."""
        if self.busy_ms is None:
            t = self.torch
            start, end = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
            for _ in range(2):
                self.busy_product()
            start.record()
            for _ in range(BUSY_CALIBRATION):
                self.busy_product()
            end.record()
            t.cuda.synchronize(self.dev)
            self.busy_ms = max(start.elapsed_time(end) / BUSY_CALIBRATION, 1e-3)
        return self.busy_ms

    def spin_cycles_per_ms(self):
        """torch.cuda._sleep's cycles per ms now (its spin counts SM clock cycles, and clocks move)."""
        t = self.torch
        a, b = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
        t.cuda._sleep(HOLD_CALIBRATION_CYCLES // 10)  # a hold of its own: the spin timed is queued before a
        a.record()
        t.cuda._sleep(HOLD_CALIBRATION_CYCLES)
        b.record()
        t.cuda.synchronize(self.dev)
        return HOLD_CALIBRATION_CYCLES / max(a.elapsed_time(b), 1e-3)

    def _skip(self, case, kernel, reason):
        self.torch.cuda.synchronize(self.dev)
        self.torch.cuda.empty_cache()
        return make_record(case, kernel, "skipped", reason)


# ---------------------------------------------------------------------------------------------------
# CLI


def parse_args(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("spec", help="flashbench sweep spec (JSON)")
    p.add_argument("-o", "--output", help="write results JSON here")
    p.add_argument("--backends", help="comma-separated subset of: " +
                   ", ".join(k[len("torch-"):] for k in BACKENDS) + ", timed in the order named (default: all, "
                   "in that order)")
    p.add_argument("--callable", dest="callables", action="append", default=[], metavar="MODULE:FUNCTION",
                   help="time and verify your own attention function, called like SDPA: FUNCTION(q, k, v, "
                   "is_causal=..., scale=...) (repeatable; MODULE may be a .py path)")
    p.add_argument("--name", help="kernel name of the one --callable in the results (default: the function's name)")
    p.add_argument("--callables-first", action="store_true",
                   help="time the --callable kernels before the --backends ones in each case (default: after)")
    p.add_argument("--interleave", action="store_true",
                   help="take the case's kernels' reps in turn, one rep of each a round, the rounds' orders a "
                   "Williams design, behind one launch hold, so that a drift of the GPU's speed over the case (clocks "
                   "under a power cap, heat) falls on every kernel alike (default: each kernel's reps back to back, in "
                   "turn; not with --self-hold)")
    p.add_argument("--device", type=int, default=0, help="CUDA device index (default 0)")
    p.add_argument("--ref-max-seq", type=int, default=DEFAULT_REF_MAX_SEQ,
                   help=f"largest N checked against the fp64 reference (default {DEFAULT_REF_MAX_SEQ})")
    hold = p.add_mutually_exclusive_group()
    hold.add_argument("--busy-hold", dest="hold", action="store_const", const="busy",
                      help="the default: the hold is bf16 matrix products that keep the GPU at work, so that the "
                      "timed reps start on a GPU as warm as under flashbench's back-to-back reps")
    hold.add_argument("--self-hold", dest="hold", action="store_const", const="self",
                      help="make the hold the peer's own reps, untimed, queued back to back until the first timed "
                      "one: the GPU in the peer's own steady state, as flashbench's reps follow its own (a case whose "
                      "reps take the host longer to queue than the GPU to run falls back to the busy hold)")
    hold.add_argument("--spin-hold", dest="hold", action="store_const", const="spin",
                      help="make the hold a one-thread spin (torch.cuda._sleep; the default of sessions 44-53): the "
                      "GPU idles through it, and a power-limited kernel then starts its reps at higher clocks than "
                      "flashbench's reps run at")
    hold.add_argument("--no-launch-hold", dest="hold", action="store_const", const=None,
                      help="queue the timed reps without the GPU-side hold (the timing of peers.py before session "
                      "44: a rep's window can then include PyTorch's host time where that outlasts the kernels)")
    p.set_defaults(hold="busy")
    p.add_argument("--fwd-training", action="store_true",
                   help="time fwd cases as a training forward (inputs that require grad, autograd on: every backend "
                   "computes the row log-sum-exp, as flashbench's forwards do); default: as inference, under "
                   "torch.no_grad (PyTorch's cuDNN then runs its graph without the log-sum-exp)")
    p.add_argument("--list", action="store_true", help="print the cases the spec expands to and exit")
    args = p.parse_args(argv)
    args.launch_hold, args.busy_hold, args.self_hold = args.hold is not None, args.hold == "busy", args.hold == "self"
    if args.interleave and args.self_hold:
        p.error("--interleave: not with --self-hold (that hold is one kernel's own reps; interleaved reps have one "
                "hold for every kernel of the case)")
    return args


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def main(argv=None):
    args = parse_args(argv)
    try:
        sweep = load_spec(args.spec)
        if sweep["rep_order"] == "interleaved" and not args.interleave:  # the spec asks for what --interleave does
            if args.self_hold:
                raise ValueError("spec.rep_order 'interleaved': not with --self-hold (one hold for every kernel)")
            args.interleave = True
        specs = [parse_callable(c) for c in args.callables]
        names = callable_kernel_names(specs, args.name) if specs else []
        if args.name is not None and not specs:
            raise ValueError("--name: names a --callable; give one")
        # With callables, the SDPA backends run only when asked for.
        kernels = backend_names(args.backends) if args.backends is not None or not specs else []
        env_git()  # a bad FLASHBENCH_GIT refused before any timing, not when the file is written
        l2_flush_mode(os.environ)  # and a bad FB_L2_FLUSH
    except (SpecError, ValueError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.ref_max_seq < 0:
        print(f"{PROG}: --ref-max-seq must not be negative, got {args.ref_max_seq}", file=sys.stderr)
        return EXIT_USAGE
    if args.list:
        for c in sweep["cases"]:
            print(case_key(c))
        return EXIT_OK
    if args.output:
        folder = os.path.dirname(args.output) or "."
        if not os.path.isdir(folder) or os.path.isdir(args.output):
            print(f"{PROG}: --output {args.output}: folder '{folder}' does not exist or the path is a folder",
                  file=sys.stderr)
            return EXIT_USAGE
    try:
        torch, SDPBackend, sdpa_kernel = import_torch(args.device)
    except Unavailable as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:  # after torch: a user's module imports torch or triton itself
        users = [UserKernel(name, f"{module}:{function}", load_callable(module, function))
                 for (module, function), name in zip(specs, names)]
        kernels = timing_order(kernels, users, args.callables_first)
    except ValueError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return EXIT_USAGE

    peers = Peers(torch, SDPBackend, sdpa_kernel, args.device, sweep["warmup"], sweep["reps"],
                  args.ref_max_seq, sweep["verify"], args.launch_hold, args.fwd_training, args.busy_hold,
                  args.self_hold)
    records = []
    cases = sweep["cases"]
    for i, case in enumerate(cases, 1):
        if case["dtype"] not in TORCH_DTYPES:  # fp8: SDPA takes no e4m3 inputs
            why = f"PyTorch SDPA takes no {case['dtype']} inputs"
            for kernel in kernels:
                records.append(make_record(case, kernel_name(kernel), "skipped", why))
                print(f"[{i}/{len(cases)}] {records[-1]['key']} {records[-1]['kernel']}: skipped: {why}",
                      file=sys.stderr, flush=True)
            continue
        tensors = peers.inputs(case, sweep["seed"], sweep.get("input_scale", 1.0))
        ref_cache = {}
        if args.interleave:
            case_records = peers.measure_interleaved(case, kernels, tensors, ref_cache)
        else:
            case_records = (peers.measure(case, kernel, tensors, ref_cache) for kernel in kernels)
        for rec in case_records:
            records.append(rec)
            what = (f"{rec['time_ms']['median']:.4f} ms" if rec["status"] == "ok"
                    else f"{rec['status']}: {one_line(rec['reason'], 100)}")
            print(f"[{i}/{len(cases)}] {rec['key']} {rec['kernel']}: {what}", file=sys.stderr, flush=True)
        del tensors, ref_cache
        torch.cuda.empty_cache()

    results = {
        "schema_version": SCHEMA_VERSION,
        "tool": tool_info(),
        "created": utc_now(),
        "backend": "torch",
        "device": peers.device_json(),
        "spec": sweep["spec"],
        "settings": {"warmup": sweep["warmup"], "warmup_min_s": 0.1, "reps": sweep["reps"], "seed": sweep["seed"],
                     "verify": sweep["verify"], "timer": "cuda-events", "l2_flush": True,
                     "l2_flush_bytes": peers.flush_buf.numel(), "l2_flush_mode": peers.l2_flush_mode,
                     "ref_max_seq": args.ref_max_seq,
                     "launch_hold": peers.launch_hold, "launch_hold_short": peers.hold_short,
                     "launch_hold_kind": hold_kind(peers.launch_hold, peers.busy_hold, peers.self_hold),
                     "launch_hold_fallback": peers.hold_fallback,
                     "fwd_mode": fwd_mode(peers.fwd_training),
                     "rep_order": "interleaved" if args.interleave else "blocked",
                     "backends": [k for k in kernels if not isinstance(k, UserKernel)],
                     "callables": [{"name": k.name, "callable": k.origin} for k in kernels
                                   if isinstance(k, UserKernel)]},
        "complete": True,  # peers.py has no interruption handling: a file it writes is whole
        "results": records,
    }
    print(format_table(records))
    if args.output:
        write_atomic(args.output, json.dumps(results, indent=2, allow_nan=False) + "\n")
        print(f"{PROG}: {len(records)} results -> {args.output}", file=sys.stderr)
    # A judged kernel (a callable) that fails verification fails the run, as in `flashbench run`.
    return EXIT_FAILED if any(r["status"] == "failed" or r["verified"] is False for r in records) else EXIT_OK


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `peers.py --list | head`
        sys.exit(EXIT_OK)
