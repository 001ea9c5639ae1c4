"""A flashbench sweep spec (JSON) -> the list of cases, in Python, with no third-party imports.

Mirrors src/spec.cpp so that peers.py and ncu_bytes.py run exactly the cases `flashbench run` runs on the
same spec: the same keys, required fields, defaults (kv_heads = heads, causal false, pass fwd, warmup 3,
reps 10, seed 42), caps, and product order (outermost first: dtype, head_dim, causal, pass, batch|tokens,
heads|model_dim, kv_heads, seq or seq_q then seq_k), with batch = tokens / seq_q when the spec gives tokens
and heads = model_dim / head_dim when it gives model_dim. `seq` is the shorthand for seq_q = seq_k; a spec
gives seq, or both seq_q and seq_k. Every rejection is a
SpecError whose text starts with the path of the field at fault ("spec.head_dim[1]: ...").

Which kernels can run a case is not checked here: flashbench's registry decides that for its kernels,
and each peer backend decides for itself at run time.
"""

import json
import math

MAX_INPUT_SCALE = 1e4  # as src/spec.cpp
KEYS = ("$schema", "name", "description", "seq", "seq_q", "seq_k", "batch", "tokens", "heads", "model_dim",
        "kv_heads", "head_dim", "dtype", "causal", "pass", "kernels", "warmup", "reps", "seed", "verify",
        "input_scale", "splits", "max_kv_bytes", "rep_order")
REP_ORDERS = ("blocked", "interleaved")
REQUIRED = ("head_dim", "dtype")  # and seq, or seq_q and seq_k
DTYPES = ("fp64", "fp32", "fp16", "bf16", "fp8")
PASSES = ("fwd", "bwd", "fwd+bwd")

# The caps of src/spec.cpp (far above any real run: a typo fails here, not in an allocator).
MAX_SEQ = 1 << 20
MAX_BATCH = 1 << 16
MAX_HEADS = 4096
MAX_HEAD_DIM = 512
MAX_TOKENS = MAX_BATCH * MAX_SEQ
MAX_TENSOR_ELEMS = 1 << 40
MAX_WARMUP = 100000
MAX_REPS = 100000
MAX_SEED = (1 << 53) - 1
MAX_CASES = 100000

DEFAULT_WARMUP = 3
DEFAULT_REPS = 10
DEFAULT_SEED = 42


class SpecError(Exception):
    """A spec that cannot be run; str() is one line starting with the field's path."""


