#!/usr/bin/env python3
# Design study for issue 15 (session 19): can the fp32 attention's split products run on fp16 wgmma (two fp16 pieces,
# 11 significant bits each, like TF32's) instead of TF32 wgmma, and still meet flashbench's FP32 rule?
#
# What it does, one head at a time, numpy on the CPU:
#   - the reference in fp64, the naive path in fp32 (BLAS sgemm: S and P stored in fp32, as kernels/naive/naive.cu);
#   - the tiled forward and backward (S, O = P V; S, dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q) with every GEMM
#     built from split pieces ("forms", FORMS below): each operand cut into pieces of a narrow format (TF32, fp16,
#     bf16), optionally scaled by a power of two first, the products of pieces accumulated by an emulated tensor core
#     (products exact; after every k step of the MMA -- k8 for TF32, k16 for 16-bit -- the fp32 accumulator is
#     rounded: "rn" nearest, "rz" toward zero, "tr" every addend first truncated to the fp32 ulp of the step's
#     largest addend, then toward zero: the pessimistic alignment model of Fasi et al. 2021, "Numerical behavior of
#     NVIDIA tensor cores", PeerJ CS 7:e330), each product group in its own accumulator (the kernel's habit) or all
#     in one chain ("-1acc"), and the contraction cut where the kernel cuts it: dV / dK per query tile, O / dQ per
#     key block (each tile's sum starts from zero in the tensor core and joins the result in fp32);
#   - judges every tensor (O, LSE, dQ, dK, dV) exactly as src/judge.cpp + src/runner.cpp do: err = max |out - ref|
#     over the whole tensor, M = max |ref| (dQ, dK at no less than dV's M / 16, and then judged by the dtype bound
#     if that lifted them), baseline (naive) within 2^-10 M, tiled within f x naive's err + 2 ulps(fp32, M)
#     + 2^-23 sqrt(seq_k) M, f = 2 (O, LSE) / 3 (gradients); NaN / Inf fail.
# With --hw (torch + CUDA): the same forms on the real tensor cores (torch.bmm of the pieces, fp16 / bf16 with fp32
# output, TF32 through torch's tf32 switch; the pieces of one product group concatenated along K so that they share
# one tensor-core accumulation chain), the naive path then cuBLAS fp32 as flashbench's, plus a probe of the
# accumulator's rounding (hardware vs the rn / rz / tr models on one GEMM). No torch: the hardware part is skipped
# and says so (exit 0).
#   python3 scripts/fp32_split_study.py [--quick] [--hw] [--out DIR] [--budget SECONDS]
# Written for docs/perf-notes.md, "flash-sm90 fp32 backward", "Session 19: fp16 pairs instead of TF32 pairs".
import argparse
import json
import math
import os
import sys
import time

import numpy as np

f16, f32, f64 = np.float16, np.float32, np.float64
np.seterr(over="ignore", invalid="ignore", under="ignore", divide="ignore")

# ---------------------------------------------------------------------------------------------------------------------
# Rounding. Arrays are float64 holding values of the narrower format.


def rn32(x):  # fp32, nearest even
    return np.asarray(x, f64).astype(f32).astype(f64)


def rz32(x):  # fp32, toward zero
    x = np.asarray(x, f64)
    r = x.astype(f32)
    over = np.abs(r.astype(f64)) > np.abs(x)
    r[over] = np.nextafter(r[over], f32(0))
    return r.astype(f64)


