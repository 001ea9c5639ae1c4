# Rough numerics model of the TF32 forward (kernels/flash/flash_fwd_tf32.cuh) on one head: TF32 rounding
# (rna), each mma's sum exact then truncated to fp32 (RZ) -- or, with a third argument, every addend
# truncated to the largest one's fp32 ulp first -- and fp32 round-to-nearest elsewhere. Prints O's and
# LSE's max error of naive fp32 and of the accumulation variants against the FP32 rule (src/judge.h).
#   python3 tests/tf32_model/rounding_model.py N D [p]      (XS=10 in the environment scales the inputs)
# Not run by ctest: it informed the kernel's design (docs/perf-notes.md); the GPU tests are the record.
import numpy as np, sys
rng = np.random.default_rng(1)

def tf32(x):
    b = np.asarray(x, np.float32).view(np.uint32)
    return ((b + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)

def rz(x64):
    r = x64.astype(np.float32)
    over = np.abs(r.astype(np.float64)) > np.abs(x64)
    r[over] = np.nextafter(r[over], np.float32(0))
    return r

def mma_chain(acc, A, B, split, k0, k1):
    # acc (fp32) += A[:, k0:k1] @ B[k0:k1, :] as k8 mmas with RZ, 3 terms when split
    for k in range(k0, k1, 8):
        a = A[:, k:k+8]; b = B[k:k+8, :]
        ah = tf32(a); bh = tf32(b)
        terms = []
        if split:
            al = tf32(a - ah); bl = tf32(b - bh)
            terms += [(al, bh), (ah, bl)]
        terms.append((ah, bh))
        for x, y in terms:
            if PESSIMISTIC:
                # products and c aligned to the largest addend's fp32 ulp, each truncated toward zero
                pr = x.astype(np.float64)[:, :, None] * y.astype(np.float64)[None, :, :]  # n x 8 x m
                c = acc.astype(np.float64)
                big = np.maximum(np.abs(pr).max(1), np.abs(c))
                e = np.floor(np.log2(np.where(big > 0, big, 1.0)))
                ulp = np.exp2(e - 23)[:, None, :]
                pr = np.trunc(pr / ulp) * ulp
                acc = rz(c + pr.sum(1))
            else:
                acc = rz(acc.astype(np.float64) + x.astype(np.float64) @ y.astype(np.float64))
    return acc

def flash(Q, K, V, scale, split, chunk, outside, Bc=32):
    n, d = Q.shape
    sl2 = np.float32(scale * np.log2(np.e))
    O = np.zeros((n, d), np.float32); m = np.full(n, -np.inf, np.float32); l = np.zeros(n, np.float32)
    for k0 in range(0, n, Bc):
        Kt = K[k0:k0+Bc].T.copy(); Vt = V[k0:k0+Bc]
        if outside:
            S = None
            for c in range(0, d, 8 * chunk):
                part = mma_chain(np.zeros((n, Kt.shape[1]), np.float32), Q, Kt, split, c, c + 8 * chunk)
                S = part if S is None else (S + part).astype(np.float32)
        else:
            S = mma_chain(np.zeros((n, Kt.shape[1]), np.float32), Q, Kt, split, 0, d)
        mn = np.maximum(m, (S.max(1) * sl2).astype(np.float32))
        alpha = np.exp2(m - mn).astype(np.float32)
        P = np.exp2((S * sl2 - mn[:, None]).astype(np.float32)).astype(np.float32)
        l = (l * alpha + P.sum(1, dtype=np.float32)).astype(np.float32)
        m = mn
        if outside:
            part = mma_chain(np.zeros((n, d), np.float32), P, Vt, split, 0, Vt.shape[0])
            O = (O.astype(np.float64) * alpha[:, None] + part).astype(np.float32)  # fma
        else:
            O = (O * alpha[:, None]).astype(np.float32)
            O = mma_chain(O, P, Vt, split, 0, Vt.shape[0])
    return (O / l[:, None]).astype(np.float32), (m * np.float32(np.log(2)) + np.log(l)).astype(np.float32)

def naive(Q, K, V, scale):
    S = (Q @ K.T).astype(np.float32) * np.float32(scale)
    m = S.max(1, keepdims=True); P = np.exp(S - m).astype(np.float32); l = P.sum(1, keepdims=True, dtype=np.float32)
    P = (P / l).astype(np.float32)
    return (P @ V).astype(np.float32), (m[:, 0] + np.log(l[:, 0])).astype(np.float32)

def ref(Q, K, V, scale):
    Q, K, V = (x.astype(np.float64) for x in (Q, K, V))
    S = Q @ K.T * scale; m = S.max(1, keepdims=True); P = np.exp(S - m); l = P.sum(1, keepdims=True)
    return (P / l) @ V, m[:, 0] + np.log(l[:, 0])

n, d = int(sys.argv[1]), int(sys.argv[2])
PESSIMISTIC = len(sys.argv) > 3
XS = float(__import__("os").environ.get("XS", "1"))
Q, K, V = ((XS * rng.standard_normal((n, d))).astype(np.float32) for _ in range(3))
scale = 1 / np.sqrt(d)
Or, Lr = ref(Q, K, V, scale)
eps = np.finfo(np.float32).eps
On, Ln = naive(Q, K, V, scale)
en = np.abs(On - Or).max(); eln = np.abs(Ln - Lr).max()
ulp = lambda m: eps * 2.0 ** np.floor(np.log2(m))
bo = 2 * en + 2 * ulp(np.abs(Or).max()); bl = 2 * eln + 2 * ulp(np.abs(Lr).max())
print(f"N={n} d={d}: naive O {en:.2e} LSE {eln:.2e} | bound O {bo:.2e} LSE {bl:.2e}")
for name, split, chunk, outside in [("3x ch1", True, 1, True), ("3x ch2", True, 2, True), ("3x ch4", True, 4, True),
                                         ("3x inside", True, 0, False), ("1x", False, 1, True)]:
    O, L = flash(Q, K, V, scale, split, chunk, outside)
    eo = np.abs(O - Or).max(); el = np.abs(L - Lr).max()
    print(f"  {name:11s} O {eo:.2e} ({'ok' if eo <= bo else 'FAIL'}) LSE {el:.2e} ({'ok' if el <= bl else 'FAIL'})")