def _describe(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f"the string '{v[:40]}'"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return "an object"
    return repr(v)


def _items(spec, key):
    """The elements of axis `key` with their paths: a list, or a lone scalar as a one-element list."""
    v = spec[key]
    path = "spec." + key
    if isinstance(v, list):
        if not v:
            raise SpecError(f"{path}: must list at least one value, got an empty list")
        return [(x, f"{path}[{i}]") for i, x in enumerate(v)]
    if isinstance(v, dict):
        raise SpecError(f"{path}: must be a list of values (or one value), got an object")
    return [(v, path)]


def _to_int(v, path, lo, hi, name):
    kind = "a non-negative integer" if lo == 0 else "a positive integer"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise SpecError(f"{path}: must be {kind}, got {_describe(v)}")
    if isinstance(v, float):
        if not math.isfinite(v) or v != math.floor(v):
            raise SpecError(f"{path}: must be {kind}, got {_describe(v)}")
        v = int(v)
    if v < lo:
        raise SpecError(f"{path}: must be {kind}, got {v}")
    if v > hi:
        raise SpecError(f"{path}: {v} is more than the cap {hi} on {name}")
    return v


def _no_duplicates(values, paths):
    seen = {}
    for v, p in zip(values, paths):
        k = (type(v), v)
        if k in seen:
            raise SpecError(f"{p}: duplicate value {_describe(v) if isinstance(v, str) else json.dumps(v)} "
                            f"(also at {seen[k]})")
        seen[k] = p


def _int_axis(spec, key, lo, hi):
    items = _items(spec, key)
    values = [_to_int(v, p, lo, hi, key) for v, p in items]
    _no_duplicates(values, [p for _, p in items])
    return values, [p for _, p in items]


def _enum_axis(spec, key, valid):
    items = _items(spec, key)
    for v, p in items:
        if not isinstance(v, str):
            raise SpecError(f"{p}: must be a string, got {_describe(v)}")
        if v not in valid:
            raise SpecError(f"{p}: unknown {key} '{v[:40]}'; valid: {', '.join(valid)}")
    values = [v for v, _ in items]
    _no_duplicates(values, [p for _, p in items])
    return values


def _bool_axis(spec, key):
    items = _items(spec, key)
    for v, p in items:
        if not isinstance(v, bool):
            raise SpecError(f"{p}: must be true or false, got {_describe(v)}")
    values = [v for v, _ in items]
    _no_duplicates(values, [p for _, p in items])
    return values


def _scalar(spec, key):
    v = spec[key]
    if isinstance(v, (list, dict)):
        raise SpecError(f"spec.{key}: must be a single value, got {_describe(v)}")
    return v


def expand_spec(spec):
    """A parsed spec -> {"cases": [case dicts], "kernels": [names] or None, "warmup", "reps", "seed",
    "verify"}. A case dict has the keys of a results record's `case`. Raises SpecError."""
    if not isinstance(spec, dict):
        raise SpecError(f"spec: must be a JSON object {{ ... }}, got {_describe(spec)}")
    unknown = [k for k in spec if k not in KEYS]
    if unknown:
        raise SpecError(f"spec: unknown key{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(repr(k) for k in unknown)}; valid keys: {', '.join(KEYS)}")
    split_seq = "seq_q" in spec or "seq_k" in spec
    if split_seq and "seq" in spec:
        raise SpecError("spec: give seq (seq_q = seq_k), or seq_q and seq_k, not both")
    if not split_seq and "seq" not in spec:
        raise SpecError("spec.seq: missing (required), or give seq_q and seq_k")
    if split_seq and "seq_q" not in spec:
        raise SpecError("spec.seq_q: missing: seq_k needs seq_q (or give seq for both)")
    if split_seq and "seq_k" not in spec:
        raise SpecError("spec.seq_k: missing: seq_q needs seq_k (or give seq for both)")
    for key in REQUIRED:
        if key not in spec:
            raise SpecError(f"spec.{key}: missing (required)")
    by_tokens = "tokens" in spec
    if by_tokens == ("batch" in spec):
        raise SpecError("spec: give batch or tokens, not both (batch = tokens / seq_q)" if by_tokens
                        else "spec: missing batch (or tokens, with batch = tokens / seq_q)")
    by_model_dim = "model_dim" in spec
    if by_model_dim == ("heads" in spec):
        raise SpecError("spec: give heads or model_dim, not both (heads = model_dim / head_dim)" if by_model_dim
                        else "spec: missing heads (or model_dim, with heads = model_dim / head_dim)")
    for key in ("name", "description", "$schema"):
        if key in spec and not isinstance(_scalar(spec, key), str):
            raise SpecError(f"spec.{key}: must be a string, got {_describe(spec[key])}")

    # seq is the query axis; the key lengths pair with it one to one (seq) or as a product (seq_k).
    seq, _ = _int_axis(spec, "seq_q" if split_seq else "seq", 1, MAX_SEQ)
    seq_k = _int_axis(spec, "seq_k", 1, MAX_SEQ)[0] if split_seq else None
    if by_tokens:
        outer, outer_paths = _int_axis(spec, "tokens", 1, MAX_TOKENS)
    else:
        outer, outer_paths = _int_axis(spec, "batch", 1, MAX_BATCH)
    if by_model_dim:  # the FlashAttention papers hold model_dim at 2048 while d varies
        heads, head_paths = _int_axis(spec, "model_dim", 1, MAX_HEADS * MAX_HEAD_DIM)
    else:
        heads, head_paths = _int_axis(spec, "heads", 1, MAX_HEADS)
    kv_given = "kv_heads" in spec
    kv_heads, kv_paths = _int_axis(spec, "kv_heads", 1, MAX_HEADS) if kv_given else ([None], [None])
    head_dim, _ = _int_axis(spec, "head_dim", 1, MAX_HEAD_DIM)
    dtype = _enum_axis(spec, "dtype", DTYPES)
    causal = _bool_axis(spec, "causal") if "causal" in spec else [False]
    passes = _enum_axis(spec, "pass", PASSES) if "pass" in spec else ["fwd"]
    kernels = None
    if "kernels" in spec:
        kernels = []
        for v, p in _items(spec, "kernels"):
            if not isinstance(v, str):
                raise SpecError(f"{p}: must be a string, got {_describe(v)}")
            kernels.append(v)
        _no_duplicates(kernels, [p for _, p in _items(spec, "kernels")])

    out = {"warmup": DEFAULT_WARMUP, "reps": DEFAULT_REPS, "seed": DEFAULT_SEED, "verify": True,
           "kernels": kernels}
    if "warmup" in spec:
        out["warmup"] = _to_int(_scalar(spec, "warmup"), "spec.warmup", 0, MAX_WARMUP, "warmup")
    if "reps" in spec:
        out["reps"] = _to_int(_scalar(spec, "reps"), "spec.reps", 1, MAX_REPS, "reps")
    if "seed" in spec:
        out["seed"] = _to_int(_scalar(spec, "seed"), "spec.seed", 0, MAX_SEED, "seed")
    if "verify" in spec:
        if not isinstance(_scalar(spec, "verify"), bool):
            raise SpecError(f"spec.verify: must be true or false, got {_describe(spec['verify'])}")
        out["verify"] = spec["verify"]
    out["rep_order"] = "blocked"
    if "rep_order" in spec:
        v = _scalar(spec, "rep_order")
        if v not in REP_ORDERS:
            raise SpecError(f"spec.rep_order: must be one of {', '.join(REP_ORDERS)}, got {_describe(v)}")
        out["rep_order"] = v
    out["input_scale"] = 1.0
    if "input_scale" in spec:
        v = _scalar(spec, "input_scale")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 < v <= MAX_INPUT_SCALE):
            raise SpecError(f"spec.input_scale: must be a number > 0 and at most {MAX_INPUT_SCALE}, "
                            f"got {_describe(v)}")
        out["input_scale"] = float(v)

    count = (len(dtype) * len(head_dim) * len(causal) * len(passes) * len(outer) * len(heads)
             * len(kv_heads) * len(seq) * (len(seq_k) if split_seq else 1))
    if count > MAX_CASES:
        raise SpecError(f"spec: the sweep has {count} cases, more than the cap {MAX_CASES}")

    def heads_of(h, d):
        return h // d if by_model_dim else h

    if by_model_dim:
        for m, mp in zip(heads, head_paths):
            for d in head_dim:
                if m % d != 0:
                    raise SpecError(f"{mp}: {m} is not a whole number of heads of {d} (heads = model_dim / "
                                    "head_dim must divide exactly)")
                if m // d > MAX_HEADS:
                    raise SpecError(f"{mp}: heads = model_dim / head_dim = {m} / {d} = {m // d} is more than "
                                    f"the cap {MAX_HEADS}")
    if kv_given:
        for kv, kp in zip(kv_heads, kv_paths):
            for h, hp in zip(heads, head_paths):
                for d in head_dim if by_model_dim else head_dim[:1]:
                    if heads_of(h, d) % kv != 0:
                        raise SpecError(f"{kp}: {kv} does not divide "
                                        f"{'heads (model_dim / head_dim)' if by_model_dim else hp} = "
                                        f"{heads_of(h, d)} (each K/V head serves heads / kv_heads query heads)")
    per = "seq_q" if split_seq else "seq"
    if by_tokens:
        for t, tp in zip(outer, outer_paths):
            for n in seq:
                if t % n != 0:
                    raise SpecError(f"{tp}: {t} tokens is not a whole number of sequences of {n} "
                                    f"(batch = tokens / {per} must divide exactly)")
                if t // n > MAX_BATCH:
                    raise SpecError(f"{tp}: batch = tokens / {per} = {t} / {n} = {t // n} is more than the "
                                    f"cap {MAX_BATCH} on batch")
    # Rows of Q (batch * seq_q) or K (batch * seq_k), whichever is larger (src/spec.cpp).
    max_batch = max(outer) // min(seq) if by_tokens else max(outer)
    rows = max(max(outer) if by_tokens else max_batch * max(seq), max_batch * max(seq_k or seq))
    max_heads = max(heads) // min(head_dim) if by_model_dim else max(heads)
    if rows * max_heads * max(head_dim) > MAX_TENSOR_ELEMS:
        raise SpecError(f"spec: {rows * max_heads * max(head_dim)} elements in one tensor (B*H*N*d), "
                        f"more than the cap {MAX_TENSOR_ELEMS} (2^40)")

    # splits only concerns flashbench's split-KV kernels (flash-decode): the cases here are its splits = 0
    # rows. max_kv_bytes leaves out cases whose K and V hold more bytes (src/spec.cpp).
    max_kv = spec.get("max_kv_bytes")
    if max_kv is not None and (isinstance(max_kv, bool) or not isinstance(max_kv, (int, float))
                               or not max_kv >= 1 or max_kv != max_kv or max_kv == float("inf")):
        raise SpecError(f"spec.max_kv_bytes: must be a number of bytes >= 1, got {max_kv!r}")
    elem_bytes = {"fp64": 8, "fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}

    cases = []
    for t in dtype:
        for d in head_dim:
            for c in causal:
                for p in passes:
                    for b in outer:
                        for h in heads:
                            for kv in kv_heads:
                                for n in seq:
                                    for nk in (seq_k if split_seq else [n]):
                                        nh = heads_of(h, d)
                                        nkv = nh if kv is None else kv
                                        bb = b // n if by_tokens else b
                                        if max_kv is not None and 2 * bb * nkv * nk * d * elem_bytes[t] > max_kv:
                                            continue
                                        cases.append({"batch": b // n if by_tokens else b, "heads": nh,
                                                      "kv_heads": nh if kv is None else kv,
                                                      "seq": n if n == nk else None, "seq_q": n, "seq_k": nk,
                                                      "head_dim": d, "dtype": t, "causal": c, "pass": p})
    out["cases"] = cases
    return out


def load_spec(path):
    """Reads and expands a spec file. Raises SpecError("PATH: reason")."""
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError as e:
        raise SpecError(f"{path}: cannot read spec file ({e.strerror})") from None
    try:
        spec = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        where = f" at line {e.lineno}, column {e.colno}" if isinstance(e, json.JSONDecodeError) else ""
        raise SpecError(f"{path}: spec: malformed JSON{where}: "
                        f"{e.msg if isinstance(e, json.JSONDecodeError) else e.reason}") from None
    try:
        out = expand_spec(spec)
    except SpecError as e:
        raise SpecError(f"{path}: {e}") from None
    out["spec"] = spec
    return out
