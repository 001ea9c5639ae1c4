#!/usr/bin/env python3
"""Call O's record of which d = 64 forwards the tail split splits on this device (session 71): `ones` takes unsplit
launches only, so rule.py counts the split ones as controls. The library's own plan answers (the C API's workspace
for flash-sm90's forward is the tail split's parts, none where it does not split; capi.h), not a copy of it.

    python3 results/h200/s70/calls/splits.py DIR

Reads DIR/ab-*-1.json's flash_sm90 records, writes DIR/splits.json {"device": ..., "workspace_bytes": {key: bytes}}
for its d = 64 forwards. Needs the CUDA device the call timed on (the plan is made for its SM count)."""
import ctypes
import glob
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 4, "scripts"))
import fb_torch  # noqa: E402

DTYPES = {"fp16": 2, "bf16": 3}


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    d = sys.argv[1]
    out, device = {}, None
    for f in sorted(glob.glob(os.path.join(d, "ab-*-1.json"))):
        doc = json.load(open(f))
        device = doc.get("device")
        for r in doc["results"]:
            c = r["case"]
            if r["kernel"] != "flash_sm90" or c["head_dim"] != 64 or c["pass"] != "fwd":
                continue
            call = fb_torch.Call()
            call.struct_size = ctypes.sizeof(fb_torch.Call)
            call.dtype = DTYPES[c["dtype"]]
            call.batch, call.heads, call.kv_heads = c["batch"], c["heads"], c["kv_heads"]
            call.seq_q, call.seq_k, call.head_dim = c["seq_q"], c["seq_k"], c["head_dim"]
            call.causal, call.scale = int(c["causal"]), 1.0 / math.sqrt(c["head_dim"])
            out[r["key"]] = fb_torch.workspace_bytes("flash-sm90", fb_torch.FB_PASS_FWD, call, 0)
    json.dump({"device": device, "workspace_bytes": out}, open(os.path.join(d, "splits.json"), "w"), indent=1)
    print(f"splits.py: {sum(1 for v in out.values() if v > 0)} of {len(out)} d = 64 forwards split")
    return 0


if __name__ == "__main__":
    sys.exit(main())
