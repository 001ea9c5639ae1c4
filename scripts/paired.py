#!/usr/bin/env python3
"""A kernel against a peer rep by rep, from files whose reps were interleaved (peers.py --interleave, flashbench run
--interleave), with a confidence interval for each case's ratio.

    python3 scripts/paired.py PEERS.json [MORE.json ...] --pair flash_sm90:torch-cudnn [--pair A:B ...]
                              [--json OUT.json] [--markdown]

Interleaved, rep r of every kernel of a case runs in round r, next to the others' rep r, so the pair (PEER's
rep r, OURS's rep r) saw the same state of the GPU (clock, heat) up to one round: the ratio PEER rep / OURS rep is a
paired sample (above 1.0, OURS faster). The files are pooled (two rounds of one grid from one device call, say): per
case and pair, n paired samples, their median, and a distribution-free 95% interval for that median from the order
statistics (the pair ratios are not assumed normal: the k-th smallest and k-th largest, k the largest with
P(Binomial(n, 1/2) < k) <= 2.5%; at least 6 pairs are needed for one). A case is `ahead` where the interval lies above
1.0, `behind` where it lies below, `level` where it holds 1.0, `few` under 6 pairs. A case where OURS failed
verification (verified: false) gets no ratio and is listed. Only interleaved files are read: a file without
settings.rep_order "interleaved" (back-to-back reps) is refused, since its reps of two kernels were not taken side by
side. A pair's two kernels must come from the same files (one process's rounds).

Output: one row per case (n, median, interval, verdict), then per pair the count of each verdict and the cases behind.
--json writes the same figures; --markdown prints the rows as a Markdown table. Bad input gets one line on stderr
naming the file or flag and exit status 2, with nothing written.
"""

import argparse
import json
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fbresults  # noqa: E402
from ratios import UsageError, parse_pair  # noqa: E402  (--pair as ratios.py reads it)

PROG = "paired.py"
CONFIDENCE_TAIL = 0.025  # each side of the 95% interval
MIN_PAIRS = 6  # the fewest pairs whose order statistics give a 95% interval (2 * 0.5^6 = 3.1% > 5% fails at 5)


def interval_rank(n):
    """k (1-based) such that the k-th smallest and k-th largest of n samples bound a >= 95% interval for their median:
    the largest k with P(Binomial(n, 1/2) <= k - 1) <= CONFIDENCE_TAIL; 0 where no k does (n < MIN_PAIRS)."""
    k, below = 0, 0.0
    for i in range(n + 1):
        below += math.comb(n, i) / 2.0 ** n  # P(X <= i)
        if below > CONFIDENCE_TAIL:
            break
        k = i + 1
    return k


def case_stats(ratios):
    """{n, median, low, high, verdict} of one case's paired ratios."""
    n = len(ratios)
    out = {"n": n, "median": statistics.median(ratios) if ratios else None, "low": None, "high": None}
    k = interval_rank(n)
    if k == 0:
        out["verdict"] = "few"
        return out
    s = sorted(ratios)
    out["low"], out["high"] = s[k - 1], s[n - k]
    out["verdict"] = "ahead" if out["low"] > 1.0 else "behind" if out["high"] < 1.0 else "level"
    return out


def load(paths):
    """{key: {kernel: [record, ...]}} over the files (each a file with interleaved reps) and {key: case}."""
    by_key, cases = {}, {}
    for path in paths:
        doc = fbresults.load_results(path)
        order = (doc.get("settings") or {}).get("rep_order")
        if order != "interleaved":
            raise UsageError(f"{path}: not a file with interleaved reps (settings.rep_order is {order!r}): paired "
                             f"ratios need each case's reps taken in turn (peers.py --interleave, flashbench run "
                             f"--interleave)")
        for r in doc["results"]:
            by_key.setdefault(r["key"], {}).setdefault(r["kernel"], []).append(r)
            cases[r["key"]] = r["case"]
    return by_key, cases


