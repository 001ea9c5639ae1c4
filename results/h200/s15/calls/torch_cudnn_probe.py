# One SDPA call shape through PyTorch's cuDNN backend (for ncu: which kernel torch's cuDNN runs).
import sys, torch
from torch.nn.attention import SDPBackend, sdpa_kernel
b, h, n, d, causal = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "causal"
q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(3):
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
torch.cuda.synchronize()
print(torch.__version__, torch.backends.cudnn.version())
