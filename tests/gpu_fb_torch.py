#!/usr/bin/env python3
"""GPU test (ctest label gpu): flashbench's kernels under peers.py through the C API (scripts/fb_torch.py).

On shapes no config names (seq_q != seq_k, GQA and MHA, causal or not, d 64 and 128, bf16 and fp16, forward and
backward), fb_torch's flash (and flash_sm90 on sm_90) must come out verified by peers.py's rule, and a wrong
kernel (flash with its softmax scale 25% high) must not: the path judges what it times. Twice: the reps back to back,
then interleaved (--interleave) with PyTorch's cuDNN among the kernels.
Exit 77 (skipped) without PyTorch or a CUDA device.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "..", "scripts")
sys.path.insert(0, SCRIPTS)

SPEC = {"name": "fb-torch-check", "seq_q": [192], "seq_k": [320], "batch": [2], "heads": [6], "kv_heads": [2, 6],
        "head_dim": [64, 128], "dtype": ["bf16", "fp16"], "causal": [False, True], "pass": ["fwd", "bwd"],
        "kernels": ["flash"], "warmup": 1, "reps": 2, "seed": 11, "verify": True}


def wrong_scale(q, k, v, is_causal=False, scale=None):
    """The flash kernel with its softmax scale 25% high: a wrong kernel the judge must fail."""
    import fb_torch
    d = q.shape[-1]
    return fb_torch.flash(q, k, v, is_causal=is_causal, scale=1.25 * (scale if scale else d ** -0.5))


def check(callables, extra):
    """peers.py over SPEC with the callables (and `extra` arguments): the problems found, and a summary line."""
    with tempfile.TemporaryDirectory() as tmp:
        spec, out = os.path.join(tmp, "spec.json"), os.path.join(tmp, "out.json")
        with open(spec, "w") as f:
            json.dump(SPEC, f)
        argv = [sys.executable, os.path.join(SCRIPTS, "peers.py"), spec, "-o", out] + extra
        for c in callables:
            argv += ["--callable", os.path.join(SCRIPTS, "fb_torch.py") + ":" + c]
        argv += ["--callable", os.path.abspath(__file__) + ":wrong_scale"]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        print(r.stderr[-3000:])
        if not os.path.exists(out):
            return [f"peers.py {' '.join(extra)} wrote no results (exit {r.returncode})"], ""
        doc = json.load(open(out))
    records = doc["results"]
    bad = []
    for rec in records:
        if rec["kernel"].startswith("torch-"):  # an SDPA peer: measured, not judged
            if rec.get("status") not in ("ok", "skipped") or rec.get("verified") is not None:
                bad.append(f"{rec['key']} {rec['kernel']}: status {rec.get('status')}, verified {rec.get('verified')}")
            continue
        want = rec["kernel"] != "wrong_scale"  # verified, or (the wrong kernel) not
        if rec.get("status") != "ok" or rec.get("verified") is not want:
            bad.append(f"{rec['key']} {rec['kernel']}: status {rec.get('status')} ({rec.get('reason', '')}), "
                       f"verified {rec.get('verified')}, want {want}")
    kernels = {rec["kernel"] for rec in records}
    n_cases = 2 * 2 * 2 * 2 * 2
    for k in callables + ["wrong_scale"]:
        n = sum(1 for rec in records if rec["kernel"] == k)
        if n != n_cases:
            bad.append(f"{k}: {n} records, want {n_cases}")
    if r.returncode != 1:  # a failed callable makes peers.py exit 1
        bad.append(f"peers.py exit {r.returncode}, want 1 (wrong_scale fails)")
    order = "interleaved" if "--interleave" in extra else "blocked"
    if doc["settings"].get("rep_order") != order:
        bad.append(f"settings.rep_order {doc['settings'].get('rep_order')}, want {order}")
    return bad, f"{' '.join(extra) or 'reps back to back'}: {len(records)} records of {sorted(kernels)}"


def main():
    try:
        import torch
    except ImportError:
        print("gpu_fb_torch.py: PyTorch is not installed: skipped")
        return 77
    if not torch.cuda.is_available():
        print("gpu_fb_torch.py: no CUDA device: skipped")
        return 77
    callables = ["flash"] + (["flash_sm90"] if torch.cuda.get_device_capability() >= (9, 0) else [])
    bad = []
    # The reps back to back (the default), then interleaved with an SDPA backend among the kernels (--interleave:
    # every kernel's reps taken in turn, each in its own backend context): the same verdicts.
    for extra in ([], ["--interleave", "--backends", "cudnn"]):
        b, line = check(callables, extra)
        bad += b
        print(f"gpu_fb_torch.py: {line}")
    for b in bad:
        print("FAIL", b)
    print(f"gpu_fb_torch.py: {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
