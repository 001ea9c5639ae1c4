"""A small Triton attention forward, to time and verify with flashbench's scripts/peers.py:

    python3 scripts/peers.py configs/gpu-quick.json --callable examples/python/triton_attention.py:attention \
        --name triton-example -o results/triton.json

`attention(q, k, v, is_causal=False, scale=None)` has torch SDPA's signature and flashbench's conventions:
q (B, H, seq_q, d), k and v (B, kv_heads, seq_k, d) with kv_heads dividing H (query head h reads K/V head
h // (H // kv_heads)), causal aligned bottom-right (query i sees keys j <= i + seq_k - seq_q), a query row
that sees no key gets O = 0. fp16 and bf16, head dims 16, 32, 64, 128. Forward only: the output has no
grad_fn, so peers.py skips backward cases.

The kernel is FlashAttention's forward loop: one program per (tile of BLOCK_M query rows, batch x head);
K and V tiles of BLOCK_N keys; scores in fp32 in base 2 (log2(e) folded into the scale, so exp2 replaces
exp); the running max m and sum l rescale the accumulator once per key tile.
"""
import math

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634  # exp(x) = exp2(x * log2(e))
BLOCK_M = 64  # query rows per program
BLOCK_N = 64  # key rows per iteration
HEAD_DIMS = (16, 32, 64, 128)  # tl.dot needs a power of two >= 16
DTYPES = (torch.float16, torch.bfloat16)  # fp32 would run tl.dot in TF32, short of fp32's own accuracy


@triton.jit
def _forward(Q, K, V, O, qk_scale,
             stride_qb, stride_qh, stride_qm, stride_qd,
             stride_kb, stride_kh, stride_kn, stride_kd,
             stride_vb, stride_vh, stride_vn, stride_vd,
             stride_ob, stride_oh, stride_om, stride_od,
             heads, group, seq_q, seq_k,
             CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    tile = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // heads
    h = bh % heads
    hk = h // group  # the K/V head this query head reads
    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)  # (BLOCK_M,)
    cols = tl.arange(0, BLOCK_N)                   # (BLOCK_N,)
    dims = tl.arange(0, HEAD_DIM)                  # (HEAD_DIM,)
    row_ok = rows < seq_q

    q = tl.load(Q + b * stride_qb + h * stride_qh + rows[:, None] * stride_qm + dims[None, :] * stride_qd,
                mask=row_ok[:, None], other=0.0)  # (BLOCK_M, HEAD_DIM)
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)  # running max of the scores (base 2)
    l = tl.zeros([BLOCK_M], tl.float32)                 # running sum of exp2(s - m)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)     # running sum of exp2(s - m) v

    offset = seq_k - seq_q  # causal: row i sees keys j <= i + offset
    end = seq_k
    if CAUSAL:  # keys past what the tile's last row sees are never loaded
        end = tl.minimum(seq_k, tl.maximum(0, (tile + 1) * BLOCK_M + offset))
    for start in range(0, end, BLOCK_N):
        keys = start + cols
        key_ok = keys < seq_k
        kt = tl.load(K + b * stride_kb + hk * stride_kh + keys[None, :] * stride_kn + dims[:, None] * stride_kd,
                     mask=key_ok[None, :], other=0.0)  # (HEAD_DIM, BLOCK_N): K^T
        s = tl.dot(q, kt) * qk_scale  # (BLOCK_M, BLOCK_N), fp32
        visible = key_ok[None, :]
        if CAUSAL:
            visible = visible & (keys[None, :] <= rows[:, None] + offset)
        s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        # A row with no visible key so far has m_new = -inf: subtract 0 instead, so that exp2 gives 0, not NaN.
        m_sub = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp2(m - m_sub)  # rescales what was accumulated under the old max
        p = tl.exp2(s - m_sub[:, None])
        l = l * alpha + tl.sum(p, 1)
        v = tl.load(V + b * stride_vb + hk * stride_vh + keys[:, None] * stride_vn + dims[None, :] * stride_vd,
                    mask=key_ok[:, None], other=0.0)  # (BLOCK_N, HEAD_DIM)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m = m_new
    # O = acc / l; a row that saw no key has acc = 0 and l = 0: O = 0.
    out = acc / tl.where(l == 0.0, 1.0, l)[:, None]
    tl.store(O + b * stride_ob + h * stride_oh + rows[:, None] * stride_om + dims[None, :] * stride_od,
             out.to(O.dtype.element_ty), mask=row_ok[:, None])


def attention(q, k, v, is_causal=False, scale=None):
    """O = softmax(scale * q k^T) v, flashbench's conventions (module docstring). Raises ValueError or
    TypeError for what it does not run (peers.py records the case as skipped with the message)."""
    if q.dtype not in DTYPES or k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(f"triton example: fp16 and bf16 only, got {q.dtype}")
    if q.dim() != 4 or k.dim() != 4 or k.shape != v.shape:
        raise ValueError("triton example: q (B, H, seq_q, d), k and v (B, kv_heads, seq_k, d)")
    batch, heads, seq_q, dim = q.shape
    kv_heads, seq_k = k.shape[1], k.shape[2]
    if dim not in HEAD_DIMS or k.shape[3] != dim:
        raise ValueError(f"triton example: head dims {HEAD_DIMS}, got {dim}")
    if heads % kv_heads != 0 or k.shape[0] != batch:
        raise ValueError(f"triton example: kv_heads {kv_heads} must divide heads {heads}")
    scale = 1.0 / math.sqrt(dim) if scale is None else scale
    o = torch.empty_like(q)
    grid = (triton.cdiv(seq_q, BLOCK_M), batch * heads)
    _forward[grid](q, k, v, o, scale * LOG2E,
                   *q.stride(), *k.stride(), *v.stride(), *o.stride(),
                   heads, heads // kv_heads, seq_q, seq_k,
                   CAUSAL=bool(is_causal), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, HEAD_DIM=dim,
                   num_warps=4, num_stages=2)
    return o
