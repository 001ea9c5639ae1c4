#!/usr/bin/env python3
# Session 20 (prepared for session 21): the split study's emulation (scripts/fp32_split_study.py, numpy, CPU) at d = 128
# non-causal, for fp16pair128 (docs/perf-notes.md, flash-sm90 fp32 backward, "Session 20, prepared for session 21:
# fp16pair at d = 128"): 3xFP16-plane (per-plane power-of-two scales, lo x 2^11, hi * hi and cross terms apart) and
# 3xFP16-plane-h8 (dS's scale 8 binades above its max, as an a-priori bound puts it) against 3xTF32, at the kernel's
# tiles (32 queries, 64 keys: dV / dK summed per query tile, dQ per key block), err / bound under the FP32 rule, on
# the GPU test's shapes and input scales: N = 320 at 1, 1000 x 777 with Q, K at 2 and 4, N = 320 at 2^-20.
# Accumulator modes rn and rz (the hardware lies between them: session 20's call A). ~4 minutes.
#   python3 scripts/fp32_split_study_d128.py > results/model/fp32-fp16pair128-d128.txt
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fp32_split_study as S  # noqa: E402

forms = [f for f in S.FORMS if f.name in ("3xTF32", "3xFP16-plane-h8", "3xFP16-plane")]
for f in forms:
    f.modes = ("rn", "rz")


def qk_times(fq):
    def make(rng, h, sq, sk, d):
        q, k, v, do = S.normal(rng, sq, sk, d)
        return q * fq, k * fq, v, do
    return make


def tiny(rng, h, sq, sk, d):
    return tuple(x * 2.0 ** -20 for x in S.normal(rng, sq, sk, d))


cases = [("d128-x1", 2, 320, 320, 128, False, qk_times(1.0)),
         ("d128-x2-1000x777", 2, 1000, 777, 128, False, qk_times(2.0)),
         ("d128-x4-1000x777", 2, 1000, 777, 128, False, qk_times(4.0)),
         ("d128-2^-20", 2, 320, 320, 128, False, tiny)]
t0 = time.time()
rows = []
for c in cases:
    rows += S.run_case(c, forms, 20261203)
    print(f"{c[0]} done {time.time() - t0:.0f}s", flush=True)
print("# err / bound per tensor under the FP32 rule (fails above 1); O and LSE are the study's forward in the same form")
print("\n".join(S.format_rows(rows)))
