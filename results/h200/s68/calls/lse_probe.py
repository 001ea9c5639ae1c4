"""Call L's probe (session 68): flash-sm90's forward through the C API asked for its LSE even where no backward can
follow, as every fb_torch forward was before session 68 (since then an inference forward asks for none). A peers.py
callable with SDPA's signature, forward only."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "scripts"))
import fb_torch  # noqa: E402


def flash_sm90_lse(q, k, v, is_causal=False, scale=None):
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    return fb_torch.forward("flash-sm90", q, k, v, bool(is_causal), scale, training=False, lse=True)[0]