def paired_ratios(ours_recs, peer_recs):
    """The paired ratios of one case over the files (the files' records in the same order for both kernels), or None
    where OURS failed verification in any; records not ok or without samples add nothing."""
    ratios = []
    for o, p in zip(ours_recs, peer_recs):
        if o.get("verified") is False:
            return None
        if o.get("status") != "ok" or p.get("status") != "ok":
            continue
        so, sp = (o.get("time_ms") or {}).get("samples") or [], (p.get("time_ms") or {}).get("samples") or []
        ratios += [b / a for a, b in zip(so, sp) if a and b and a > 0 and b > 0]
    return ratios


def analyse(paths, pairs):
    by_key, cases = load(paths)
    names = {k for recs in by_key.values() for k in recs}
    for pair in pairs:
        for name in pair:
            if name not in names:
                raise UsageError(f"--pair {pair[0]}:{pair[1]}: no record of kernel '{name}' in the files "
                                 f"(kernels: {', '.join(sorted(names))})")
    out = {}
    for ours, peer in pairs:
        rows, unverified = {}, []
        for key in sorted(by_key):
            recs = by_key[key]
            if ours not in recs or peer not in recs:
                continue
            ratios = paired_ratios(recs[ours], recs[peer])
            if ratios is None:
                unverified.append(key)
                continue
            if ratios:
                rows[key] = case_stats(ratios)
        counts = {v: sum(1 for s in rows.values() if s["verdict"] == v) for v in ("ahead", "level", "behind", "few")}
        out[f"{ours}:{peer}"] = {"rows": rows, "counts": counts, "not_verified": unverified,
                                 "behind": sorted(k for k, s in rows.items() if s["verdict"] == "behind")}
    return out


def fmt(x):
    return "-" if x is None else f"{x:.3f}"


def print_table(result, markdown):
    for pair, v in result.items():
        if markdown:
            print(f"\n{pair} (peer rep / ours, paired; 95% interval for the median):\n")
            print("| case | n | median | interval | verdict |")
            print("|---|---|---|---|---|")
        else:
            print(f"{pair}: peer rep / ours, paired")
        for key, s in v["rows"].items():
            if markdown:
                print(f"| {key} | {s['n']} | {fmt(s['median'])} | {fmt(s['low'])}-{fmt(s['high'])} | {s['verdict']} |")
            else:
                print(f"  {key:48s} n {s['n']:3d}  median {fmt(s['median'])}  [{fmt(s['low'])}, {fmt(s['high'])}]  "
                      f"{s['verdict']}")
        c = v["counts"]
        print(f"{pair}: ahead {c['ahead']}, level {c['level']}, behind {c['behind']}, too few pairs {c['few']}; "
              f"behind: {', '.join(v['behind']) or 'none'}"
              + (f"; not verified (no ratio): {', '.join(v['not_verified'])}" if v["not_verified"] else ""))


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="peers.py results files timed with --interleave")
    ap.add_argument("--pair", action="append", required=True, metavar="OURS:PEER",
                    help="the kernel and its peer (record names, e.g. flash_sm90:torch-cudnn); repeatable")
    ap.add_argument("--json", metavar="OUT", help="write the figures here as JSON")
    ap.add_argument("--markdown", action="store_true", help="the rows as Markdown tables")
    args = ap.parse_args(argv)
    try:
        pairs = [parse_pair(p) for p in args.pair]
        if args.json and (os.path.isdir(args.json) or not os.path.isdir(os.path.dirname(args.json) or ".")):
            raise UsageError(f"--json {args.json}: not a file path in an existing folder")
        result = analyse(args.files, pairs)
    except (UsageError, fbresults.ResultsError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    print_table(result, args.markdown)
    if args.json:
        fbresults.write_atomic(args.json, json.dumps({"files": args.files, "pairs": result}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
