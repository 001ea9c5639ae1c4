#!/usr/bin/env python3
"""Session 29 (session 28's late_table.py for any kernel and peer): one kernel under probe variants against a base
run, case by case and round by round (base time / variant time: above 1, the variant is faster), the rows' geomeans
over the rounds by class (non-causal / causal), the pre-registered rule's verdict, and each against the peer from the
peers' runs. Only verified rows count.

    python3 ab_table.py DIR KERNEL PEER BASE VARIANT...   (e.g. DIR flash-sm90 torch-cudnn def fastlse128; DIR holds
                                                          BASE-SPEC-R.json, VARIANT-SPEC-R.json, peers-SPEC.json)
"""
import glob
import json
import math
import os
import re
import sys

if len(sys.argv) < 6:
    sys.exit("usage: ab_table.py DIR KERNEL PEER BASE VARIANT...")
d, KERNEL, PEER, BASE, *VARIANTS = sys.argv[1:]


def times(path, kernel=KERNEL):
    try:
        rs = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError):
        return {}
    ok = (lambda r: r.get("verified") is True) if kernel == KERNEL else (lambda r: True)  # peers: verified null
    return {r["key"]: r["time_ms"]["median"] for r in rs
            if r.get("kernel") == kernel and r.get("status") == "ok" and ok(r)}


def gm(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


files = glob.glob(os.path.join(d, f"{BASE}-*-*.json"))
rounds = sorted({int(re.search(r"-(\d+)\.json$", f).group(1)) for f in files})
specs = sorted({re.sub(rf"^{BASE}-|-\d+\.json$", "", os.path.basename(f)) for f in files})
ratio = {v: {} for v in VARIANTS}
tdef, tvar = {}, {v: {} for v in VARIANTS}
for s in specs:
    for r in rounds:
        a = times(os.path.join(d, f"{BASE}-{s}-{r}.json"))
        for k, t in a.items():
            tdef.setdefault(k, []).append(t)
        for v in VARIANTS:
            b = times(os.path.join(d, f"{v}-{s}-{r}.json"))
            for k, t in b.items():
                tvar[v].setdefault(k, []).append(t)
                if k in a:
                    ratio[v].setdefault(k, {})[r] = a[k] / t
peer = {}
for f in glob.glob(os.path.join(d, "peers-*.json")):
    peer.update(times(f, PEER))

keys = sorted(set().union(*[ratio[v].keys() for v in VARIANTS]),
              key=lambda k: ("-causal-" in k, int(re.search(r"-n(\d+)-", k).group(1)), k))
print(f"{BASE} time / variant time (above 1: the variant faster), rounds " + " / ".join(map(str, rounds)) +
      f" and their geomean; {PEER} time / time (median over rounds) for {BASE} and each variant")
print(f"{'case':42s} " + " ".join(f"{v + ' by round':>24s} {'gm':>6s}" for v in VARIANTS) +
      f" {'pr/' + BASE[:5]:>8s} " + " ".join(f"{'pr/' + v[:6]:>9s}" for v in VARIANTS))
for k in keys:
    line = f"{k:42s} "
    for v in VARIANTS:
        rr = ratio[v].get(k, {})
        by_round = " ".join(f"{rr[r]:.3f}" if r in rr else "  -  " for r in rounds)
        line += f"{by_round:>24s} {gm(list(rr.values())):6.3f} "
    med = lambda xs: sorted(xs)[len(xs) // 2] if xs else float("nan")
    p = peer.get(k)
    line += f"{p / med(tdef.get(k, [])) if p else float('nan'):8.3f} "
    line += " ".join(f"{p / med(tvar[v].get(k, [])) if p else float('nan'):9.3f}" for v in VARIANTS)
    print(line)
print("\nrule (written before the call): a class (non-causal / causal) takes a variant if its rows' geomeans over the"
      " rounds have a geomean >= 1.005 and none is below 0.985; of two that pass, the higher geomean")
for v in VARIANTS:
    for cls, sel in (("non-causal", lambda k: "-causal-" not in k), ("causal", lambda k: "-causal-" in k)):
        g = [gm(list(ratio[v][k].values())) for k in keys if sel(k) and ratio[v].get(k)]
        if not g:
            continue
        verdict = "PASS" if gm(g) >= 1.005 and min(g) >= 0.985 else "fail"
        print(f"  {v:9s} {cls:11s} rows {len(g):3d}  geomean {gm(g):.4f}  range {min(g):.3f}-{max(g):.3f}  {verdict}")
