#!/usr/bin/env python3
"""Session 50 (no device): how torch-cudnn's time against the in-binary cuDNN 9.14's moved between session 16's call A
(peers.py without the launch hold) and session 49's call M on the H200 (with the hold, since session 44), from the
committed results files. Both calls ran PyTorch 2.11's cuDNN 9.19 for torch-cudnn and the device image's 9.14 in
flashbench for cudnn, on the papers' bf16 16k-token grid; flash-sm90 beside them as a third reading.

    python3 results/h200/s50/hold-shift/hold_shift.py results/h200/s50/hold-shift/hold-shift.json \
        > results/h200/s50/hold-shift/hold-shift.txt

Per row: T(torch-cudnn) / T(cudnn) in s16 and in s49 (a time ratio: below 1 = torch-cudnn faster), the shift
(s49 / s16), and T(flash-sm90) / T(cudnn) in both calls (whether flashbench's side moved). Times: each call's median
per rep, the geometric mean over the runs of the call (s16: two flashbench runs 1-sys, 3-sys under 9.14 and one
peers run; s49: two rounds of each). Then the geomean shift by pass and head dim, and each kernel's own time s49 / s16.
The same figures go to OUT.json when one is named. Neither cuDNN changed between the
calls (the image's 9.14, PyTorch's 9.19), so tc/cud can move only with the harnesses or the machine; flash-sm90's
kernels did change (sessions 17-49), so ours/cud mixes that in.
"""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RES = os.path.join(HERE, "..", "..")
S16 = os.path.join(RES, "s16", "callA", "cudnn919")
S49 = os.path.join(RES, "s49", "M")


def times(paths, kernel):
    """{case key: geomean over the files of the median ms} for kernel's ok records present in every file."""
    per = []
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        per.append({r["key"]: float(r["time_ms"]["median"]) for r in doc["results"]
                    if r["kernel"] == kernel and r["status"] == "ok"})
    keys = set.intersection(*(set(d) for d in per))
    return {k: math.exp(sum(math.log(d[k]) for d in per) / len(per)) for k in keys}


def gm(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main(argv):
    s16_sys = [os.path.join(S16, f) for f in ("1-sys.json", "3-sys.json")]
    s49_fb = [os.path.join(S49, f"fb-bf16-{r}.json") for r in (1, 2)]
    a = {"cud16": times(s16_sys, "cudnn"), "ours16": times(s16_sys, "flash-sm90"),
         "tc16": times([os.path.join(S16, "peers-torch.json")], "torch-cudnn"),
         "cud49": times(s49_fb, "cudnn"), "ours49": times(s49_fb, "flash-sm90"),
         "tc49": times([os.path.join(S49, f"peers-bf16-{r}.json") for r in (1, 2)], "torch-cudnn")}
    keys = sorted(set.intersection(*(set(d) for d in a.values())), key=lambda k: (k.split("-")[-1], k))
    print(f"{'case':42s} {'tc/cud s16':>10s} {'tc/cud s49':>10s} {'shift':>6s} {'ours/cud s16':>12s} "
          f"{'ours/cud s49':>12s}")
    groups, out = {}, {"sources": {"s16": os.path.relpath(S16, RES), "s49": os.path.relpath(S49, RES)},
                        "rows": {}, "groups": {}, "own_time_s49_over_s16": {}}
    for k in keys:
        r16, r49 = a["tc16"][k] / a["cud16"][k], a["tc49"][k] / a["cud49"][k]
        o16, o49 = a["ours16"][k] / a["cud16"][k], a["ours49"][k] / a["cud49"][k]
        print(f"{k:42s} {r16:10.3f} {r49:10.3f} {r49 / r16:6.3f} {o16:12.3f} {o49:12.3f}")
        out["rows"][k] = {"tc_over_cud_s16": r16, "tc_over_cud_s49": r49, "shift": r49 / r16,
                          "ours_over_cud_s16": o16, "ours_over_cud_s49": o49,
                          "cud_s49_over_s16": a["cud49"][k] / a["cud16"][k], "tc_s49_over_s16": a["tc49"][k] / a["tc16"][k],
                          "ours_s49_over_s16": a["ours49"][k] / a["ours16"][k]}
        d = k.split("-")[4]
        for g in (k.split("-")[-1], f"{k.split('-')[-1]} {d}"):
            groups.setdefault(g, []).append((r49 / r16, o49 / o16))
    print(f"\n{'group':10s} {'rows':>4s} {'shift tc/cud (gm, range)':>30s} {'shift ours/cud (gm)':>20s}")
    for g in sorted(groups):
        v = groups[g]
        s = [x for x, _ in v]
        print(f"{g:10s} {len(v):4d} {gm(s):12.3f} ({min(s):.3f}-{max(s):.3f}) {gm([y for _, y in v]):20.3f}")
        out["groups"][g] = {"rows": len(v), "shift_geomean": gm(s), "shift_min": min(s), "shift_max": max(s),
                            "ours_shift_geomean": gm([y for _, y in v])}
    # Which side moved: each kernel's own time in s49 over s16 (same code for both cuDNNs; ours changed).
    print(f"\n{'case':42s} {'cud49/16':>8s} {'tc49/16':>8s} {'ours49/16':>9s}   (time ratios: above 1 = slower in s49)")
    moves = {"cudnn": [], "torch-cudnn": [], "flash-sm90": []}
    for k in keys:
        c, tc, o = a["cud49"][k] / a["cud16"][k], a["tc49"][k] / a["tc16"][k], a["ours49"][k] / a["ours16"][k]
        moves["cudnn"].append(c)
        moves["torch-cudnn"].append(tc)
        moves["flash-sm90"].append(o)
        print(f"{k:42s} {c:8.3f} {tc:8.3f} {o:9.3f}")
    for kern, v in moves.items():
        print(f"{kern:12s} s49 / s16 time: geomean {gm(v):.3f} ({min(v):.3f}-{max(v):.3f}), slower in s49 at "
              f"{sum(x > 1 for x in v)} of {len(v)} rows")
        out["own_time_s49_over_s16"][kern] = {"geomean": gm(v), "min": min(v), "max": max(v),
                                              "slower_rows": sum(x > 1 for x in v), "rows": len(v)}
    if argv:
        with open(argv[0], "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
