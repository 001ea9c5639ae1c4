# Which of the fp32 backward's GEMMs could drop one of 3xTF32's cross products (hi*lo or lo*hi) and still meet
# the FP32 rule (src/judge.h)? A numerics model on one head, standard-normal Q, K, V, dO (flashbench's inputs):
# every GEMM of the tiled backward (S, dP, dV, dK, dQ) as the sum of its TF32 products (operands rounded by
# cvt.rn, products exact, the sum rounded to fp32 once: the tensor core's truncation is left out, so the model
# is the optimistic side), the rest in fp32. Variants: 3xTF32 as shipped; each GEMM in turn with lo(A)*hi(B) or
# hi(A)*lo(B) dropped ("2xTF32" on that GEMM); 1xTF32 everywhere. Each gradient's max error against fp64 is
# printed as a multiple of its bound: 3 x naive fp32's error + 2 ulps at M + eps32 sqrt(N) M (judge.h's floor).
#   python3 tests/tf32_model/bwd_split_terms.py [N=1024] [D=128] [seed=1]
# Not run by ctest: it answers a design question (docs/perf-notes.md, "flash-sm90 fp32 backward", session 9).
import sys

import numpy as np

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
D = int(sys.argv[2]) if len(sys.argv) > 2 else 128
rng = np.random.default_rng(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
f32, f64 = np.float32, np.float64


def tf32_rn(x):  # nearest, ties to even, to 10 mantissa bits (finite inputs)
    b = np.asarray(x, f32).view(np.uint32).astype(np.uint64)
    b = (b + 0xFFF + ((b >> 13) & 1)) & 0xFFFFE000
    return b.astype(np.uint32).view(f32)


def gemm(a, b, drop=None, split=True):
    """a @ b from TF32 parts; drop = 'lohi' or 'hilo' leaves that cross product out."""
    ah, bh = tf32_rn(a), tf32_rn(b)
    al, bl = tf32_rn(a - ah), tf32_rn(b - bh)
    acc = ah.astype(f64) @ bh.astype(f64)
    if split:
        if drop != "lohi":
            acc += al.astype(f64) @ bh.astype(f64)
        if drop != "hilo":
            acc += ah.astype(f64) @ bl.astype(f64)
    return acc.astype(f32)


def backward(Q, K, V, dO, scale, mm, lse, O):
    """The tiled backward's dataflow in fp32 with mm(name, a, b) for each GEMM; lse, O: the forward's (fp32)."""
    S = mm("S", Q, K.T)
    P = np.exp((S * f32(scale)).astype(f32) - lse[:, None]).astype(f32)
    Dv = (dO * O).sum(1, dtype=f32)
    dV = mm("dV", P.T, dO)
    dP = mm("dP", dO, V.T)
    dS = (P * (dP - Dv[:, None])).astype(f32)
    dQ = (mm("dQ", dS, K) * f32(scale)).astype(f32)
    dK = (mm("dK", dS.T, Q) * f32(scale)).astype(f32)
    return {"dQ": dQ, "dK": dK, "dV": dV}


def reference(Q, K, V, dO, scale):
    Q, K, V, dO = (x.astype(f64) for x in (Q, K, V, dO))
    S = Q @ K.T * scale
    P = np.exp(S - S.max(1, keepdims=True))
    P /= P.sum(1, keepdims=True)
    dV = P.T @ dO
    dP = dO @ V.T
    dS = P * (dP - (dO * (P @ V)).sum(1, keepdims=True))
    return {"dQ": dS @ K * scale, "dK": dS.T @ Q * scale, "dV": dV}


Q, K, V, dO = (rng.standard_normal((N, D)).astype(f32) for _ in range(4))
scale = 1.0 / np.sqrt(D)
ref = reference(Q, K, V, dO, scale)
# The forward's outputs at fp32 accuracy (the backward reads them; their error is the forward's).
S64 = Q.astype(f64) @ K.T.astype(f64) * scale
lse = (S64.max(1) + np.log(np.exp(S64 - S64.max(1, keepdims=True)).sum(1))).astype(f32)
O = (np.exp(S64 - lse[:, None].astype(f64)) @ V.astype(f64)).astype(f32)
naive = backward(Q, K, V, dO, scale, lambda name, a, b: (a @ b).astype(f32), lse, O)  # fp32 GEMMs (BLAS sgemm)
bound = {}
for t in ref:
    m = np.abs(ref[t]).max()
    ulp = np.spacing(f32(m)).astype(f64)
    bound[t] = 3 * np.abs(naive[t] - ref[t]).max() + 2 * ulp + np.finfo(f32).eps * np.sqrt(N) * m

variants = [("3xTF32", lambda name, a, b: gemm(a, b))]
for g in ("S", "dP", "dV", "dK", "dQ"):
    for drop in ("lohi", "hilo"):
        variants.append((f"{g} -{drop}", lambda name, a, b, g=g, drop=drop: gemm(a, b, drop if name == g else None)))
variants.append(("1xTF32", lambda name, a, b: gemm(a, b, split=False)))

print(f"N = {N}, d = {D}: max error / FP32-rule bound (fails above 1); naive fp32 error / bound in the first row")
print(f"{'variant':>12} " + " ".join(f"{t:>8}" for t in ref))
print(f"{'naive':>12} " + " ".join(f"{np.abs(naive[t] - ref[t]).max() / bound[t]:8.3f}" for t in ref))
for name, mm in variants:
    out = backward(Q, K, V, dO, scale, mm, lse, O)
    print(f"{name:>12} " + " ".join(f"{np.abs(out[t] - ref[t]).max() / bound[t]:8.3f}" for t in ref))