def tf32_rna(x):  # cvt.rna.tf32.f32: nearest, ties away (the kernels' split, tf32_tiles.cuh)
    b = np.asarray(x, f64).astype(f32).view(np.uint32)
    return ((b + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(f32).astype(f64)


def fp16_rn(x):  # cvt.rn.f16.f32 (subnormals kept, overflow to inf)
    return np.asarray(x, f64).astype(f32).astype(f16).astype(f64)


def bf16_rn(x):  # cvt.rn.bf16.f32
    b = np.asarray(x, f64).astype(f32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    return b.astype(np.uint32).view(f32).astype(f64)


ROUND = {"tf32": tf32_rna, "fp16": fp16_rn, "bf16": bf16_rn}
LO_SHIFT = 2.0 ** 11  # fp16 residual scaled into fp16's normal range (Ootomo & Yokota 2022)
SCALE_TOP = 14  # a scaled block's max lies in [2^14, 2^15): fp16's max is 65504 ~ 2^16


class Form:
    """One way to build an fp32 GEMM from narrow pieces."""

    def __init__(self, name, fmt, pieces, scale="none", lo_shift=False, one_acc=False, modes=("rn", "rz"),
                 headroom=0, chain=False):
        self.name, self.fmt, self.pieces, self.scale = name, fmt, pieces, scale
        self.lo_shift, self.one_acc, self.modes = lo_shift, one_acc, modes
        self.top = SCALE_TOP - headroom  # a scaled block's max in [2^top, 2^(top+1)): headroom binades below 2^14
        self.chain = chain  # sums over the sequence chained through the whole of it in the tensor core (no tiles)
        self.ks = 8 if fmt == "tf32" else 16  # K of one wgmma
        # products (i, j) of piece i of A and piece j of B, grouped by weight: 0 = hi*hi, 1 = the cross terms, ...
        self.groups = [[(i, j) for i in range(pieces) for j in range(pieces) if i + j == g] for g in range(pieces)]

    def __repr__(self):
        return self.name


FORMS = [
    Form("1xTF32", "tf32", 1, modes=("rn", "rz", "tr")),
    Form("3xTF32", "tf32", 2, modes=("rn", "rz", "tr")),  # shipped: hi*hi and the cross terms apart
    Form("3xTF32-1acc", "tf32", 2, one_acc=True, modes=("rn", "rz", "tr")),
    Form("1xFP16-tile", "fp16", 1, scale="tile"),
    Form("3xFP16-raw", "fp16", 2),  # no scaling at all: fp16(x), fp16(x - hi)
    Form("3xFP16-plane", "fp16", 2, scale="plane", lo_shift=True),
    Form("3xFP16-tile", "fp16", 2, scale="tile", lo_shift=True, modes=("rn", "rz", "tr")),  # the proposal
    Form("3xFP16-tile-lo1", "fp16", 2, scale="tile"),  # residual not shifted by 2^11
    Form("3xFP16-tile-1acc", "fp16", 2, scale="tile", one_acc=True, modes=("rn", "rz", "tr")),
    # the scale from an a-priori bound (e.g. dS <= max ||dO_i|| max ||V_j|| + max |D|) sits above the true max: 8
    # binades of headroom model a bound 256x too high
    Form("3xFP16-plane-h8", "fp16", 2, scale="plane", lo_shift=True, headroom=8),
    # no per-tile partial sums: dV, dK, dQ, O chained in the tensor core over the whole sequence (per-plane scales)
    Form("3xFP16-plane-chain", "fp16", 2, scale="plane", lo_shift=True, chain=True, modes=("rn", "rz", "tr")),
    Form("3xTF32-chain", "tf32", 2, chain=True, modes=("rn", "rz", "tr")),
    Form("1xBF16", "bf16", 1),
    Form("3xBF16", "bf16", 2),
    Form("6xBF16", "bf16", 3),  # three bf16 pieces, the 6 products of weight >= 2^-16 (bf16x6)
]


# On the hardware the forms that decide the question first (a cut budget drops the last ones).
HW_FORMS = ["1xTF32", "3xTF32", "3xFP16-tile", "3xFP16-plane-chain", "3xFP16-tile-1acc", "3xFP16-raw", "3xBF16",
            "3xFP16-plane-h8", "3xTF32-chain", "6xBF16", "3xTF32-1acc", "3xFP16-plane"]


def block_scales(x, block, mode, top=SCALE_TOP):
    """Power-of-two scale per (block[0] x block[1]) block of x (mode 'tile'), per x ('plane'), or 1 ('none')."""
    if mode == "none":
        return np.ones_like(x)
    if mode == "plane":
        block = x.shape
    r, c = block
    m, n = x.shape
    out = np.empty_like(x)
    for i in range(0, m, r):
        for j in range(0, n, c):
            mx = np.abs(x[i:i + r, j:j + c]).max() if x[i:i + r, j:j + c].size else 0.0
            out[i:i + r, j:j + c] = 2.0 ** (top - math.floor(math.log2(mx))) if mx > 0 and np.isfinite(mx) else 1.0
    return out


def split(x, form, block):
    """Pieces and weights of x (its values times a power-of-two scale s); returns (pieces, weights, s)."""
    s = block_scales(x, block, form.scale, form.top)
    a = x * s
    rnd = ROUND[form.fmt]
    pieces, weights, rest = [], [], a
    for k in range(form.pieces):
        shift = LO_SHIFT if (k > 0 and form.lo_shift) else 1.0
        p = rnd(rest * shift)
        pieces.append(p)
        weights.append(1.0 / shift)
        rest = rest - p / shift
    return pieces, weights, s


def mma_chain(acc, a, b, ks, mode):
    """acc (fp32 values) += a @ b, one emulated MMA per ks columns of a, rounded per `mode`."""
    for k0 in range(0, a.shape[1], ks):
        aa, bb = a[:, k0:k0 + ks], b[k0:k0 + ks, :]
        if mode == "tr":
            terms = aa[:, :, None] * bb[None, :, :]  # exact products
            big = np.maximum(np.abs(terms).max(1), np.abs(acc))
            with np.errstate(divide="ignore"):
                e = np.floor(np.log2(np.where(big > 0, big, 1.0)))
            ulp = np.exp2(e - 23)
            terms = np.trunc(terms / ulp[:, None, :]) * ulp[:, None, :]
            acc = rz32(acc + terms.sum(1))
        else:
            s = acc + aa @ bb
            acc = rn32(s) if mode == "rn" else rz32(s)
    return acc


def emulate_mm(A, B, form, mode, chunk, a_block, b_block):
    """A @ B (fp32 values) as the tiled kernel would compute it with `form`; chunk = the contraction's tile (None:
    all of it in one tensor-core sum). a_block / b_block: the blocks of A / B that share one scale; their extent
    along the contraction is a multiple of chunk (the scale is constant along each tensor-core sum)."""
    m, K = A.shape
    n = B.shape[1]
    chunk = K if (form.chain or not chunk) else chunk
    pa, wa, sa = split(A, form, a_block)
    pb, wb, sb = split(B, form, b_block)
    total = None
    for c0 in range(0, K, chunk):
        c1 = min(c0 + chunk, K)
        assert np.all(sa[:, c0:c1] == sa[:, c0:c0 + 1]) and np.all(sb[c0:c1, :] == sb[c0:c0 + 1, :])
        if form.one_acc:  # every product in one chain, per k step the small ones first
            acc = np.zeros((m, n))
            for k0 in range(c0, c1, form.ks):
                k1 = min(k0 + form.ks, c1)
                for g in reversed(form.groups):
                    for i, j in g:
                        assert wa[i] * wb[j] == 1.0  # one chain needs equal weights
                        acc = mma_chain(acc, pa[i][:, k0:k1], pb[j][k0:k1, :], form.ks, mode)
            val = acc
        else:  # one accumulator per group, summed small first in fp32
            val = np.zeros((m, n))
            for g in reversed(form.groups):
                acc = np.zeros((m, n))
                for i, j in g:
                    acc = mma_chain(acc, pa[i][:, c0:c1], pb[j][c0:c1, :], form.ks, mode)
                i, j = g[0]
                val = rn32(val + acc * (wa[i] * wb[j]))
        val = rn32(val / (sa[:, c0:c0 + 1] * sb[c0:c0 + 1, :]))
        total = val if total is None else rn32(total + val)
    return total


def naive_mm(A, B, *_):
    return (A.astype(f32) @ B.astype(f32)).astype(f64)


# ---------------------------------------------------------------------------------------------------------------------
# Attention, one head (rows of q: queries; k, v: keys), in fp64 (reference), fp32 (naive) and tiled (mm given).


def visible(sq, sk, causal):
    if not causal:
        return np.ones((sq, sk), bool)
    return np.arange(sk)[None, :] <= np.arange(sq)[:, None] + (sk - sq)  # bottom-right (kernels/common/mask.h)


def reference(q, k, v, do, scale, mask):
    s = np.where(mask, q @ k.T * scale, -np.inf)
    m = s.max(1, keepdims=True)
    p = np.exp(s - m)
    l = p.sum(1, keepdims=True)
    p /= l
    o = p @ v
    dv = p.T @ do
    dp = do @ v.T
    ds = p * (dp - (do * o).sum(1, keepdims=True))
    return {"O": o, "LSE": (m + np.log(l))[:, 0], "dQ": ds @ k * scale, "dK": ds.T @ q * scale, "dV": dv}


def naive(q, k, v, do, scale, mask, mm=naive_mm):
    """kernels/naive/naive.cu in fp32: S = scale Q K^T stored, softmax rows, O = P V; dV = P^T dO, dP = dO V^T,
    dS = P o (dP - rowsum(dO o O)), dQ = scale dS K, dK = scale dS^T Q."""
    s = np.where(mask, rn32(mm(q, k.T) * scale), -np.inf)
    m = s.max(1, keepdims=True)
    e = np.where(mask, rn32(np.exp(s - m)), 0.0)
    l = e.sum(1, keepdims=True, dtype=f32).astype(f64)
    p = rn32(e / l)
    o = mm(p, v)
    dv = mm(p.T, do)
    dp = mm(do, v.T)
    d = (do.astype(f32) * o.astype(f32)).sum(1, keepdims=True, dtype=f32).astype(f64)
    ds = rn32(p * rn32(dp - d))
    return {"O": o, "LSE": rn32(m + np.log(l))[:, 0], "dQ": rn32(mm(ds, k) * scale), "dK": rn32(mm(ds.T, q) * scale),
            "dV": dv}


def tiled(q, k, v, do, scale, mask, mm, bq, bk):
    """The fp32 flash forward / backward's data flow with mm(A, B, chunk, a_block, b_block) for each GEMM. Q, dO
    scale blocks are query tiles (bq x d), K, V key blocks (bk x d), P, dS (bq x bk) tiles."""
    d = q.shape[1]
    s = mm(q, k.T, None, (bq, d), (d, bk))
    s = np.where(mask, rn32(s * scale), -np.inf)
    m = s.max(1, keepdims=True)
    e = np.where(mask, rn32(np.exp(s - m)), 0.0)
    l = e.sum(1, keepdims=True, dtype=f32).astype(f64)
    o = rn32(mm(e, v, bk, (bq, bk), (bk, d)) / l)
    lse = rn32(m + np.log(l))
    # backward: P from S and LSE, D = rowsum(dO o O)
    p = np.where(mask, rn32(np.exp(rn32(s - lse))), 0.0)
    dd = (do.astype(f32) * o.astype(f32)).sum(1, keepdims=True, dtype=f32).astype(f64)
    dv = mm(p.T, do, bq, (bk, bq), (bq, d))
    dp = mm(do, v.T, None, (bq, d), (d, bk))
    ds = np.where(mask, rn32(p * rn32(dp - dd)), 0.0)
    dq = rn32(mm(ds, k, bk, (bq, bk), (bk, d)) * scale)
    dk = rn32(mm(ds.T, q, bq, (bk, bq), (bq, d)) * scale)
    return {"O": o, "LSE": lse[:, 0], "dQ": dq, "dK": dk, "dV": dv}


# ---------------------------------------------------------------------------------------------------------------------
# The FP32 rule (src/judge.h, src/judge.cpp; src/runner.cpp's judge()).
EPS32 = 2.0 ** -23
TOL_BASELINE_FP32 = 2.0 ** -10
TOL_TILED = {"O": 2.0 ** -13, "LSE": 2.0 ** -16, "dQ": 2.0 ** -13, "dK": 2.0 ** -13, "dV": 2.0 ** -13}
TENSORS = ("O", "LSE", "dQ", "dK", "dV")


def ulp32(m):
    return EPS32 * 2.0 ** math.floor(math.log2(m)) if m > 0 and math.isfinite(m) else 0.0


def max_err(out, ref):
    dif = np.abs(np.asarray(out, f64) - ref)
    return math.inf if not np.all(np.isfinite(out)) else float(dif.max())


def judge(outs, refs, base_errs, seq_k):
    """Per tensor (err, bound); base_errs None = this is the baseline (its own tolerance)."""
    dv_scale = float(np.abs(refs["dV"]).max())
    res = {}
    for t in TENSORS:
        err = max_err(outs[t], refs[t])
        own = float(np.abs(refs[t]).max())
        scale = max(own, dv_scale / 16) if t in ("dQ", "dK") else own
        if base_errs is None:
            bound = TOL_BASELINE_FP32 * scale
        elif scale > own:  # cancelled gradient: the dtype's own bound
            bound = TOL_TILED[t] * scale
        else:
            f = 3.0 if t.startswith("d") else 2.0
            bound = f * base_errs[t] + 2 * ulp32(scale) + EPS32 * math.sqrt(max(seq_k, 1)) * scale
        res[t] = (err, bound)
    return res


# ---------------------------------------------------------------------------------------------------------------------
# Cases: shapes no config names (odd lengths, seq_q != seq_k), flashbench's standard-normal inputs and adversarial
# magnitudes. Each: (name, heads, seq_q, seq_k, d, causal, maker(rng, h) -> q, k, v, do for head h).


def normal(rng, sq, sk, d):
    return (rng.standard_normal((sq, d)), rng.standard_normal((sk, d)), rng.standard_normal((sk, d)),
            rng.standard_normal((sq, d)))


def small_rows(rng, x, share=0.25, factor=2.0 ** -20):
    rows = rng.random(x.shape[0]) < share
    x = x.copy()
    x[rows] *= factor
    return x


def to_max(x, top):
    return x * (top / np.abs(x).max())


def make_cases(quick):
    def plain(rng, h, sq, sk, d):
        return normal(rng, sq, sk, d)

    def rows20(rng, h, sq, sk, d):  # a quarter of every tensor's rows at 2^-20 of its max
        return tuple(small_rows(rng, x) for x in normal(rng, sq, sk, d))

    def near65504(rng, h, sq, sk, d):  # Q, V, dO with max 65,000 before any scaling; K small so that S is O(1)
        q, k, v, do = normal(rng, sq, sk, d)
        return to_max(q, 65000.0), to_max(k, 2.0 ** -13), to_max(v, 65000.0), to_max(do, 65000.0)

    def outside16(rng, h, sq, sk, d):  # beyond fp16's range both ways: Q, V ~ 2^18, K, dO ~ 2^-18 (fp16 subnormals
        # and below); S, dQ, dV then O(2^-18), dK O(2^18): no gradient is lifted to dV's scale / 16
        q, k, v, do = normal(rng, sq, sk, d)
        return q * 2.0 ** 18, k * 2.0 ** -18, v * 2.0 ** 18, do * 2.0 ** -18

    def planes(rng, h, sq, sk, d):  # two heads 2^24 apart in V and dO: one scale per plane vs per tensor
        q, k, v, do = normal(rng, sq, sk, d)
        f = 2.0 ** 12 if h == 0 else 2.0 ** -12
        return q, k, v * f, do * f

    def sharp(rng, h, sq, sk, d):  # scores of +-30: P spans e^-60.., many P and dS near fp16's subnormals
        q, k, v, do = normal(rng, sq, sk, d)
        return q * 3, k * 3, v, do

    n = 1 if quick else 0
    cases = [
        ("normal-causal", 2, 320, 320, 64, True, plain),
        ("normal", 2, 272, 400 - 64 * n, 128, False, plain),
        ("rows2^-20", 2, 320, 288, 64, False, rows20),
        ("near65504-causal", 2, 288, 288, 128, True, near65504),
        ("outside-fp16", 2, 320, 320, 64, False, outside16),
        ("planes2^24-causal", 2, 256, 256, 64, True, planes),
        ("sharp", 2, 256, 320, 64, False, sharp),
    ]
    return cases[:4] if quick else cases


def tiles_for(d):  # the shipped fp32 backward's tiles: 32 queries; 128 keys a block at d = 64, 64 at d = 128
    return 32, (128 if d == 64 else 64)


# ---------------------------------------------------------------------------------------------------------------------
# Hardware forms (torch): the same pieces, the products on the tensor cores.


class Hardware:
    def __init__(self):
        import torch  # noqa: F401 -- raises ImportError when torch is missing

        self.torch = torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch has no CUDA device")
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        self.dev = torch.device("cuda")
        self.set_tf32(False)
        self.half_path = self._probe_out_dtype()

    def _probe_out_dtype(self):
        t = self.torch
        a = t.ones((64, 64), dtype=t.float16, device=self.dev)
        try:
            c = t.bmm(a[None], a[None], out_dtype=t.float32)
            assert c.dtype == t.float32
            return "bmm-out_dtype"
        except Exception as e:  # older torch: fp16 values ride exactly in TF32 (11 significant bits, fp32 range)
            self.why_carrier = repr(e)[:120]
            return "tf32-carrier"

    def set_tf32(self, on):
        """fp32 GEMMs on TF32 tensor cores or exact; torch >= 2.9's fp32_precision where it exists (mixing it with the
        legacy allow_tf32 flag is refused there), else allow_tf32."""
        m = self.torch.backends.cuda.matmul
        if hasattr(m, "fp32_precision"):
            try:
                m.fp32_precision = "tf32" if on else "ieee"
                return
            except Exception:  # an older spelling: the legacy flag below
                pass
        m.allow_tf32 = on

    def rates(self, n=int(os.environ.get("FP32_STUDY_RATE_N", 4096)), reps=3):
        """TFLOP/s of each GEMM path as called here (n^3, one batch): tells tensor cores (fp16 / bf16 ~600+, TF32
        ~300+) from CUDA-core SGEMM (~50) -- the accumulator probe means nothing if a path fell back to SGEMM."""
        t = self.torch
        out = {}
        a = np.random.default_rng(1).random((1, n, n))
        for fmt in ("fp32", "tf32", "fp16", "bf16"):
            try:
                if fmt in ("fp32", "tf32") or self.half_path == "tf32-carrier":
                    self.set_tf32(fmt != "fp32")
                    x = t.from_numpy(a.astype(f32)).to(self.dev)
                    call = lambda: t.bmm(x, x)  # noqa: E731
                else:
                    x = t.from_numpy(a.astype(f32)).to(self.dev).to(t.float16 if fmt == "fp16" else t.bfloat16)
                    call = lambda: t.bmm(x, x, out_dtype=t.float32)  # noqa: E731
                call()
                t.cuda.synchronize()
                e0, e1 = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
                e0.record()
                for _ in range(reps):
                    call()
                e1.record()
                t.cuda.synchronize()
                out[fmt] = 2.0 * n ** 3 * reps / (e0.elapsed_time(e1) * 1e-3) / 1e12
            except Exception as e:
                out[fmt] = f"n/a ({type(e).__name__})"
            finally:
                self.set_tf32(False)
        return out

    def bmm(self, a, b, fmt):
        """a (c, m, k), b (c, k, n) numpy arrays holding `fmt` values -> fp32 products on the tensor cores."""
        t = self.torch
        if fmt == "fp32":  # cuBLAS exact fp32 (the naive path)
            self.set_tf32(False)
            r = t.bmm(t.from_numpy(a.astype(f32)).to(self.dev), t.from_numpy(b.astype(f32)).to(self.dev))
        elif fmt == "tf32" or self.half_path == "tf32-carrier":
            self.set_tf32(True)
            r = t.bmm(t.from_numpy(a.astype(f32)).to(self.dev), t.from_numpy(b.astype(f32)).to(self.dev))
            self.set_tf32(False)
        else:
            dt = t.float16 if fmt == "fp16" else t.bfloat16
            ta = t.from_numpy(a.astype(f32)).to(self.dev).to(dt)
            tb = t.from_numpy(b.astype(f32)).to(self.dev).to(dt)
            r = t.bmm(ta, tb, out_dtype=t.float32)
        return r.double().cpu().numpy()

    def naive_mm(self, A, B, *_):
        return self.bmm(A[None], B[None], "fp32")[0]

    def mm(self, A, B, form, chunk, a_block, b_block):
        m, K = A.shape
        n = B.shape[1]
        chunk = K if (form.chain or not chunk) else chunk
        pa, wa, sa = split(A, form, a_block)
        pb, wb, sb = split(B, form, b_block)
        nc = -(-K // chunk)
        kp = nc * chunk

        def chunks_a(x):  # (m, K) -> (nc, m, chunk), zero-padded
            y = np.zeros((m, kp))
            y[:, :K] = x
            return y.reshape(m, nc, chunk).transpose(1, 0, 2)

        def chunks_b(x):
            y = np.zeros((kp, n))
            y[:K] = x
            return y.reshape(nc, chunk, n)

        groups = [sum(form.groups, [])] if form.one_acc else list(reversed(form.groups))
        val = np.zeros((nc, m, n))
        for g in groups:  # the group's products concatenated along K: one accumulation chain
            a = np.concatenate([chunks_a(pa[i]) for i, j in g], axis=2)
            b = np.concatenate([chunks_b(pb[j]) for i, j in g], axis=1)
            w = wa[g[0][0]] * wb[g[0][1]]
            assert all(wa[i] * wb[j] == w for i, j in g)
            val = rn32(val + self.bmm(a, b, form.fmt) * w)
        cs = np.arange(nc) * chunk
        val = rn32(val / (sa[:, cs].T[:, :, None] * sb[cs, :][:, None, :]))
        total = val[0]
        for c in range(1, nc):
            total = rn32(total + val[c])
        return total


def accumulation_probe(hw, rng, out):
    """One GEMM per format on the hardware against the exact sum and the rn / rz / tr models: signed mean and max of
    the error in ulps of the exact result. Positive operands make truncation show as a negative mean."""
    rows = []
    for fmt, ks, sign in (("fp16", 16, "pos"), ("fp16", 16, "mixed"), ("tf32", 8, "pos"), ("tf32", 8, "mixed"),
                          ("bf16", 16, "pos")):
        m = n = 128
        k = 512
        a = rng.random((m, k)) if sign == "pos" else rng.standard_normal((m, k))
        b = rng.random((k, n)) if sign == "pos" else rng.standard_normal((k, n))
        a, b = ROUND[fmt](a), ROUND[fmt](b)
        exact = a @ b
        # error unit: the fp32 ulp of sum |a||b| (the sum's own scale: no blow-up where the sum cancels)
        mag = np.abs(a) @ np.abs(b)
        u = EPS32 * np.exp2(np.floor(np.log2(mag)))
        hwc = hw.bmm(a[None], b[None], fmt)[0]
        line = {"format": fmt, "inputs": sign, "k": k, "path": hw.half_path if fmt != "tf32" else "allow_tf32"}
        models = {md: mma_chain(np.zeros((m, n)), a, b, ks, md) for md in ("rn", "rz", "tr")}
        for name, val in [("hardware", hwc)] + list(models.items()):
            e = (val - exact) / u
            line[name] = (float(e.mean()), float(np.abs(e).max()))
        # which model is nearest the hardware, element by element (cuBLAS's K order is its own: not bit-exact)
        line["nearest"] = min(models, key=lambda md: float(np.abs(models[md] - hwc).mean()))
        line["bitwise_equal"] = {md: float(np.mean(v == hwc)) for md, v in models.items()}
        rows.append(line)
    return rows


# ---------------------------------------------------------------------------------------------------------------------


def run_case(case, forms, seed, hw=None, deadline=None, base_row=True):
    name, heads, sq, sk, d, causal, maker = case
    rng = np.random.default_rng(seed)
    mask = visible(sq, sk, causal)
    scale = 1.0 / math.sqrt(d)
    bq, bk = tiles_for(d)
    data = [tuple(rn32(x) for x in maker(rng, h, sq, sk, d)) for h in range(heads)]
    cat = lambda outs: {t: np.concatenate([o[t].reshape(-1) for o in outs]) for t in TENSORS}  # noqa: E731
    refs = cat([reference(*x, scale, mask) for x in data])
    rows, base_errs, hw_base_errs = [], None, None
    if hw is None:
        base = cat([naive(*x, scale, mask) for x in data])
        jb = judge(base, refs, None, sk)
        if all(e <= b for e, b in jb.values()):
            base_errs = {t: jb[t][0] for t in TENSORS}
        rows.append({"case": name, "form": "naive-fp32 (numpy sgemm)", "mode": "-", "judged": jb, "baseline": True})
    else:
        hb = cat([naive(*x, scale, mask, mm=hw.naive_mm) for x in data])
        jhb = judge(hb, refs, None, sk)
        if all(e <= b for e, b in jhb.values()):
            hw_base_errs = {t: jhb[t][0] for t in TENSORS}
        if base_row:
            rows.append({"case": name, "form": "naive-fp32 (cuBLAS)", "mode": "hw", "judged": jhb, "baseline": True})
    for form in forms:
        modes = list(form.modes) if hw is None else ["hw"]
        for mode in modes:
            if deadline and time.time() > deadline:
                rows.append({"case": name, "form": form.name, "mode": mode, "skipped": "time budget"})
                continue
            if mode == "hw":
                mm = lambda A, B, c, ab, bb: hw.mm(A, B, form, c, ab, bb)  # noqa: E731
            else:
                mm = lambda A, B, c, ab, bb: emulate_mm(A, B, form, mode, c, ab, bb)  # noqa: E731
            out = cat([tiled(*x, scale, mask, mm, bq, bk) for x in data])
            be = hw_base_errs if mode == "hw" else base_errs
            rule = "2x-baseline" if be else "dtype-bound"
            if be is None:  # no verified baseline: the dtype's own bound (Rule::tiled_no_baseline)
                j = {t: (max_err(out[t], refs[t]), TOL_TILED[t] * max(float(np.abs(refs[t]).max()), 1e-300))
                     for t in TENSORS}
            else:
                j = judge(out, refs, be, sk)
            rows.append({"case": name, "form": form.name, "mode": mode, "judged": j, "rule": rule})
    return rows


def verdict(row):
    if "skipped" in row:
        return "skipped"
    return "PASS" if all(e <= b for e, b in row["judged"].values()) else "FAIL"


def worst(row):
    if "skipped" in row:
        return None
    return max((e / b if b > 0 else math.inf) for e, b in row["judged"].values())


def format_rows(rows):
    lines = []
    head = f"{'case':<18} {'form':<26} {'mode':<4} {'verdict':<7} {'worst':>9}  " + " ".join(
        f"{t:>9}" for t in TENSORS)
    lines.append(head)
    for r in rows:
        if "skipped" in r:
            lines.append(f"{r['case']:<18} {r['form']:<26} {r['mode']:<4} skipped ({r['skipped']})")
            continue
        ratios = " ".join(f"{(e / b if b > 0 else math.inf):9.3g}" for e, b in r["judged"].values())
        tag = "base" if r.get("baseline") else verdict(r)
        lines.append(f"{r['case']:<18} {r['form']:<26} {r['mode']:<4} {tag:<7} {worst(r):9.3g}  {ratios}")
    return lines


def summary(rows):
    by = {}
    for r in rows:
        if r.get("baseline") or "skipped" in r:
            continue
        k = (r["form"], r["mode"])
        v = by.setdefault(k, [0, 0, 0.0])
        v[0] += verdict(r) == "PASS"
        v[1] += 1
        v[2] = max(v[2], worst(r))
    lines = [f"{'form':<26} {'mode':<4} {'pass':>7} {'worst err/bound':>16}"]
    for (f, md), (p, n, w) in by.items():
        lines.append(f"{f:<26} {md:<4} {p:>3}/{n:<3} {w:16.3g}")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="4 cases, smaller, rn/rz only (a dry run)")
    ap.add_argument("--hw", action="store_true", help="also run the forms on the CUDA tensor cores (torch)")
    ap.add_argument("--no-emulation", action="store_true", help="hardware part only")
    ap.add_argument("--out", default=None, help="directory for study.json and table.txt")
    ap.add_argument("--budget", type=float, default=0, help="seconds; later steps are skipped past it")
    ap.add_argument("--seed", type=int, default=19)
    args = ap.parse_args()
    t0 = time.time()
    deadline = t0 + args.budget if args.budget else None
    cases = make_cases(args.quick)
    forms = FORMS
    if args.quick:
        for f in forms:
            f.modes = tuple(m for m in f.modes if m != "tr")
    report = {"cases": [c[:6] for c in cases], "forms": [f.name for f in forms], "rule": "src/judge.cpp"}
    out_lines = []
    hw = None
    hw_note = None
    if args.hw:
        try:
            hw = Hardware()
            import torch

            hw_note = (f"hardware: torch {torch.__version__}, {torch.cuda.get_device_name(0)}, 16-bit products via "
                       f"{hw.half_path}" + (f" ({hw.why_carrier})" if hw.half_path == "tf32-carrier" else ""))
        except Exception as e:  # fail soft: no torch or no GPU here
            hw_note = f"hardware part SKIPPED: {type(e).__name__}: {e}"
        print(hw_note, flush=True)
    hw_rows, probe, rates = [], None, None
    if hw is not None:
        rates = hw.rates()
        print(f"rates {rates}", flush=True)
        probe = accumulation_probe(hw, np.random.default_rng(args.seed), out_lines)
        hw_forms = [next(f for f in forms if f.name == n) for n in HW_FORMS]
        # every case's deciding forms first, then the others while the budget lasts
        first, rest = hw_forms[:4], hw_forms[4:]
        for case in cases:
            hw_rows += run_case(case, first, args.seed, hw=hw, deadline=deadline)
            print(f"hw {case[0]} (first forms) done t={time.time() - t0:.1f}s", flush=True)
        for case in cases:
            hw_rows += run_case(case, rest, args.seed, hw=hw, deadline=deadline, base_row=False)
            print(f"hw {case[0]} (other forms) done t={time.time() - t0:.1f}s", flush=True)
        order = {c[0]: i for i, c in enumerate(cases)}
        hw_rows.sort(key=lambda r: order[r["case"]])  # stable: each case's baseline, first forms, then the others
    emu_rows = []
    if not args.no_emulation:
        for case in cases:
            emu_rows += run_case(case, forms, args.seed, deadline=deadline)
            print(f"emulation {case[0]} done t={time.time() - t0:.1f}s", flush=True)
    # the table, last
    t = ["# fp32 split study (scripts/fp32_split_study.py): err / bound per tensor under the FP32 rule of "
         "src/judge.cpp (fails above 1)",
         f"# seed {args.seed}; tiles: 32 queries, 128 keys (d = 64) / 64 keys (d = 128); {time.time() - t0:.1f} s"]
    if hw_note:
        t.append("# " + hw_note)
    if rates:
        t.append("# GEMM paths as called, 4096^3, TFLOP/s (tensor cores: fp16 / bf16 ~600+, TF32 ~300+; SGEMM ~50): " +
                 ", ".join(f"{k} {v:.0f}" if isinstance(v, float) else f"{k} {v}" for k, v in rates.items()))
    if probe:
        t.append("")
        t.append("## accumulator probe: one GEMM (128 x 128, K = 512), error in fp32 ulps of sum |a||b|: (mean, max);"
                 " models: rounding after each k8 (TF32) / k16 MMA")
        t.append(f"{'format':<6} {'inputs':<6} {'hardware':>18} {'model rn':>18} {'model rz':>18} {'model tr':>18}"
                 f"  nearest  bitwise-equal rn/rz/tr")
        for p in probe:
            cell = lambda v: f"({v[0]:+.3f}, {v[1]:.2f})"  # noqa: E731
            be = p["bitwise_equal"]
            t.append(f"{p['format']:<6} {p['inputs']:<6} {cell(p['hardware']):>18} {cell(p['rn']):>18} "
                     f"{cell(p['rz']):>18} {cell(p['tr']):>18}  {p['nearest']:<7}  "
                     f"{be['rn']:.2f}/{be['rz']:.2f}/{be['tr']:.2f}")
    if emu_rows:
        t += ["", "## emulation (numpy): per case and form", *format_rows(emu_rows), "", "## emulation summary",
              *summary(emu_rows)]
    if hw_rows:
        t += ["", "## hardware (torch on the tensor cores): per case and form", *format_rows(hw_rows), "",
              "## hardware summary", *summary(hw_rows)]
    text = "\n".join(t)
    print(text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)

        def clean(rows):
            return [{k: (v if k != "judged" else {t: {"err": e, "bound": b} for t, (e, b) in v.items()})
                     for k, v in r.items()} for r in rows]

        report.update({"emulation": clean(emu_rows), "hardware": clean(hw_rows), "probe": probe, "hw_note": hw_note,
                       "rates": rates,
                       "seconds": time.time() - t0})
        with open(os.path.join(args.out, "study.json"), "w") as fh:
            json.dump(report, fh, indent=1, default=str)
        with open(os.path.join(args.out, "table.txt"), "w") as fh:
            fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
