# Emulates bwd_main_tf32_kernel's index logic (all blocks and warps, float64, no TF32 rounding) against
# textbook attention gradients.
# A line-by-line NumPy transliteration of kernels/flash/flash_bwd_tf32.cuh, ldmatrix and
# mma.m16n8k8 (TF32) emulated from the PTX ISA fragment tables; asserts fp64-level agreement. Not run by
# ctest (slow, and kept in step with the kernel by hand): python3 tests/tf32_model/emulate_bwd.py
import numpy as np, sys
rng = np.random.default_rng(0)
lanes = np.arange(32); G = lanes // 4; C = lanes % 4

def mma(d, a, b):
    A = np.zeros((16, 8)); B = np.zeros((8, 8)); Cm = np.zeros((16, 8))
    for l in range(32):
        g, t = l // 4, l % 4
        A[g, t] = a[l, 0]; A[g + 8, t] = a[l, 1]; A[g, t + 4] = a[l, 2]; A[g + 8, t + 4] = a[l, 3]
        B[t, g] = b[l, 0]; B[t + 4, g] = b[l, 1]
        Cm[g, 2*t] = d[l, 0]; Cm[g, 2*t+1] = d[l, 1]; Cm[g+8, 2*t] = d[l, 2]; Cm[g+8, 2*t+1] = d[l, 3]
    Dm = A @ B + Cm
    out = np.zeros((32, 4))
    for l in range(32):
        g, t = l // 4, l % 4
        out[l] = [Dm[g, 2*t], Dm[g, 2*t+1], Dm[g+8, 2*t], Dm[g+8, 2*t+1]]
    return out

