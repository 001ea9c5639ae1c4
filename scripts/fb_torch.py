#!/usr/bin/env python3
"""flashbench's built-in CUDA kernels as PyTorch functions (libflashbench_capi.so, include/flashbench/capi.h).

    python3 scripts/peers.py SPEC.json --callable scripts/fb_torch.py:flash_sm90 --backends cudnn -o out.json

times flashbench's flash-sm90 and PyTorch's cuDNN SDPA in one process and one timed loop (peers.py's: the same
flush, launch hold and events for both), where `flashbench run` beside `peers.py` times each in its own loop.
flash_sm90, flash, naive and cudnn (flashbench's in-binary cuDNN) take SDPA's arguments, as peers.py's
--callable does:
    FUNCTION(q, k, v, is_causal=False, scale=None) -> O
q (B, H, seq_q, d), k and v (B, kv_heads, seq_k, d) on the GPU, one dtype (float64, float32, float16, bfloat16);
causal is bottom-right aligned. The backward runs flashbench's backward through torch.autograd. A forward that no
backward can follow (no input requires grad, or under torch.no_grad: peers.py's default fwd timing) asks for no
log-sum-exp, as PyTorch's cuDNN then computes none: flash-sm90 writes O only (capi.h). `kernel(NAME)` returns such a
function for any kernel the library runs (`kernels()` lists them).

The library: FB_CAPI_LIB, else libflashbench_capi.so in build/ or build-dev/ of this checkout (scripts/setup.sh
builds it where CUDA is found). A second build's, FB_CAPI_LIB_BASE (the library of another commit, e.g. the one before
a kernel change), loads beside it: flash_sm90_base and flash_base are its kernels, `kernel(NAME, "FB_CAPI_LIB_BASE")`
any of them, so that peers.py times two builds of one kernel in one loop, reps interleaved (an A/B of a code change
that has no probe word to switch it).
"""
import ctypes
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
FB_PASS_FWD, FB_PASS_BWD = 1, 2
CAPI_VERSION = 3


class Call(ctypes.Structure):
    """fb_capi_call (include/flashbench/capi.h), field for field."""
    _fields_ = [("struct_size", ctypes.c_uint32), ("dtype", ctypes.c_int32), ("batch", ctypes.c_int32),
                ("heads", ctypes.c_int32), ("kv_heads", ctypes.c_int32), ("seq_q", ctypes.c_int32),
                ("seq_k", ctypes.c_int32), ("head_dim", ctypes.c_int32), ("causal", ctypes.c_int32),
                ("scale", ctypes.c_double),
                ("q", ctypes.c_void_p), ("k", ctypes.c_void_p), ("v", ctypes.c_void_p), ("o", ctypes.c_void_p),
                ("lse", ctypes.c_void_p), ("dout", ctypes.c_void_p), ("dq", ctypes.c_void_p),
                ("dk", ctypes.c_void_p), ("dv", ctypes.c_void_p), ("workspace", ctypes.c_void_p),
                ("workspace_size", ctypes.c_uint64), ("stream", ctypes.c_void_p)]


DEFAULT_ENV, BASE_ENV = "FB_CAPI_LIB", "FB_CAPI_LIB_BASE"


def library_path(env=DEFAULT_ENV):
    """The library the environment variable `env` names; for FB_CAPI_LIB, unset, the first build of this checkout
    that has one. Another variable (FB_CAPI_LIB_BASE) must be set."""
    path = os.environ.get(env)
    if path:
        return path
    if env != DEFAULT_ENV:
        raise FileNotFoundError(f"fb_torch: {env} is not set (the path of a second build's libflashbench_capi.so)")
    for build in ("build", "build-dev"):
        path = os.path.join(HERE, "..", build, "libflashbench_capi.so")
        if os.path.isfile(path):
            return os.path.normpath(path)
    raise FileNotFoundError("fb_torch: no libflashbench_capi.so in build/ or build-dev/ (build flashbench with "
                            "CUDA: scripts/setup.sh) and FB_CAPI_LIB is not set")


