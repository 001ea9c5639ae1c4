"""Call O's probe (session 70): flash-sm90's forward under the probe word `ones` through the C API's kernel names with
settings (capi.h, version 3), beside the plain flash_sm90 in one peers.py loop. Under no_grad (peers.py's forward
timing) the call asks for no LSE, which is where `ones` applies (d = 64). A peers.py callable with SDPA's signature."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "scripts"))
import fb_torch  # noqa: E402

flash_sm90_ones = fb_torch.kernel("flash-sm90:FB_SM90_FWD_PROBE=ones")
