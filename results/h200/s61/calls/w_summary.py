#!/usr/bin/env python3
"""Call W's figures as JSON (callW.sh's folder, as extracted under results/):

    python3 w_summary.py DIR    (writes DIR/summary.json, prints a table)

check: how many of fb_torch's records peers.py verified, and any that it did not. peers-GRID-ROUND.json: per case and
pair, the median (us) of the peer (torch-cudnn, torch-flash, or a callable such as fb_torch's cudnn) and of ours
(fb_torch's flash_sm90 or flash: flashbench's kernel through the C API) in peers.py's loop, and peer / ours; per grid,
each round's range and geometric mean of the ratio and the cases at >= 1.0, and the ratio of the rounds'
geometric-mean times per case. fb-GRID.json: flash-sm90 and the in-binary cudnn in flashbench's loop, per case, for
the loops' gap (ours in flashbench / ours in peers.py; the in-binary cudnn / torch-cudnn, its range and geomean under
"loops"); "against_both": per row the worse of ours / torch-cudnn (over the rounds) and ours / the in-binary cudnn
(flashbench's loop), its range, geomean, count at >= 1.0 and the rows behind; "against_both_one_loop" (a torch-cudnn
pair beside a cudnn:OURS one, the callable on the cuDNN PyTorch loaded): the same of the worse of the two pairs' ratios
over the rounds, both from one loop. The pairs come from DIR/pairs.txt
(PEER:OURS record names; callW.sh writes it), else from the peers files' settings (backends, callables). One pair: a
grid's entry is named GRID; several: GRID/PEER:OURS.
"""
import glob
import json
import math
import os
import re
import sys


def load(path):
    try:
        return json.load(open(path))["results"]
    except (OSError, ValueError, KeyError):
        return []


def medians(records):
    out = {}
    for r in records:
        t = r.get("time_ms") or {}
        if r.get("status") == "ok" and t.get("median"):
            out.setdefault(r["key"], {})[r["kernel"]] = round(t["median"] * 1e3, 2)
    return out


def summary_of(xs):
    """{range, geomean, cases} of a list of ratios (None where empty)."""
    if not xs:
        return None
    return {"range": [round(min(xs), 3), round(max(xs), 3)], "geomean": round(geomean(xs), 3), "cases": len(xs)}


def ratio_stats(ratios):
    """{range, geomean, at_or_above_1, cases} of {case: ratio} (range and geomean None where empty)."""
    xs = list(ratios.values())
    s = summary_of(xs) or {"range": None, "geomean": None, "cases": 0}
    return {"range": s["range"], "geomean": s["geomean"], "at_or_above_1": sum(1 for x in xs if x >= 1.0),
            "cases": s["cases"]}


def time_over_rounds(rounds, key, kernel):
    """The geometric mean of kernel's medians at key over the rounds that have it (None if none)."""
    return geomean([r["us"][key][kernel] for r in rounds if kernel in r["us"].get(key, {})])


