# Emulates flash_fwd_tf32_kernel's index logic for one block (all warps), in float64 (no TF32 rounding):
# checks fragment layouts, permutations, masks and the online softmax against plain attention.
# A line-by-line NumPy transliteration of kernels/flash/flash_fwd_tf32.cuh, ldmatrix and
# mma.m16n8k8 (TF32) emulated from the PTX ISA fragment tables; asserts fp64-level agreement. Not run by
# ctest (slow, and kept in step with the kernel by hand): python3 tests/tf32_model/emulate_fwd.py
import numpy as np
rng = np.random.default_rng(0)
lanes = np.arange(32); G = lanes // 4; T = lanes % 4

def mma(d, a, b):
    # d: [32,4], a: [32,4], b: [32,2] (PTX m16n8k8 tf32 layout)
    A = np.zeros((16, 8)); B = np.zeros((8, 8)); C = np.zeros((16, 8))
    for l in range(32):
        g, t = l // 4, l % 4
        A[g, t] = a[l, 0]; A[g + 8, t] = a[l, 1]; A[g, t + 4] = a[l, 2]; A[g + 8, t + 4] = a[l, 3]
        B[t, g] = b[l, 0]; B[t + 4, g] = b[l, 1]
        C[g, 2*t] = d[l, 0]; C[g, 2*t+1] = d[l, 1]; C[g+8, 2*t] = d[l, 2]; C[g+8, 2*t+1] = d[l, 3]
    Dm = A @ B + C
    out = np.zeros((32, 4))
    for l in range(32):
        g, t = l // 4, l % 4
        out[l] = [Dm[g, 2*t], Dm[g, 2*t+1], Dm[g+8, 2*t], Dm[g+8, 2*t+1]]
    return out

