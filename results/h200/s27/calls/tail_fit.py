#!/usr/bin/env python3
"""Session 27's call A (session 26's prepared call K): the portable backward's non-causal GQA passes at d = 128,
the shipped pick (`ship`), the whole group with its last wave under the tail split (`whole`) and without it
(`notail`), against the head-split model's step counts (common/head_split.h: blocks of 128 keys, steps of 64 query
rows, 132 SMs, 4 steps a block or unit; the tail split as model_tail_split_choice). Per shape: each setting's time
over its modelled steps (us a step), and the tail's cost in steps at the split's rate.

    python3 tail_fit.py DIR   (DIR: {ship,whole,notail}-SPEC-{1,2}.json)
"""
import glob
import json
import math
import os
import re
import sys

d = sys.argv[1]
SMS, O = 132, 4.0


def t(v, s):
    out = []
    for r in (1, 2):
        try:
            rs = json.load(open(f"{d}/{v}-{s}-{r}.json"))["results"]
        except (OSError, ValueError, KeyError):
            return None
        x = [x["time_ms"]["median"] for x in rs if x.get("status") == "ok" and x.get("verified") is True]
        if not x:
            return None
        out.append(1000 * x[0])
    return sum(out) / 2


def tail_split(nb, tiles, heads, mx=16, min_gain=0.01):
    tail = nb % SMS
    if tail == 0:
        return 1, 0.0
    steps = tiles * heads
    best, bt = 1, steps + O
    for s in range(2, min(mx, steps) + 1):
        tt = math.ceil(tail * s / SMS) * (steps / s + O)
        if tt < bt:
            best, bt = s, tt
    return (best, bt) if bt <= (1 - min_gain) * (steps + O) else (1, steps + O)


def ship_split(kt, planes, g, qt):
    if kt * planes >= 8 * SMS:
        return 1, None
    ms = lambda s: math.ceil(kt * planes * s / SMS) * (qt * g / s + O)
    plain = ms(1)
    sp = [(s, ms(s)) for s in range(2, min(g, 8) + 1) if g % s == 0]
    fast = min([plain] + [x for _, x in sp])
    best = 1
    for s, x in sp:
        if x <= 1.05 * fast and x <= 0.95 * plain:
            best = s
    return best, dict(sp).get(best, plain)


specs = sorted({m.group(1) for f in glob.glob(d + "/ship-*-1.json") if (m := re.match(r"ship-(.*)-1\.json$", os.path.basename(f)))})
print("shape: blocks, whole waves W, tail blocks, group g; split picked S (modelled steps, us/step); whole with tail "
      "split T units (modelled steps, us/step); notail us/step; tail's excess over the model in steps at the split's rate")
for s in specs:
    b, h, kv, n = map(int, re.search(r"b(\d+)-h(\d+)-kv(\d+)-n(\d+)", s).groups())
    kt, g, qt = math.ceil(n / 128), h // kv, math.ceil(n / 64)
    nb = kt * b * kv
    W = nb // SMS
    S, tt = tail_split(nb, qt, g)
    whole_model = W * (qt * g + O) + tt
    sp, sm = ship_split(kt, b * kv, g, qt)
    sh, wh, nt = t("ship", s), t("whole", s), t("notail", s)
    if not (sh and wh and nt):
        print(f"{s}: incomplete")
        continue
    c = sh / sm
    print(f"{s:30s} nb {nb:4d} W {W} tail {nb % SMS:3d} g {g:2d} | S {sp} {sm:6.0f} {c:.3f} | T {S:2d} {whole_model:6.0f} "
          f"{wh / whole_model:.3f} | notail {nt / ((W + 1) * (qt * g + O)):.3f} | excess {wh / c - whole_model:5.0f}")
