"""Reading flashbench results files, and writing them from Python (peers.py), with no third-party imports.

The results schema is written and read by src/record.cpp; this module mirrors its rules so the scripts
refuse what `flashbench compare` would refuse:
  * `schema_version` is "MAJOR.MINOR.PATCH"; only major SCHEMA_MAJOR is read (a newer minor still reads);
  * every number may be the string "inf", "-inf" or "nan" (JSON has no literal for them);
  * a missing or mistyped field is an error naming its path ("results[3].time_ms.median: expected a number").
Unknown fields are ignored.
"""

import json
import math
import os
import re

SCHEMA_VERSION = "1.1.0"  # what peers.py writes; src/record.h kSchemaVersion
SCHEMA_MAJOR = int(SCHEMA_VERSION.split(".")[0])

DTYPES = ("fp64", "fp32", "fp16", "bf16", "fp8")
DTYPE_BYTES = {"fp64": 8, "fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}  # fp8: e4m3 Q, K, V (O is bf16)
PASSES = ("fwd", "bwd", "fwd+bwd")
STATUSES = ("ok", "skipped", "failed")

# FLOPs of one pass relative to the forward (FlashAttention's convention, src/case.cpp).
PASS_FLOP_FACTOR = {"fwd": 1.0, "bwd": 2.5, "fwd+bwd": 3.5}

_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


class ResultsError(Exception):
    """A results file that cannot be used; str() is one line naming the file and the field."""


def seq_lengths(case):
    """(seq_q, seq_k) of a case dict that has seq_q and seq_k, or seq alone (self-attention)."""
    if "seq_q" in case or "seq_k" in case:
        return case["seq_q"], case["seq_k"]
    return case["seq"], case["seq"]


def case_key(case):
    """The key src/case.cpp Case::key() writes: "b1-h16-kv16-n4096-d128-bf16-causal-fwd" when
    seq_q == seq_k, "b1-h32-kv8-q1-k4096-d128-bf16-causal-fwd" otherwise."""
    nq, nk = seq_lengths(case)
    length = f"n{nq}" if nq == nk else f"q{nq}-k{nk}"
    return "b{batch}-h{heads}-kv{kv_heads}-{length}-d{head_dim}-{dtype}-{mask}-{pass_}".format(
        length=length, batch=case["batch"], heads=case["heads"], kv_heads=case["kv_heads"],
        head_dim=case["head_dim"], dtype=case["dtype"], mask="causal" if case["causal"] else "full",
        pass_=case["pass"])


def visible_pairs(seq_q, seq_k, causal):
    """(query, key) pairs a causal mask aligned bottom-right leaves visible (kernels/common/mask.h):
    query i sees keys j <= i + seq_k - seq_q."""
    if not causal:
        return seq_q * seq_k
    off = seq_k - seq_q
    return sum(min(seq_k, max(0, i + off + 1)) for i in range(seq_q))


def case_flops(case):
    """Model FLOPs of one case (src/case.cpp flops()): 4*B*H*seq_q*seq_k*d for the forward, times the
    pass factor; causal halves it when seq_q == seq_k (FlashAttention's figure) and otherwise counts
    the visible pairs exactly."""
    nq, nk = seq_lengths(case)
    pairs = float(nq) * nk
    if case["causal"]:
        pairs = pairs / 2 if nq == nk else float(visible_pairs(nq, nk, True))
    f = 4.0 * case["batch"] * case["heads"] * pairs * case["head_dim"]
    return f * PASS_FLOP_FACTOR[case["pass"]]


def case_json(case):
    """The "case" object the schema writes: seq_q and seq_k, plus seq when they are equal."""
    nq, nk = seq_lengths(case)
    out = {k: case[k] for k in ("batch", "heads", "kv_heads")}
    out.update({"seq_q": nq, "seq_k": nk})
    if nq == nk:
        out["seq"] = nq
    out.update({k: case[k] for k in ("head_dim", "dtype", "causal", "pass")})
    return out


# rep_drift(): src/record.h's rule and constants.
DRIFT_MIN_REPS = 6
DRIFT_WARN = 0.03


def rep_drift(samples):
    """The trend across a timing's reps (in run order): the median of the second half over the median of the first
    half, less 1 (with an odd count the middle rep is in neither); NaN with fewer than DRIFT_MIN_REPS reps or no
    positive first half. src/record.cpp rep_drift() is the same rule."""
    n = len(samples)
    if n < DRIFT_MIN_REPS:
        return math.nan

    def median(v):
        v = sorted(v)
        m = len(v)
        return v[m // 2] if m % 2 else 0.5 * (v[m // 2 - 1] + v[m // 2])
    half = n // 2
    first, second = median(samples[:half]), median(samples[n - half:])
    if not (first > 0) or not math.isfinite(first) or not math.isfinite(second):
        return math.nan
    return second / first - 1


def encode_number(x):
    """A float as the schema writes it: finite as a number, non-finite as "inf"/"-inf"/"nan"."""
    if x is None:
        return None
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def decode_number(v, path):
    if isinstance(v, bool):  # bool is an int in Python; the schema never writes true for a number
        raise ResultsError(f"{path}: expected a number")
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str) and v in _NONFINITE:
        return _NONFINITE[v]
    raise ResultsError(f"{path}: expected a number")


def _field(obj, name, path):
    if name not in obj:
        raise ResultsError(f"{_join(path, name)}: missing")
    return obj[name]


def _join(path, name):
    return f"{path}.{name}" if path else name


def _object(obj, name, path):
    v = _field(obj, name, path)
    if not isinstance(v, dict):
        raise ResultsError(f"{_join(path, name)}: expected an object")
    return v


def _string(obj, name, path):
    v = _field(obj, name, path)
    if not isinstance(v, str):
        raise ResultsError(f"{_join(path, name)}: expected a string")
    return v


def _integer(obj, name, path, lo):
    v = _field(obj, name, path)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ResultsError(f"{_join(path, name)}: expected an integer")
    if v < lo:
        raise ResultsError(f"{_join(path, name)}: must be at least {lo}")
    return v


def _boolean(obj, name, path):
    v = _field(obj, name, path)
    if not isinstance(v, bool):
        raise ResultsError(f"{_join(path, name)}: expected true or false")
    return v


def _number(obj, name, path):
    return decode_number(_field(obj, name, path), _join(path, name))


def _optional_number(obj, name, path):
    v = _field(obj, name, path)
    return None if v is None else decode_number(v, _join(path, name))


def schema_major(version, path="schema_version"):
    m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", version)
    if not m:
        raise ResultsError(f"{path}: '{version}' is not a version of the form MAJOR.MINOR.PATCH")
    return int(m.group(1))


def _read_case(obj, path):
    # seq_q and seq_k, or (files from before they existed) seq alone; seq beside them must agree.
    if "seq_q" in obj or "seq_k" in obj:
        nq, nk = _integer(obj, "seq_q", path, 1), _integer(obj, "seq_k", path, 1)
        if "seq" in obj and _integer(obj, "seq", path, 1) != nq or "seq" in obj and nq != nk:
            raise ResultsError(f"{path}.seq: {obj['seq']} does not match seq_q {nq} and seq_k {nk} "
                               "(seq is given only when they are equal)")
    else:
        nq = nk = _integer(obj, "seq", path, 1)
    c = {
        "batch": _integer(obj, "batch", path, 1),
        "heads": _integer(obj, "heads", path, 1),
        "kv_heads": _integer(obj, "kv_heads", path, 1),
        "seq": nq if nq == nk else None,  # N of self-attention; None when the lengths differ
        "seq_q": nq,
        "seq_k": nk,
        "head_dim": _integer(obj, "head_dim", path, 1),
        "dtype": _string(obj, "dtype", path),
        "causal": _boolean(obj, "causal", path),
        "pass": _string(obj, "pass", path),
    }
    if c["dtype"] not in DTYPES:
        raise ResultsError(f"{path}.dtype: unknown dtype '{c['dtype']}'")
    if c["pass"] not in PASSES:
        raise ResultsError(f"{path}.pass: unknown pass '{c['pass']}'")
    return c


def _read_record(obj, path):
    if not isinstance(obj, dict):
        raise ResultsError(f"{path}: expected an object")
    case = _read_case(_object(obj, "case", path), _join(path, "case"))
    key = _string(obj, "key", path)
    if key != case_key(case):
        raise ResultsError(f"{path}.key: '{key}' does not match the case ('{case_key(case)}')")
    status = _string(obj, "status", path)
    if status not in STATUSES:
        raise ResultsError(f"{path}.status: '{status}' is not ok, skipped or failed")
    kernel = _string(obj, "kernel", path)
    if not kernel:
        raise ResultsError(f"{path}.kernel: must not be empty")
    tpath = _join(path, "time_ms")
    t = _object(obj, "time_ms", path)
    time_ms = {k: _number(t, k, tpath) for k in ("median", "min", "max", "mean", "stddev")}
    time_ms["reps"] = _integer(t, "reps", tpath, 0)
    samples = t.get("samples")  # 1.1: every rep in run order (absent in 1.0 files and in peers.py's before 55)
    if samples is not None:
        if not isinstance(samples, list):
            raise ResultsError(f"{tpath}.samples: expected an array of numbers")
        time_ms["samples"] = [decode_number(v, f"{tpath}.samples[{i}]") for i, v in enumerate(samples)]
    verified = _field(obj, "verified", path)
    if verified is not None and not isinstance(verified, bool):
        raise ResultsError(f"{path}.verified: expected true, false or null")
    errors = _object(obj, "errors", path)
    return {
        "key": key,
        "case": case,
        "kernel": kernel,
        "status": status,
        "reason": _string(obj, "reason", path),
        "time_ms": time_ms,
        "flops": _number(obj, "flops", path),
        "tflops": _number(obj, "tflops", path),
        "bytes_moved": _number(obj, "bytes_moved", path),
        "gbps": _number(obj, "gbps", path),
        "peak_bytes": _integer(_object(obj, "memory", path), "peak_bytes", _join(path, "memory"), 0),
        "max_abs_diff": _optional_number(obj, "max_abs_diff", path),
        "ref_max_abs_err": _optional_number(obj, "ref_max_abs_err", path),
        "verified": verified,
        "errors": errors,
    }


def results_from_json(doc):
    """A parsed results document -> a dict with the same fields, numbers decoded. Raises ResultsError."""
    if not isinstance(doc, dict):
        raise ResultsError("expected a JSON object at the top level")
    version = _string(doc, "schema_version", "")
    major = schema_major(version)
    if major != SCHEMA_MAJOR:
        raise ResultsError(
            f"schema_version: '{version}' is not supported (these scripts read {SCHEMA_MAJOR}.x)")
    tool = _object(doc, "tool", "")
    for name in ("name", "version", "git"):
        _string(tool, name, "tool")
    settings = _object(doc, "settings", "")
    _integer(settings, "warmup", "settings", 0)
    _integer(settings, "reps", "settings", 1)
    spec = _field(doc, "spec", "")
    if not isinstance(spec, (dict, list)):  # `flashbench merge` keeps one spec per input file
        raise ResultsError("spec: expected an object or an array")
    complete = doc.get("complete", True)  # absent before schema 1.1: those runs were whole
    if not isinstance(complete, bool):
        raise ResultsError("complete: expected true or false")
    records = _field(doc, "results", "")
    if not isinstance(records, list):
        raise ResultsError("results: expected an array")
    return {
        "schema_version": version,
        "tool": tool,
        "created": _string(doc, "created", ""),
        "backend": _string(doc, "backend", ""),
        "device": _object(doc, "device", ""),
        "spec": spec,
        "settings": settings,
        "complete": complete,
        "results": [_read_record(r, f"results[{i}]") for i, r in enumerate(records)],
    }


def load_results(path):
    """Reads and checks one results file. Raises ResultsError("PATH: reason")."""
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError as e:
        raise ResultsError(f"{path}: cannot open: {e.strerror}") from None
    if not text.strip():
        raise ResultsError(f"{path}: empty file, expected a results JSON object")
    try:
        doc = json.loads(text.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ResultsError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise ResultsError(f"{path}:{e.lineno}:{e.colno}: malformed JSON: {e.msg}") from None
    try:
        return results_from_json(doc)
    except ResultsError as e:
        raise ResultsError(f"{path}: {e}") from None


def write_atomic(path, text):
    """Writes text to path whole or not at all: a temporary file beside it, flushed to disk, then renamed over it."""
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