def ldsm(smem, addr):
    r = np.zeros((32, 4))
    for i in range(4):
        for l in range(32):
            r[l, i] = smem[addr[8*i + l // 4] + l % 4]
    return r

def pcol(k): return k // 2 + 4 * (k % 2)

def run(D, BN, BM, chunk, batch, heads, kvh, seq, causal):
    scale = 1 / np.sqrt(D); grp = heads // kvh
    Q = rng.standard_normal((batch, heads, seq, D)); dO = rng.standard_normal((batch, heads, seq, D))
    K = rng.standard_normal((batch, kvh, seq, D)); V = rng.standard_normal((batch, kvh, seq, D))
    # reference
    O = np.zeros_like(Q); LSE = np.zeros((batch, heads, seq))
    dQr = np.zeros_like(Q); dKr = np.zeros_like(K); dVr = np.zeros_like(V)
    for b in range(batch):
        for h in range(heads):
            kh = h // grp
            S = Q[b, h] @ K[b, kh].T * scale
            if causal: S = np.where(np.tril(np.ones((seq, seq))) > 0, S, -np.inf)
            m = S.max(1, keepdims=True); P = np.exp(S - m); l = P.sum(1, keepdims=True); P /= l
            O[b, h] = P @ V[b, kh]; LSE[b, h] = (m + np.log(l))[:, 0]
            dP = dO[b, h] @ V[b, kh].T; Dd = (dO[b, h] * O[b, h]).sum(1, keepdims=True)
            dS = P * (dP - Dd)
            dQr[b, h] = scale * dS @ K[b, kh]; dKr[b, kh] += scale * dS.T @ Q[b, h]; dVr[b, kh] += P.T @ dO[b, h]
    seq_pad = (seq + 127) // 128 * 128
    lse_pad = np.full((batch * heads, seq_pad), np.inf); d_pad = np.zeros((batch * heads, seq_pad))
    lse_pad[:, :seq] = LSE.reshape(batch * heads, seq) * np.log2(np.e)
    d_pad[:, :seq] = (dO * O).sum(-1).reshape(batch * heads, seq)
    dq_acc = np.zeros_like(Q); dK = np.zeros_like(K); dV = np.zeros_like(V)
    RS = D + 4; DS = BN + 4; W = BN // 16
    DqWM = BM // 16; DqWN = W // DqWM; DqCols = D // DqWN
    n_tiles = (seq + BN - 1) // BN
    sl2 = scale * np.log2(np.e)
    for bkv in range(batch * kvh):
        for tile in range(n_tiles):
            b, hk = bkv // kvh, bkv % kvh; n0 = tile * BN
            sK = np.zeros(BN * RS); sV = np.zeros(BN * RS)
            for r in range(BN):
                if n0 + r < seq: sK[r*RS:r*RS+D] = K[b, hk, n0 + r]; sV[r*RS:r*RS+D] = V[b, hk, n0 + r]
            m_tiles = (seq + BM - 1) // BM; m_begin = n0 // BM if causal else 0
            per_head = m_tiles - m_begin; m_rot = 0 if causal else (n0 // BM) % per_head
            acc_dk = np.zeros((W, D // 8, 32, 4)); acc_dv = np.zeros((W, D // 8, 32, 4))
            for it in range(grp * per_head):
                h = hk * grp + it // per_head; mt_ = m_begin + (m_rot + it % per_head) % per_head
                m0 = mt_ * BM; bh = b * heads + h
                sQ = np.zeros(BM * RS); sDo = np.zeros(BM * RS)
                for r in range(BM):
                    if m0 + r < seq: sQ[r*RS:r*RS+D] = Q[b, h, m0 + r]; sDo[r*RS:r*RS+D] = dO[b, h, m0 + r]
                sL = lse_pad[bh, m0:m0+BM]; sD = d_pad[bh, m0:m0+BM]
                need_mask = n0 + BN > seq or (causal and n0 + BN - 1 > m0)
                sDs = np.zeros(BM * DS)
                for warp in range(W):
                    k_a = (warp * 16 + lanes % 16) * RS + (lanes // 16) * 4
                    qb = ((lanes // 16) * 8 + lanes % 8) * RS + ((lanes // 8) % 2) * 4
                    NM = BM // 8
                    acc_s = None; acc_dp = None
                    for ch in range(0, D // 8, chunk):
                        ps = np.zeros((NM, 32, 4)); pdp = np.zeros((NM, 32, 4))
                        for ks in range(ch, ch + chunk):
                            ak = ldsm(sK, k_a + ks * 8); av = ldsm(sV, k_a + ks * 8)
                            for j in range(0, NM, 2):
                                bq = ldsm(sQ, qb + j * 8 * RS + ks * 8); bo = ldsm(sDo, qb + j * 8 * RS + ks * 8)
                                ps[j] = mma(ps[j], ak, bq[:, 0:2]); ps[j+1] = mma(ps[j+1], ak, bq[:, 2:4])
                                pdp[j] = mma(pdp[j], av, bo[:, 0:2]); pdp[j+1] = mma(pdp[j+1], av, bo[:, 2:4])
                        acc_s = ps if ch == 0 else acc_s + ps; acc_dp = pdp if ch == 0 else acc_dp + pdp
                    key_lo = n0 + warp * 16 + G
                    for j in range(NM):
                        ql = j * 8 + 2 * C
                        for e in range(4):
                            key = key_lo + (e // 2) * 8; query = m0 + ql + e % 2
                            vis = (key < seq) & ~(causal & (key > query))
                            lse_v = sL[ql + e % 2]; dd = sD[ql + e % 2]
                            with np.errstate(invalid='ignore', over='ignore'):
                                p = np.where(need_mask & ~vis, 0.0, np.exp2(acc_s[j, :, e] * sl2 - lse_v))
                            acc_s[j, :, e] = p; acc_dp[j, :, e] = p * (acc_dp[j, :, e] - dd)
                    col_lo = warp * 16 + np.array([pcol(g) for g in G])
                    for j in range(NM):
                        for e in range(4):
                            ql = j * 8 + 2 * C + e % 2
                            sDs[ql * DS + col_lo + (e // 2) * 8] = acc_dp[j, :, e]
                    for nt in range(D // 8):
                        pv = np.zeros((32, 4)); pk = np.zeros((32, 4))
                        for s in range(BM // 8):
                            off = (s * 8 + 2 * C) * RS + nt * 8 + G
                            bo = np.stack([sDo[off], sDo[off + RS]], 1); bq = np.stack([sQ[off], sQ[off + RS]], 1)
                            pv = mma(pv, acc_s[s][:, [0, 2, 1, 3]], bo); pk = mma(pk, acc_dp[s][:, [0, 2, 1, 3]], bq)
                        acc_dv[warp, nt] += pv; acc_dk[warp, nt] += pk
                # barrier; dQ
                for warp in range(W):
                    wm = warp % DqWM; wn = warp // DqWM
                    ds_a = (wm * 16 + lanes % 16) * DS + (lanes // 16) * 4
                    k_b = (2 * C) * RS + wn * DqCols + G
                    acc_dq = None
                    for ch in range(0, BN // 8, chunk):
                        part = np.zeros((DqCols // 8, 32, 4))
                        for kk in range(ch, ch + chunk):
                            ad = ldsm(sDs, ds_a + kk * 8)
                            for j in range(DqCols // 8):
                                kp = k_b + kk * 8 * RS + j * 8
                                part[j] = mma(part[j], ad, np.stack([sK[kp], sK[kp + RS]], 1))
                        acc_dq = part if ch == 0 else acc_dq + part
                    for j in range(DqCols // 8):
                        for e in range(4):
                            row = m0 + wm * 16 + G + (e // 2) * 8; col = wn * DqCols + j * 8 + 2 * C + e % 2
                            for l in range(32):
                                if row[l] < seq: dq_acc[b, h, row[l], col[l]] += scale * acc_dq[j, l, e]
            for warp in range(W):
                for j in range(D // 8):
                    for e in range(4):
                        r = n0 + warp * 16 + G + (e // 2) * 8; col = j * 8 + 2 * C + e % 2
                        for l in range(32):
                            if r[l] < seq:
                                dK[b, hk, r[l], col[l]] = scale * acc_dk[warp, j, l, e]; dV[b, hk, r[l], col[l]] = acc_dv[warp, j, l, e]
    e = [np.abs(x - y).max() for x, y in ((dq_acc, dQr), (dK, dKr), (dV, dVr))]
    print(f"D={D} BN={BN} BM={BM} b={batch} h={heads}/{kvh} seq={seq} causal={causal}: dQ {e[0]:.1e} dK {e[1]:.1e} dV {e[2]:.1e}")
    assert max(e) < 1e-9

run(32, 64, 32, 1, 1, 2, 1, 77, True)
run(32, 64, 32, 2, 1, 2, 1, 70, False)
run(64, 128, 32, 2, 1, 2, 2, 45, True)
run(128, 64, 16, 1, 1, 2, 1, 40, True)