def names(path):
    """[(peer, ours), ...]: the file's PyTorch backends' record names paired in order with its callables' names (one
    backend: every callable against it)."""
    try:
        settings = json.load(open(path))["settings"]
        peers = [p if p.startswith("torch-") else "torch-" + p for p in settings["backends"]]
        ours = [c["name"] for c in settings["callables"]]
    except (OSError, ValueError, KeyError, TypeError):
        return [("torch-cudnn", "flash_sm90")]
    if len(peers) == 1:
        peers = peers * len(ours)
    if not ours or len(peers) != len(ours):
        raise SystemExit(f"w_summary: {path}: backends {peers} and callables {ours} do not pair")
    return list(zip(peers, ours))


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def main():
    d = sys.argv[1]
    chk = load(os.path.join(d, "check-results.json"))
    s = {"check": {"records": len(chk), "verified": sum(1 for r in chk if r.get("verified") is True),
                   "not_verified": [f"{r['key']} {r['kernel']} {r['status']} {r.get('reason', '')}"
                                    for r in chk if r.get("verified") is not True]},
         "grids": {}}
    # callW.sh's pairs (PEER:OURS record names), else each file's backends paired with its callables
    try:
        listed = [tuple(x.split(":", 1)) for x in open(os.path.join(d, "pairs.txt")).read().split()]
    except OSError:
        listed = []
    for path in sorted(glob.glob(os.path.join(d, "peers-*-[0-9].json"))):
        m = re.match(r"peers-(.+)-(\d)\.json$", os.path.basename(path))
        grid, rnd = m.group(1), m.group(2)
        all_rows = medians(load(path))
        pairs = listed or names(path)
        for peer, ours in pairs:
            rows = {k: {n: t for n, t in v.items() if n in (peer, ours)} for k, v in all_rows.items()}
            ratios = {k: round(v[peer] / v[ours], 3) for k, v in rows.items() if peer in v and ours in v}
            # One pair: the grid's name; several (PEER=cudnn,flash OURS=flash_sm90,flash): GRID/PEER:OURS.
            name = grid if len(pairs) == 1 else f"{grid}/{peer}:{ours}"
            g = s["grids"].setdefault(name, {"grid": grid, "peer": peer, "ours": ours, "rounds": {}})
            g["rounds"][rnd] = {"us": rows, "ratio": ratios, **ratio_stats(ratios)}
    for name, g in s["grids"].items():
        grid, peer, ours = g["grid"], g["peer"], g["ours"]
        rounds = list(g["rounds"].values())
        keys = set.intersection(*(set(r["ratio"]) for r in rounds)) if rounds else set()
        both = {k: round(time_over_rounds(rounds, k, peer) / time_over_rounds(rounds, k, ours), 3)
                for k in sorted(keys)}
        g["over_rounds"] = {"ratio": both, **ratio_stats(both),
                            "behind_every_round": sorted(k for k in keys if all(r["ratio"][k] < 1 for r in rounds))}
        fb = medians(load(os.path.join(d, f"fb-{grid}.json")))
        if fb:
            ours_peers = {k: time_over_rounds(rounds, k, ours) for k in fb}
            g["flashbench_loop"] = {k: {**v, f"{ours}_in_peers": round(ours_peers[k], 2) if ours_peers[k] else None}
                                    for k, v in fb.items()}
            # ours in flashbench's loop / ours in peers.py's, and the in-binary peer / PyTorch's (where there is one)
            fb_ours = ours.replace("_", "-")
            gap = [v[fb_ours] / ours_peers[k] for k, v in fb.items() if fb_ours in v and ours_peers[k]]
            peer_peers = {k: time_over_rounds(rounds, k, peer) for k in fb}
            # flashbench's own cudnn; "flash" in fb-*.json is ours, not FA2; a callable peer (fb:NAME) has none
            in_binary = peer[len("torch-"):] if peer.startswith("torch-") else fb_ours
            peer_gap = [v[in_binary] / peer_peers[k] for k, v in fb.items()
                        if in_binary != fb_ours and in_binary in v and peer_peers[k]]
            g["loops"] = {f"{fb_ours}_flashbench_over_peers": summary_of(gap)}
            if peer_gap:
                g["loops"][f"{in_binary}_in_binary_over_{peer}"] = summary_of(peer_gap)
                # The worse of ours' two readings a row: against torch-cudnn in peers.py's loop (over the rounds) and
                # against the in-binary cudnn in flashbench's (cuDNN's two builds pick different engines by shape).
                worse = {k: round(min(both[k], v[in_binary] / v[fb_ours]), 3) for k, v in fb.items()
                         if k in both and in_binary in v and fb_ours in v}
                g["against_both"] = {**ratio_stats(worse),
                                     "behind": {k: x for k, x in sorted(worse.items()) if x < 1.0}}
    # One loop, two cuDNN graphs (PEER=cudnn,fb:cudnn): per row the worse of ours against torch-cudnn and against
    # flashbench's graph, a callable in the same loop on the cuDNN PyTorch loaded (session 63).
    for g in s["grids"].values():
        if g["peer"] != "torch-cudnn":
            continue
        other = next((h for h in s["grids"].values() if h["grid"] == g["grid"] and h["peer"] == "cudnn" and
                      h["ours"] == g["ours"]), None)
        if other is None:
            continue
        a, b = g["over_rounds"]["ratio"], other["over_rounds"]["ratio"]
        worse = {k: min(a[k], b[k]) for k in a if k in b}
        g["against_both_one_loop"] = {**ratio_stats(worse),
                                      "behind": {k: x for k, x in sorted(worse.items()) if x < 1.0}}
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump(s, f, indent=1)
        f.write("\n")
    print("check:", s["check"]["verified"], "of", s["check"]["records"], "verified", s["check"]["not_verified"][:4])
    for grid, g in s["grids"].items():
        for rnd, r in sorted(g["rounds"].items()):
            print(f"{grid} round {rnd} ({g['peer']} / {g['ours']}): {r['range']} geomean {r['geomean']}, "
                  f">= 1 in {r['at_or_above_1']}/{r['cases']}")
        o = g["over_rounds"]
        if g.get("loops"):
            print(f"{grid} loops: {g['loops']}")
        if g.get("against_both"):
            print(f"{grid} against both cuDNNs: {g['against_both']}")
        if g.get("against_both_one_loop"):
            print(f"{grid} against both cuDNN graphs in one loop: {g['against_both_one_loop']}")
        print(f"{grid} over rounds: {o['range']} geomean {o['geomean']}, >= 1 in {o['at_or_above_1']}/{o['cases']}; "
              f"behind in every round: {o['behind_every_round']}")
        for k, v in sorted(o["ratio"].items()):
            print(f"   {k}: {v}")


if __name__ == "__main__":
    main()
