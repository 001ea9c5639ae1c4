#!/usr/bin/env python3
"""Session 20's model of `pipe2` (FB_SM90_BWD128=pipe2, flash_sm90_bwd.cu run_pipelined()): the d = 128 backward as
one pass (pre-pass, main kernel, dQ convert in stream order) against two half-batch passes on three streams of
descending priority (hi: pre-pass 0, main 0; mid: pre-pass 1 after pre-pass 0, main 1, convert 1; lo: convert 0 after
main 0). No GPU: an event simulation of 132 SMs.

- Main blocks: one an SM (a block holds the register file and 226 KB of shared memory), the hardware's dispatch in
  launch order to the first free SM (list scheduling), a block costing its query-tile steps plus `overhead` steps,
  times 1 + N(0, sigma) jitter. The causal order is the launcher's (plane groups, key tiles outermost, the key tail of
  grouped_key_tiles() where its rule takes one).
- Pre-pass and convert: bandwidth kernels of fixed bytes (pre-pass: O, dO read and the fp32 dQ accumulator written;
  convert: the accumulator read and dQ written). Alone on the GPU they run at `bw` (calibrated: ncu in session 16's
  call A, 72 us and 55 us at 16k tokens x 16 heads, ~3.7 TB/s); on k free SMs at min(bw, k * per_sm).
- Priorities: a kernel's blocks take an SM only when no higher-priority kernel that is ready has blocks pending.
- Step time from F20: main = measured total - pre - convert, over the default's modelled makespan in steps.
Prints, per row, the default's and pipe2's modelled times and their ratio for per_sm = 40 and 85 GB/s.
"""
import heapq, math, random, sys

SMS, BW = 132, 3.7e6  # bytes per us


def grouped_key_tiles(costs_fn, key_tiles, kv_planes, plane_group, sms=SMS):
    """flash_sm90_bwd.cu grouped_key_tiles(): most grouped T within 0.5% of the best, tail <= 2 device-fulls, all
    grouped unless that is >= 5% slower."""
    def makespan(grouped):
        free = [0.0] * sms
        end = 0.0
        order = []
        for first in range(0, kv_planes, plane_group):
            here = min(plane_group, kv_planes - first)
            order += [costs_fn(j) for j in range(grouped) for _ in range(here)]
        order += [costs_fn(j) for j in range(grouped, key_tiles) for _ in range(kv_planes)]
        for c in order:
            t = heapq.heappop(free) + c
            heapq.heappush(free, t)
            end = max(end, t)
        return end
    times = [(g, makespan(g)) for g in range(key_tiles, 0, -1) if (key_tiles - g) * kv_planes <= 2 * sms]
    fastest = min(t for _, t in times)
    best, bt = next((g, t) for g, t in times if t <= 1.005 * fastest)
    return key_tiles if times[0][1] < 1.05 * bt else best


