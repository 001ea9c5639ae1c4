# Session 18 (sm90fwd2): the schedule model behind cpairq's balanced tail (docs/perf-notes.md, flash-sm90 forward,
# "Session 18: d = 64 and the causal order"): 132 blocks take tickets from a counter as they finish; a tile costs
# 1.3 + L K/V steps (+-5% speed jitter); reports the idle share of the launch and the share of K/V loads of one plane's
# tile j within half a step of another (what the L2 request coalescer could merge). Plain python3, no inputs.
import heapq, math, random
def lengths(N, Br, Bc, shift):
    Q = (N + Br - 1) // Br
    return [max(1, math.ceil(min(N, Br*q - shift + Br) / Bc)) for q in range(Q)]
def grouped(t, planes, Q, g):
    gt = g*Q; grp = t//gt; f = grp*g; here = min(g, planes-f); w = t-grp*gt
    return f + w % here, Q-1 - w//here
def tailband(t, planes, Q, pt):
    head = (planes - pt) * Q
    if t < head: return t // Q, Q-1 - t % Q
    u = t - head; return planes - pt + u % pt, Q-1 - u // pt
def sim(planes, L, order, blocks=132, fixed=1.3, window=0.5, seed=1):
    rnd = random.Random(seed); Q = len(L); n = planes*Q
    free = [(0.0, b) for b in range(blocks)]; heapq.heapify(free)
    loads = {}; end = 0.0; busy = 0.0
    for t in range(n):
        tm, b = heapq.heappop(free); p, q = order(t)
        sp = rnd.uniform(0.95, 1.05)
        for j in range(L[q]): loads.setdefault((p, j), []).append(tm + (fixed*0.5 + j)*sp)
        dur = (fixed + L[q])*sp; busy += dur
        heapq.heappush(free, (tm + dur, b)); end = max(end, tm + dur)
    tot = sum(len(v) for v in loads.values()); coal = 0
    for v in loads.values():
        v.sort(); coal += sum(1 for i in range(1, len(v)) if v[i]-v[i-1] <= window)
    return end/(busy/blocks) - 1, coal/tot
for name, N, Br, sh, planes, g0 in [("d64 causal N=512", 512, 192, 64, 1024, 130), ("d64 causal N=1k", 1024, 192, 128, 512, 65),
                                 ("d128 causal N=512", 512, 128, 0, 512, 40), ("d128 causal N=1k", 1024, 128, 0, 256, 20),
                                 ("d64 causal N=4k", 4096, 192, 128, 128, 16), ("d128 causal N=4k", 4096, 128, 0, 64, 5)]:
    L = lengths(N, Br, 128, sh); Q = len(L)
    res = []
    for lab, o in [("default", lambda t: grouped(t, planes, Q, min(g0, planes))), ("pm g=1", lambda t: grouped(t, planes, Q, 1))] + \
                  [(f"tail{k}r", (lambda k: (lambda t: tailband(t, planes, Q, min(planes, math.ceil(k*132/Q)))))(k)) for k in (1, 2, 3)]:
        ls, cs = zip(*[sim(planes, L, o, seed=s) for s in range(3)])
        res.append(f"{lab} loss {sum(ls)/3:.2%} coal {sum(cs)/3:.0%}")
    print(f"{name:18s} " + " | ".join(res))