_libs = {}  # by real path: two variables naming one file share one loaded library
_by_env = {}  # (variable, its value) -> library: every call asks, so no path is resolved twice


def library(env=DEFAULT_ENV):
    """The library `env` names (library_path), loaded once, its signatures set and its version and struct size
    checked against this module's. Two different files load as two libraries side by side (ctypes loads each with
    RTLD_LOCAL, so each one's calls stay inside it)."""
    key = (env, os.environ.get(env))
    if key in _by_env:
        return _by_env[key]
    path = os.path.realpath(library_path(env))
    if path not in _libs:
        lib = ctypes.CDLL(path)
        lib.fb_capi_version.restype = ctypes.c_int
        lib.fb_capi_call_size.restype = ctypes.c_uint32
        lib.fb_capi_kernels.restype = ctypes.c_char_p
        lib.fb_capi_workspace_bytes.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.POINTER(Call),
                                                ctypes.POINTER(ctypes.c_uint64), ctypes.c_char_p, ctypes.c_size_t]
        for f in (lib.fb_capi_forward, lib.fb_capi_backward):
            f.argtypes = [ctypes.c_char_p, ctypes.POINTER(Call), ctypes.c_char_p, ctypes.c_size_t]
        for f in (lib.fb_capi_workspace_bytes, lib.fb_capi_forward, lib.fb_capi_backward):
            f.restype = ctypes.c_int
        if lib.fb_capi_version() != CAPI_VERSION:
            raise RuntimeError(f"fb_torch: {path} has C API version {lib.fb_capi_version()}, this module "
                               f"{CAPI_VERSION}")
        if lib.fb_capi_call_size() != ctypes.sizeof(Call):
            raise RuntimeError(f"fb_torch: {path}'s fb_capi_call is {lib.fb_capi_call_size()} bytes, this module's "
                               f"{ctypes.sizeof(Call)}")
        _libs[path] = lib
    _by_env[key] = _libs[path]
    return _libs[path]


def kernels(env=DEFAULT_ENV):
    """The names of the kernels the library runs."""
    return library(env).fb_capi_kernels().decode().split(",")


def check(rc, err, what):
    if rc != 0:
        raise RuntimeError(f"fb_torch: {what}: {err.value.decode(errors='replace')}")