def blocks_of(b, h, n, causal, overhead=3.0):
    """Block costs (steps) of one pass in launch order (MHA, d = 128)."""
    kt = (n + 127) // 128
    planes = b * h
    if not causal:
        qt = math.ceil(n / 80) if math.ceil(n / 80) * 80 <= 1.03 * math.ceil(n / 64) * 64 else math.ceil(n / 64)
        return [qt + overhead] * (planes * kt)  # plane-major: all blocks equal
    bm = 64 if n < 3072 else 80  # q80_kernel()'s causal rule at these N
    qt = math.ceil(n / bm)
    cost = lambda j: qt - (j * 128) // bm + overhead
    plane_bytes = n * 128 * 8
    pg = max(1, min(planes, int(60 * 2**20 / 3 // plane_bytes)))
    T = grouped_key_tiles(cost, kt, planes, pg)
    order = []
    for first in range(0, planes, pg):
        here = min(pg, planes - first)
        order += [cost(j) for j in range(T) for _ in range(here)]
    order += [cost(j) for j in range(T, kt) for _ in range(planes)]
    return order


class Kernel:
    def __init__(self, name, prio, blocks=None, nbytes=0.0, deps=()):
        self.name, self.prio, self.blocks, self.nbytes, self.deps = name, prio, list(blocks or []), nbytes, deps
        self.done_at = None
        self.running = 0
        self.left = nbytes


def simulate(kernels, step_us, per_sm, sigma, seed):
    """Kernels with deps; main kernels (blocks) and bandwidth kernels (nbytes). Returns the makespan (us)."""
    rng = random.Random(seed)
    t, free = 0.0, SMS
    ev = []  # (time, kernel) main block completions
    dt = 0.25
    while True:
        ready = [k for k in kernels if k.done_at is None and all(d.done_at is not None and d.done_at <= t for d in k.deps)]
        if not ready and not ev:
            return max(k.done_at for k in kernels)
        # dispatch main blocks by priority; a bandwidth kernel of higher priority with bytes left takes the free SMs
        ready.sort(key=lambda k: k.prio)
        bw_k = []
        for k in ready:
            if k.blocks:
                while free > 0 and k.blocks:
                    c = k.blocks.pop(0) * step_us * (1 + rng.gauss(0, sigma))
                    heapq.heappush(ev, (t + c, id(k), k))
                    k.running += 1
                    free -= 1
                if k.blocks:
                    break  # pending blocks: lower priorities wait
            elif k.nbytes and k.left > 0:
                bw_k.append(k)
        # bandwidth kernels on the free SMs, highest priority first
        avail = min(BW, free * per_sm)
        for k in bw_k:
            use = min(avail, BW)
            k.left -= use * dt
            avail -= use
            if k.left <= 0:
                k.done_at = t + dt
        t += dt
        while ev and ev[0][0] <= t:
            _, _, k = heapq.heappop(ev)
            k.running -= 1
            free += 1
            if not k.blocks and k.running == 0:
                k.done_at = t
        for k in kernels:  # kernels with no blocks and no bytes
            if k.done_at is None and not k.blocks and k.running == 0 and k.nbytes == 0 and \
                    all(d.done_at is not None and d.done_at <= t for d in k.deps):
                k.done_at = t


def row(name, b, h, n, causal, measured_us, launch_us=2.0, sigma=0.03):
    scale = b * h * n / (16384 * 16)
    pre_b, conv_b = 270e6 * scale, 203e6 * scale
    res = []
    for per_sm in (40e3, 85e3):
        # calibrate the step time on the default's model
        def default(step_us, seed=1):
            pre = Kernel("pre", 0, nbytes=pre_b)
            main = Kernel("main", 0, blocks=blocks_of(b, h, n, causal), deps=(pre,))
            conv = Kernel("conv", 0, nbytes=conv_b, deps=(main,))
            return simulate([pre, main, conv], step_us, per_sm, sigma, seed)
        # main time ~ measured - fixed kernels: solve step_us by two evaluations (linear in step_us)
        t1, t2 = default(1.0), default(2.0)
        step = 1.0 + (measured_us - t1) / (t2 - t1)
        d = default(step, seed=7)
        b0 = b // 2
        halves = [(b0, blocks_of(b0, h, n, causal)), (b - b0, blocks_of(b - b0, h, n, causal))]
        f = [hb / b for hb, _ in halves]
        pre0 = Kernel("pre0", 0, nbytes=pre_b * f[0])
        main0 = Kernel("main0", 0, blocks=halves[0][1], deps=(pre0,))
        pre1 = Kernel("pre1", 1, nbytes=pre_b * f[1], deps=(pre0,))
        main1 = Kernel("main1", 1, blocks=halves[1][1], deps=(pre1,))
        conv1 = Kernel("conv1", 1, nbytes=conv_b * f[1], deps=(main1,))
        conv0 = Kernel("conv0", 2, nbytes=conv_b * f[0], deps=(main0,))
        p = simulate([pre0, main0, pre1, main1, conv1, conv0], step, per_sm, sigma, seed=7) + 3 * launch_us
        res.append((per_sm / 1e3, d, p, d / p))
    print(f"{name:40s} " + "  ".join(f"{s:3.0f} GB/s/SM: default {d:7.1f} pipe2 {p:7.1f} us  {r:.3f}x" for s, d, p, r in res))


if __name__ == "__main__":
    # F20 (results/h200/s20/final/): flash-sm90 medians, us
    row("b16-h16 N=1024 bf16 non-causal", 16, 16, 1024, False, 834.5)
    row("b4-h16 N=4096 bf16 non-causal", 4, 16, 4096, False, 2705.2)
    row("b16-h16 N=1024 bf16 causal", 16, 16, 1024, True, 549.6)
    row("b32-h16 N=512 fp16 non-causal", 32, 16, 512, False, 524.1)
    row("b8-h16 N=2048 fp16 non-causal", 8, 16, 2048, False, 1505.1)
    row("b4-h8 N=4096 bf16 non-causal", 4, 8, 4096, False, 1360.9)
    row("b5-h20 N=1300 bf16 non-causal (no F20 row)", 5, 20, 1300, False, 834.5 * (5 * 20 * 1300) / (16 * 16 * 1024) * 1.02)
