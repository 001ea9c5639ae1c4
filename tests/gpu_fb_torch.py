#!/usr/bin/env python3
"""GPU test (ctest label gpu): flashbench's kernels under peers.py through the C API (scripts/fb_torch.py).

On shapes no config names (seq_q != seq_k, GQA and MHA, causal or not, d 64 and 128, bf16 and fp16, forward and
backward), fb_torch's flash (and flash_sm90 on sm_90) must come out verified by peers.py's rule, and a wrong
kernel (flash with its softmax scale 25% high) must not: the path judges what it times. Twice: the reps back to back,
then interleaved (--interleave) with PyTorch's cuDNN among the kernels. A forward no backward can follow (under
no_grad: the C API's call.lse NULL) must give the same O, bit for bit, as the training forward, whichever way the
kernel takes it (flash-sm90 skips the LSE, the others write it into the workspace), on the tail split's shape too.
Kernel names with settings (C API version 3) reach the kernel. Exit 77 (skipped) without PyTorch or a CUDA device.
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


def inference_forward(names):
    """O of each kernel under torch.no_grad (no LSE asked for) against its O with autograd on: the problems found."""
    import torch
    import fb_torch
    shapes = [(1, 8, 8, 4096, 4096, 64, torch.bfloat16, False),  # flash-sm90's d = 64 tail split on 132 SMs
              (2, 6, 2, 192, 320, 128, torch.float16, True), (3, 4, 4, 500, 300, 64, torch.bfloat16, True),
              (2, 4, 2, 200, 260, 64, torch.float32, False)]
    bad = []
    gen = torch.Generator(device="cuda").manual_seed(5)
    for b, h, hk, sq, sk, d, dt, causal in shapes:
        q = torch.randn(b, h, sq, d, device="cuda", dtype=dt, generator=gen)
        k = torch.randn(b, hk, sk, d, device="cuda", dtype=dt, generator=gen)
        v = torch.randn(b, hk, sk, d, device="cuda", dtype=dt, generator=gen)
        for name in names:
            f = getattr(fb_torch, name)
            # flash-sm90 under `noones`: d = 64's inference forward may take its row sums from P V (`ones`, other bits
            # of O; settings_in_names), which this check does not compare.
            f_inf = fb_torch.kernel("flash-sm90:FB_SM90_FWD_PROBE=noones") if name == "flash_sm90" else f
            with torch.no_grad():
                o_inf = f_inf(q, k, v, is_causal=causal)
            qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
            o_train = f(qg, kg, vg, is_causal=causal).detach()
            where = f"{name} b{b}-h{h}-kv{hk} {sq}x{sk} d{d} {dt} causal={causal}"
            if not torch.isfinite(o_train).all():
                bad.append(f"{where}: training O not finite")
            elif not torch.equal(o_inf, o_train):
                bad.append(f"{where}: inference O differs from training O in "
                           f"{int((o_inf != o_train).sum())} elements")
            # An inference forward that asks for the LSE all the same (call L's probe, session 68).
            o_lse, lse, _ = fb_torch.forward(name.replace("_", "-"), q, k, v, causal, None, False, lse=True)
            if lse is None or not torch.equal(o_lse, o_train) or torch.isnan(lse).any():
                bad.append(f"{where}: the inference forward with its LSE differs")
    torch.cuda.synchronize()
    return bad


def settings_in_names():
    """C API version 3: "KERNEL:VAR=VALUE" runs KERNEL under that setting for its calls only. A removed probe word is
    refused by the kernel itself (the setting reached it) while the plain name runs; under `ones` (d = 64's inference
    forward with P V's row sums) O is finite, off the training O's bits somewhere (the path ran) and within a few
    16-bit ulps of it. The problems found."""
    import torch
    import fb_torch
    bad = []
    gen = torch.Generator(device="cuda").manual_seed(7)
    q, k, v = (torch.randn(3, 4, 700, 64, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(3))
    try:
        fb_torch.kernel("flash-sm90:FB_SM90_FWD_PROBE=xskip")(q, k, v, is_causal=True)
        bad.append("flash-sm90:FB_SM90_FWD_PROBE=xskip ran (a removed word must be refused)")
    except RuntimeError as e:
        if "was measured and removed" not in str(e):
            bad.append(f"flash-sm90:FB_SM90_FWD_PROBE=xskip: {e}")
    with torch.no_grad():
        o = fb_torch.flash_sm90(q, k, v, is_causal=True)
        o_ones = fb_torch.kernel("flash-sm90:FB_SM90_FWD_PROBE=ones")(q, k, v, is_causal=True)
    torch.cuda.synchronize()
    # Relative to max(|O|, 1): one bf16 ulp is 2^-7 of it, the sums' difference 2^-9 at most.
    diff = ((o_ones.float() - o.float()).abs() / o.float().abs().clamp(min=1.0)).max().item()
    if not torch.isfinite(o_ones).all() or torch.equal(o, o_ones) or not diff < 0.02:
        bad.append(f"flash-sm90 under ones: finite {bool(torch.isfinite(o_ones).all())}, "
                   f"equal to the default {torch.equal(o, o_ones)}, max relative |diff| {diff}")
    return bad


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
    names = ["naive"] + callables
    b = inference_forward(names)
    bad += b
    print(f"gpu_fb_torch.py: inference forward of {names} against the training one: {len(b)} problems")
    if "flash_sm90" in callables:
        b = settings_in_names()
        bad += b
        print(f"gpu_fb_torch.py: kernel names with settings (flash-sm90 under xskip, ones): {len(b)} problems")
    for b in bad:
        print("FAIL", b)
    print(f"gpu_fb_torch.py: {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
