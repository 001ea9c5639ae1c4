#!/usr/bin/env python3
"""Model check of the fp32 backward probe `roles`'s protocol between its two consumers (session 15, prepared in
session 14; kernels/flash_sm90/flash_sm90_tf32_bwd_kernel.cuh, tf32_bwd_consume_roles):

  python3 scripts/fp32s15_roles_model.py [TILES=4]

Each consumer is the sequence of its events per tile that touch what the two share: the named barriers between them
(kBarLoFree, kBarPReady, kBarDsReady: one arriver, one waiter each), its accesses to the query halves of dS lo / hi
(W: generic stores; R: generic loads or wgmma reads, complete at the wgmma wait that follows them in the kernel) and
its TMA reductions' reads of its staging rows (from the issue to the bulk wait of the next tile or of the end).
Checks (1) every interleaving: no deadlock, no phase overrun (a consumer arriving twice in one phase of a barrier);
(2) every two conflicting accesses of different consumers (same rows, one a store) ordered by happens-before
(program order, and arrive -> the waiter's next event for each phase). Ordering inside one consumer's warpgroup
(its own bar.sync before reusing what its other threads read or wrote) is not modelled: the kernel's comments.
Then the same checks on three broken variants, each of which must fail (the model can see what it checks).
Exit status 0 when the protocol passes and every broken variant fails.
"""
import sys

LO0, LO1, HI0, HI1 = "lo[0:32]", "lo[32:64]", "hi[0:32]", "hi[32:64]"


def consumer0(t):  # S^T, P, dV, dQ^T of queries [0, 32)
    return [("tmaend", HI0, t - 1),  # bulk_wait_group_read_all (its reductions of t - 1 have read)
            ("sync", "LoFree"),
            ("W", LO0), ("W", LO1),  # raw P
            ("arrive", "PReady"),
            ("sync", "DsReady"),
            ("R", HI0), ("R", LO0),  # dQ^T's B (wgmma, waited)
            ("W", HI0),  # staging
            ("tmastart", HI0, t)]


def consumer1(t):  # dP^T, dS, dK, dQ^T of queries [32, 64)
    return [("arrive", "LoFree"),
            ("sync", "PReady"),
            ("R", LO0), ("R", LO1),  # raw P
            ("tmaend", HI1, t - 1),
            ("W", HI0), ("W", HI1), ("W", LO0), ("W", LO1),  # dS hi, lo
            ("arrive", "DsReady"),
            ("R", HI1), ("R", LO1),  # dQ^T's B
            ("W", HI1),  # staging
            ("tmastart", HI1, t)]


def programs(c0, c1, tiles):
    return [sum((c0(t) for t in range(tiles)), []) + [("tmaend", HI0, tiles - 1)],
            sum((c1(t) for t in range(tiles)), []) + [("tmaend", HI1, tiles - 1)]]


def check(prog):
    bars = sorted({e[1] for p in prog for e in p if e[0] in ("arrive", "sync")})
    end = (len(prog[0]), len(prog[1]))
    problems = []
    seen, stack = set(), [((0, 0), tuple((0, 0) for _ in bars))]
    while stack:
        pcs, bst = stack.pop()
        if (pcs, bst) in seen:
            continue
        seen.add((pcs, bst))
        moved = False
        for c in (0, 1):
            if pcs[c] >= end[c]:
                continue
            e = prog[c][pcs[c]]
            b2 = list(bst)
            if e[0] in ("arrive", "sync"):
                i = bars.index(e[1])
                got = list(b2[i])
                if got[c]:
                    problems.append(f"overrun: consumer {c} at {e}")
                    continue
                if e[0] == "sync" and not got[1 - c]:
                    continue  # waits for the other consumer's arrive
                got[c] = 1
                b2[i] = (0, 0) if got == [1, 1] else tuple(got)
            npcs = list(pcs)
            npcs[c] += 1
            stack.append((tuple(npcs), tuple(b2)))
            moved = True
        if not moved and pcs != end:
            problems.append(f"deadlock at {pcs}")
    if problems:
        return sorted(set(problems))[:3]
    succ = {(c, i): set() for c in (0, 1) for i in range(end[c])}
    for c in (0, 1):
        for i in range(end[c] - 1):
            succ[(c, i)].add((c, i + 1))
    for b in bars:
        ops = [[i for i, e in enumerate(prog[c]) if e[0] in ("arrive", "sync") and e[1] == b] for c in (0, 1)]
        if len(ops[0]) != len(ops[1]):
            return [f"barrier {b}: {len(ops[0])} vs {len(ops[1])} uses"]
        for k in range(len(ops[0])):
            for c in (0, 1):
                a, s = ops[c][k], ops[1 - c][k]
                if prog[c][a][0] == "arrive" and prog[1 - c][s][0] == "sync":
                    succ[(c, a)].add((1 - c, min(s + 1, end[1 - c] - 1)))
    reach = {}

    def hb(x, y):
        if x not in reach:
            r, st = set(), [x]
            while st:
                for z in succ[st.pop()]:
                    if z not in r:
                        r.add(z)
                        st.append(z)
            reach[x] = r
        return y in reach[x]

    acc = []
    for c in (0, 1):
        starts = {}
        for i, e in enumerate(prog[c]):
            if e[0] in ("R", "W"):
                acc.append((c, i, i, e[1], e[0]))
            elif e[0] == "tmastart":
                starts[(e[1], e[2])] = i
            elif e[0] == "tmaend" and e[2] >= 0:
                acc.append((c, starts[(e[1], e[2])], i, e[1], "R"))
    races = [f"unordered: consumer 0 {x[4]} {x[3]} (event {x[1]}) / consumer 1 {y[4]} {y[3]} (event {y[1]})"
             for x in acc for y in acc
             if x[0] == 0 and y[0] == 1 and x[3] == y[3] and "W" in (x[4], y[4]) and
             not (hb((0, x[2]), (1, y[1])) or hb((1, y[2]), (0, x[1])))]
    return races[:3]


def main():
    tiles = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    ok = True
    problems = check(programs(consumer0, consumer1, tiles))
    print(f"roles protocol, {tiles} tiles: {'OK' if not problems else problems}")
    ok &= not problems

    def drop(seq, ev):
        return [e for e in seq if e != ev]
    broken = {
        "consumer 0 stores P without waiting kBarLoFree":
            (lambda t: drop(consumer0(t), ("sync", "LoFree")), lambda t: drop(consumer1(t), ("arrive", "LoFree"))),
        "consumer 0's bulk wait after its kBarPReady arrive":
            (lambda t: drop(consumer0(t), ("tmaend", HI0, t - 1))[:4] + [("tmaend", HI0, t - 1)] +
             drop(consumer0(t), ("tmaend", HI0, t - 1))[4:], consumer1),
        "consumer 1 arrives kBarDsReady before its dS stores":
            (consumer0, lambda t: consumer1(t)[:4] + [("arrive", "DsReady")] +
             [e for e in consumer1(t)[4:] if e != ("arrive", "DsReady")]),
    }
    for name, (c0, c1) in broken.items():
        problems = check(programs(c0, c1, tiles))
        print(f"broken variant ({name}): {'caught: ' + problems[0] if problems else 'NOT CAUGHT'}")
        ok &= bool(problems)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
