#!/usr/bin/env python3
"""Call M's check (session 71): c20d618's causal masks are a rewrite of the same compares, so this commit's
flash-sm90 (fb_torch.flash_sm90) and the build before it (flash_sm90_base, FB_CAPI_LIB_BASE) must give the same bits:
O of the inference and the training forward and the LSE, bit for bit; dK and dV bit for bit where they are summed in a
fixed order (MHA; a GQA head split sums them as dQ), dQ (fp32 reductions in any order) within 1% of its largest
magnitude. Shapes no config names: causal with seq_q = seq_k, seq_q > seq_k (rows with no key), seq_q < seq_k, GQA,
d = 64 and 128, bf16 and fp16, and a non-causal tail-split launch (no mask there: the same bits all the more).

    FB_CAPI_LIB_BASE=... python3 results/h200/s71/calls/same_bits.py

Prints each difference and "same_bits.py: N problems"; exit 0 with none, 1 with some, 77 without PyTorch, a GPU or
the second build.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 4, "scripts"))

SHAPES = [  # batch, heads, kv_heads, seq_q, seq_k, d, dtype, causal
    (4, 8, 8, 700, 700, 64, "bfloat16", True),
    (2, 12, 3, 1111, 1111, 64, "float16", True),
    (3, 6, 6, 500, 300, 64, "bfloat16", True),
    (2, 8, 8, 333, 900, 128, "bfloat16", True),
    (2, 16, 4, 1000, 1000, 128, "float16", True),
    (3, 4, 4, 1536, 1536, 128, "bfloat16", True),
    (1, 8, 8, 4096, 4096, 64, "bfloat16", False),
]


def main():
    try:
        import torch
    except ImportError:
        print("same_bits.py: PyTorch is not installed: skipped")
        return 77
    import fb_torch
    if not torch.cuda.is_available() or not os.environ.get(fb_torch.BASE_ENV):
        print(f"same_bits.py: no CUDA device or {fb_torch.BASE_ENV} unset: skipped")
        return 77
    bad = []
    gen = torch.Generator(device="cuda").manual_seed(71)
    for b, h, hk, sq, sk, d, dts, causal in SHAPES:
        dt = getattr(torch, dts)
        where = f"b{b}-h{h}-kv{hk} {sq}x{sk} d{d} {dts} causal={causal}"
        q = torch.randn(b, h, sq, d, device="cuda", dtype=dt, generator=gen)
        k = torch.randn(b, hk, sk, d, device="cuda", dtype=dt, generator=gen)
        v = torch.randn(b, hk, sk, d, device="cuda", dtype=dt, generator=gen)
        dout = torch.randn(b, h, sq, d, device="cuda", dtype=dt, generator=gen)
        out = {}
        for name in ("flash_sm90", "flash_sm90_base"):
            f = getattr(fb_torch, name)
            with torch.no_grad():
                o_inf = f(q, k, v, is_causal=causal)
            env = fb_torch.BASE_ENV if name.endswith("_base") else fb_torch.DEFAULT_ENV
            _, lse, _ = fb_torch.forward("flash-sm90", q, k, v, causal, None, False, lse=True, env=env)
            qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
            o = f(qg, kg, vg, is_causal=causal)
            o.backward(dout)
            out[name] = {"O (inference)": o_inf, "LSE": lse, "O": o.detach(), "dK": kg.grad, "dV": vg.grad,
                         "dQ": qg.grad}
        torch.cuda.synchronize()
        new, old = out["flash_sm90"], out["flash_sm90_base"]
        for t in ("O (inference)", "LSE", "O", "dK", "dV", "dQ"):
            x, y = new[t], old[t]
            if not torch.isfinite(x).all():
                bad.append(f"{where} {t}: not finite")
                continue
            if t == "dQ" or (t in ("dK", "dV") and hk != h):
                scale = y.float().abs().max().clamp(min=1e-6)
                rel = ((x.float() - y.float()).abs().max() / scale).item()
                if not rel < 0.01:
                    bad.append(f"{where} {t}: max |difference| {rel:.3g} of its largest magnitude")
            elif not torch.equal(x, y):
                bad.append(f"{where} {t}: {int((x != y).sum())} of {x.numel()} elements differ")
    for line in bad:
        print(line)
    print(f"same_bits.py: {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