def ldmatrix_x4(smem, addr):
    # addr: [32] float index of each lane's row (16 bytes = 4 floats); returns [32,4]
    r = np.zeros((32, 4))
    for i in range(4):
        for l in range(32):
            row_addr = addr[8*i + l // 4]
            r[l, i] = smem[row_addr + l % 4]
    return r

def run(D, kBr, kBc, kWarps, chunk, seq_q, seq_k, causal, q_tile):
    off_c = seq_k - seq_q  # bottom-right causal: row i sees keys j <= i + off_c
    kWarpRows = kBr // kWarps; kMT = kWarpRows // 16
    RS = D + 4
    Q = rng.standard_normal((seq_q, D)); K = rng.standard_normal((seq_k, D)); V = rng.standard_normal((seq_k, D))
    scale = 1 / np.sqrt(D)
    q0 = q_tile * kBr
    sQ = np.zeros(kBr * RS)
    for r in range(kBr):
        if q0 + r < seq_q: sQ[r*RS:r*RS+D] = Q[q0 + r]
    last = min(q0 + kBr, seq_q) - 1
    key_end = max(0, min(last + off_c + 1, seq_k)) if causal else seq_k
    n_tiles = max((key_end + kBc - 1) // kBc, 1)
    out = np.zeros((kBr, D)); lse_out = np.zeros(kBr)
    for warp in range(kWarps):
        wr0 = warp * kWarpRows
        a_row = lanes % 16; a_col = lanes // 16
        k_row = (lanes // 16) * 8 + lanes % 8; k_col = (lanes // 8) % 2
        q_lane = (wr0 + a_row) * RS + a_col * 4
        k_lane = k_row * RS + k_col * 4
        acc_o = np.zeros((kMT, D // 8, 32, 4))
        row_max = np.full((kMT, 2, 32), -np.inf); row_sum = np.zeros((kMT, 2, 32))
        for j in range(n_tiles):
            k0 = j * kBc
            sK = np.zeros(kBc * RS); sV = np.zeros(kBc * RS)
            for r in range(kBc):
                if k0 + r < seq_k:
                    sK[r*RS:r*RS+D] = K[k0 + r]; sV[r*RS:r*RS+D] = V[k0 + r]
            s = np.zeros((kMT, kBc // 8, 32, 4))
            for c in range(0, D // 8, chunk):
                part = np.zeros_like(s)
                for ks in range(c, c + chunk):
                    qa = [ldmatrix_x4(sQ, q_lane + mt * 16 * RS + ks * 8) for mt in range(kMT)]
                    for nt in range(0, kBc // 8, 2):
                        kb = ldmatrix_x4(sK, k_lane + nt * 8 * RS + ks * 8)
                        for mt in range(kMT):
                            part[mt, nt] = mma(part[mt, nt], qa[mt], kb[:, 0:2])
                            part[mt, nt + 1] = mma(part[mt, nt + 1], qa[mt], kb[:, 2:4])
                s = part if c == 0 else s + part
            # mask
            for mt in range(kMT):
                for nt in range(kBc // 8):
                    for e in range(4):
                        row = q0 + wr0 + mt * 16 + G + (e // 2) * 8
                        key = k0 + nt * 8 + 2 * T + e % 2
                        vis = (key < seq_k) & ~(causal & (key > row + off_c))
                        s[mt, nt, :, e] = np.where(vis, s[mt, nt, :, e], -np.inf)
            sl2 = scale * np.log2(np.e)
            alpha = np.zeros((kMT, 2, 32))
            for mt in range(kMT):
                for hf in range(2):
                    tm = np.max(s[mt, :, :, 2*hf:2*hf+2], axis=(0, 2))  # per lane
                    tm = np.array([tm[(l//4)*4:(l//4)*4+4].max() for l in range(32)])  # quad max
                    nm = np.maximum(row_max[mt, hf], tm * sl2)
                    sub = np.where(nm == -np.inf, 0, nm)
                    al = np.exp2(row_max[mt, hf] - sub)
                    row_max[mt, hf] = nm
                    p = np.exp2(s[mt, :, :, 2*hf:2*hf+2] * sl2 - sub[None, :, None])
                    s[mt, :, :, 2*hf:2*hf+2] = p
                    row_sum[mt, hf] = row_sum[mt, hf] * al + p.sum(axis=(0, 2))
                    alpha[mt, hf] = al
            v_lane = (2 * T) * RS + G
            for nt in range(D // 8):
                part = np.zeros((kMT, 32, 4))
                for kk in range(kBc // 8):
                    v0 = sV[v_lane + kk * 8 * RS + nt * 8]; v1 = sV[v_lane + kk * 8 * RS + nt * 8 + RS]
                    vb = np.stack([v0, v1], axis=1)
                    for mt in range(kMT):
                        pa = s[mt, kk][:, [0, 2, 1, 3]]
                        part[mt] = mma(part[mt], pa, vb)
                for mt in range(kMT):
                    for e in range(4):
                        acc_o[mt, nt, :, e] = acc_o[mt, nt, :, e] * alpha[mt, e // 2] + part[mt, :, e]
        for mt in range(kMT):
            for hf in range(2):
                sm = np.array([row_sum[mt, hf][(l//4)*4:(l//4)*4+4].sum() for l in range(32)])
                row = wr0 + mt * 16 + G + hf * 8
                for nt in range(D // 8):
                    for x in range(2):
                        out[row, nt * 8 + 2 * T + x] = np.where(sm > 0, acc_o[mt, nt, :, 2 * hf + x] / np.where(sm > 0, sm, 1), 0)
                with np.errstate(divide='ignore'):
                    lse_out[row] = np.where(sm > 0, row_max[mt, hf] * np.log(2) + np.log(sm), -np.inf)
    # reference
    S = Q @ K.T * scale
    if causal: S = np.where(np.arange(seq_k)[None, :] <= np.arange(seq_q)[:, None] + off_c, S, -np.inf)
    m = S.max(1, keepdims=True); empty = np.isinf(m[:, 0])
    P = np.where(empty[:, None], 0.0, np.exp(S - np.where(empty[:, None], 0.0, m))); l = P.sum(1, keepdims=True)
    O = np.where(empty[:, None], 0.0, P / np.where(l > 0, l, 1)) @ V
    with np.errstate(divide='ignore'):
        L = np.where(empty, -np.inf, (m[:, 0] + np.log(np.where(l[:, 0] > 0, l[:, 0], 1))))
    rows = slice(q0, min(q0 + kBr, seq_q)); nv = rows.stop - rows.start
    eo = np.abs(out[:nv] - O[rows]).max()
    a, b = lse_out[:nv], L[rows]; same_inf = np.isinf(a) & np.isinf(b) & (a == b)
    with np.errstate(invalid='ignore'):
        el = np.abs(np.where(same_inf, 0, a - b)).max()
    print(f"D={D} kBr={kBr} kBc={kBc} warps={kWarps} seq_q={seq_q} seq_k={seq_k} causal={causal} tile={q_tile}: O err {eo:.2e} LSE err {el:.2e}")
    assert eo < 1e-10 and el < 1e-10

run(64, 128, 32, 4, 1, 77, 77, False, 0)
run(64, 128, 32, 4, 1, 200, 200, True, 1)
run(128, 128, 32, 8, 1, 150, 150, True, 1)
run(32, 128, 32, 4, 1, 130, 130, False, 1)
run(64, 128, 32, 4, 1, 77, 300, True, 0)    # fewer queries than keys
run(128, 128, 32, 8, 1, 300, 77, True, 1)   # rows 0..222 see no key; tile 1 = rows 128..255
run(64, 128, 32, 4, 1, 300, 77, True, 0)    # a tile of empty rows only