def make_call(q, k, v, causal, scale):
    """A Call for these tensors (shapes checked; pointers of q, k, v set)."""
    import torch
    dtypes = {torch.float64: 0, torch.float32: 1, torch.float16: 2, torch.bfloat16: 3}
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(f"fb_torch: q, k, v must be 4-d (B, H, seq, d), not {q.dim()}, {k.dim()}, {v.dim()}")
    if q.dtype not in dtypes or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(f"fb_torch: q, k, v must share one of {', '.join(map(str, dtypes))}, not "
                         f"{q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.is_cuda and k.is_cuda and v.is_cuda):
        raise ValueError("fb_torch: q, k, v must be on the GPU")
    b, h, sq, d = q.shape
    if k.shape != v.shape or k.shape[0] != b or k.shape[3] != d:
        raise ValueError(f"fb_torch: k {tuple(k.shape)} and v {tuple(v.shape)} must be (B, kv_heads, seq_k, d) "
                         f"for q {tuple(q.shape)}")
    c = Call()
    c.struct_size = ctypes.sizeof(Call)
    c.dtype = dtypes[q.dtype]
    c.batch, c.heads, c.kv_heads, c.seq_q, c.seq_k, c.head_dim = b, h, k.shape[1], sq, k.shape[2], d
    c.causal = 1 if causal else 0
    c.scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    c.q, c.k, c.v = q.data_ptr(), k.data_ptr(), v.data_ptr()
    c.stream = torch.cuda.current_stream(q.device).cuda_stream
    return c


_workspace = {}


def workspace_bytes(name, passes, c, device, env=DEFAULT_ENV):
    """The library's fb_capi_workspace_bytes for this kernel, passes and shape on this device, asked once per key:
    the timed loop calls a kernel with one shape again and again (fb_capi_forward checks the shape each call)."""
    lib = library(env)
    key = (id(lib), name, passes, device, c.dtype, c.batch, c.heads, c.kv_heads, c.seq_q, c.seq_k, c.head_dim,
           c.causal)
    if key not in _workspace:
        n, err = ctypes.c_uint64(0), ctypes.create_string_buffer(512)
        check(lib.fb_capi_workspace_bytes(name.encode(), passes, ctypes.byref(c), ctypes.byref(n), err, len(err)),
              err, name)
        _workspace[key] = n.value
    return _workspace[key]


def forward(name, q, k, v, causal, scale, training, lse=None, env=DEFAULT_ENV):
    """flashbench's forward NAME (of the library `env` names) on contiguous q, k, v: (o, lse, workspace). training:
    a backward may follow (the workspace is sized for both passes, and the LSE is always written); else lse
    (default: not training) says whether to ask for the LSE: without it (an inference forward, as PyTorch's cuDNN
    under no_grad computes none) flash-sm90 writes O only and the other kernels write the LSE into the workspace
    (capi.h); lse is then None."""
    import torch
    want_lse = training or bool(lse)
    lib, err = library(env), ctypes.create_string_buffer(512)
    c = make_call(q, k, v, causal, scale)
    passes = FB_PASS_FWD | (FB_PASS_BWD if training else 0)
    ws_bytes = workspace_bytes(name, passes, c, q.device.index, env)
    o = torch.empty_like(q)
    out_lse = torch.empty(q.shape[:3], dtype=torch.float64 if q.dtype == torch.float64 else torch.float32,
                          device=q.device) if want_lse else None
    ws = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device=q.device)
    c.o, c.workspace, c.workspace_size = o.data_ptr(), ws.data_ptr(), ws_bytes
    c.lse = out_lse.data_ptr() if want_lse else None
    check(lib.fb_capi_forward(name.encode(), ctypes.byref(c), err, len(err)), err, name)
    return o, out_lse, ws


def _function():
    import torch

    class Attention(torch.autograd.Function):
        @staticmethod
        def forward(ctx, name, env, q, k, v, causal, scale):
            q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
            training = any(ctx.needs_input_grad[2:5])
            o, lse, ws = forward(name, q, k, v, causal, scale, training, env=env)
            if training:
                ctx.save_for_backward(q, k, v, o, lse, ws)
                ctx.fb = (name, env, causal, scale)
            return o

        @staticmethod
        def backward(ctx, dout):
            q, k, v, o, lse, ws = ctx.saved_tensors
            name, env, causal, scale = ctx.fb
            dout = dout.contiguous()
            lib, err = library(env), ctypes.create_string_buffer(512)
            c = make_call(q, k, v, causal, scale)
            dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
            c.o, c.lse, c.dout, c.dq, c.dk, c.dv = (t.data_ptr() for t in (o, lse, dout, dq, dk, dv))
            c.workspace, c.workspace_size = ws.data_ptr(), ws.numel()
            check(lib.fb_capi_backward(name.encode(), ctypes.byref(c), err, len(err)), err, name)
            return None, None, dq, dk, dv, None, None

    return Attention


_attention = None


def kernel(name, env=DEFAULT_ENV):
    """SDPA's signature for the kernel NAME (e.g. "flash-sm90") of the library `env` names (library_path; loaded at
    the first call)."""
    def attention(q, k, v, is_causal=False, scale=None):
        global _attention
        if _attention is None:
            _attention = _function()
        return _attention.apply(name, env, q, k, v, bool(is_causal), scale)
    suffix = "" if env == DEFAULT_ENV else "_base" if env == BASE_ENV else "_" + env.lower()
    attention.__name__ = name.replace("-", "_") + suffix
    return attention


flash_sm90 = kernel("flash-sm90")
flash = kernel("flash")
naive = kernel("naive")
cudnn = kernel("cudnn")
# The second build's (FB_CAPI_LIB_BASE).
flash_sm90_base = kernel("flash-sm90", BASE_ENV)
flash_base = kernel("flash", BASE_ENV)
