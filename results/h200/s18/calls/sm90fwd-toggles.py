# Session 18, sm90fwd (issue 13): how many more bits fp16 data toggles than bf16 data, the model behind
# job1-sm90fwd.sh's power reading (docs/perf-notes.md, flash-sm90 forward, session 18). numpy only, no GPU.
# For standard-normal Q / K / V and for P = exp(s - row max) over 1024 keys with s ~ N(0, 1) (the scaled scores of
# d = 128 standard-normal inputs): bit flips between consecutive 16-bit words (a bus / register-port model), bits set,
# and significand bits set with the hidden bit (a multiplier array's partial products go with their product).
import numpy as np

rng = np.random.default_rng(0)


def bf16_bits(x):  # float32 -> bf16, round to nearest even
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF).astype(np.uint16)


def f16_bits(x):
    return x.astype(np.float16).view(np.uint16)


def popcount16(a):
    a = a.astype(np.uint32)
    return sum((a >> i) & 1 for i in range(16))


x = rng.standard_normal(1 << 20)
s = rng.standard_normal((1024, 1024))
p = np.exp(s - s.max(axis=1, keepdims=True)).ravel()
for name, v in (("N(0,1) Q/K/V", x), ("P = exp(s - max)", p)):
    f, b = f16_bits(v), bf16_bits(v)
    tf, tb = popcount16(f[1:] ^ f[:-1]).mean(), popcount16(b[1:] ^ b[:-1]).mean()
    sf, sb = popcount16(f & 0x3FF).mean() + 1, popcount16(b & 0x7F).mean() + 1
    print(f"{name:18s} flips/word fp16 {tf:4.2f} bf16 {tb:4.2f} (x{tf / tb:.2f}); bits set fp16 "
          f"{popcount16(f).mean():4.2f} bf16 {popcount16(b).mean():4.2f}; significand bits set fp16 {sf:4.2f} of 11, "
          f"bf16 {sb:4.2f} of 8 (squared ratio x{(sf / sb) ** 2:.2f})")
