#!/usr/bin/env python3
"""Speed ratios of one kernel against a peer, case by case, from flashbench results files.

    python3 scripts/ratios.py RESULTS.json [MORE.json ...] --pair flash-sm90:torch-cudnn [--pair A:B ...]
                              [--markdown]

Each --pair OURS:PEER names two kernels (`kernel` of the records: flashbench's own, a plug-in's, or a
peers.py backend such as torch-cudnn, torch-flash). For every case both ran with status ok, the ratio is
PEER's median time / OURS's median time: above 1.0, OURS is faster. The files are read together (a sweep
and its peers file, or one `flashbench merge` of them); the same kernel on the same case in two files is
refused, because which one to use would be a guess. A ratio is only as fair as the two timings: give files
from one device call.

A case where OURS did not pass verification (verified: false) gets no ratio: it is listed, and kept out of
the summary, so a fast wrong kernel never improves a figure. A case nobody verified (verified: null) is
counted, and the summary says how many there were.

Output: one row per case, then per pair, pass and dtype: n, min, max, geometric mean, how many cases are at
>= 1.0x, and the worst case. --markdown writes the same as Markdown tables for a README.

Bad input (a missing or malformed file, a --pair that is not OURS:PEER or names a kernel no file has) gets
one line naming it on stderr and exit status 2, with nothing on stdout.
"""

import argparse
import math
import sys

import fbresults


class UsageError(Exception):
    pass


def parse_pair(text):
    ours, sep, peer = text.partition(":")
    if not sep or not ours or not peer or ":" in peer:
        raise UsageError(f"--pair: '{text}' is not OURS:PEER (two kernel names, e.g. flash-sm90:torch-cudnn)")
    if ours == peer:
        raise UsageError(f"--pair: '{text}' compares a kernel with itself")
    return ours, peer


def index(paths):
    """{key: {kernel: record}} over all files, and {key: case}; refuses a (key, kernel) seen twice."""
    by_key, cases, seen = {}, {}, {}
    for path in paths:
        for r in fbresults.load_results(path)["results"]:
            where = (r["key"], r["kernel"])
            if where in seen:
                raise UsageError(f"{path}: {r['kernel']} on {r['key']} is also in {seen[where]} "
                                 "(give each kernel's result once)")
            seen[where] = path
            by_key.setdefault(r["key"], {})[r["kernel"]] = r
            cases[r["key"]] = r["case"]
    return by_key, cases


def case_order(case):
    return (case["pass"], case["dtype"], case["head_dim"], case["causal"], case["seq_q"], case["seq_k"],
            case["batch"], case["heads"], case["kv_heads"])


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def compute(by_key, cases, pairs):
    """Rows (pair, key, ratio or None, note) and summaries {(pair, pass, dtype): [(ratio, key, checked)]}."""
    rows, groups = [], {}
    for pair in pairs:
        ours_name, peer_name = pair
        for key in sorted(by_key, key=lambda k: case_order(cases[k])):
            ours, peer = by_key[key].get(ours_name), by_key[key].get(peer_name)
            if not ours or not peer or ours["status"] != "ok" or peer["status"] != "ok":
                continue
            if ours["verified"] is False:
                rows.append((pair, key, None, "not verified: no ratio"))
                continue
            t_ours, t_peer = ours["time_ms"]["median"], peer["time_ms"]["median"]
            if not (t_ours > 0 and t_peer > 0 and math.isfinite(t_ours) and math.isfinite(t_peer)):
                rows.append((pair, key, None, "no finite time"))
                continue
            ratio = t_peer / t_ours
            checked = ours["verified"] is True
            rows.append((pair, key, ratio, "" if checked else "unverified (not checked)"))
            case = cases[key]
            groups.setdefault((pair, case["pass"], case["dtype"]), []).append((ratio, key, checked))
    return rows, groups


def summary_line(values):
    ratios = [v[0] for v in values]
    worst = min(values)
    return {"n": len(ratios), "min": min(ratios), "max": max(ratios), "geomean": geomean(ratios),
            "ahead": sum(r >= 1.0 for r in ratios), "worst": worst[1],
            "unchecked": sum(not v[2] for v in values)}


def render(rows, groups, pairs, markdown):
    out = []
    for pair in pairs:
        label = f"{pair[0]} vs {pair[1]}"
        pair_rows = [r for r in rows if r[0] == pair]
        if markdown:
            out += [f"### {label} (time of {pair[1]} / time of {pair[0]})", "",
                    "| case | ratio | note |", "|---|---|---|"]
            out += [f"| {key} | {'—' if ratio is None else f'{ratio:.3f}×'} | {note} |"
                    for _, key, ratio, note in pair_rows]
            out.append("")
        else:
            out.append(f"{label} (time of {pair[1]} / time of {pair[0]}; above 1.0: {pair[0]} is faster)")
            out += [f"  {key:48s} {'-' if ratio is None else f'{ratio:.3f}':>7s}  {note}".rstrip()
                    for _, key, ratio, note in pair_rows]
            if not pair_rows:
                out.append("  (no case where both ran)")
    if markdown:
        out += ["| pair | pass | dtype | n | min | max | geomean | >= 1.0 | worst case |",
                "|---|---|---|---|---|---|---|---|---|"]
    else:
        out.append("summary:")
    for (pair, pass_, dtype), values in sorted(groups.items(), key=lambda g: (pairs.index(g[0][0]), fbresults.PASSES.index(g[0][1]),
                                                                    fbresults.DTYPES.index(g[0][2]))):
        s = summary_line(values)
        extra = f", {s['unchecked']} not verified" if s["unchecked"] else ""
        if markdown:
            out.append(f"| {pair[0]} vs {pair[1]} | {pass_} | {dtype} | {s['n']} | {s['min']:.2f}× | "
                       f"{s['max']:.2f}× | {s['geomean']:.3f} | {s['ahead']} of {s['n']}{extra} | {s['worst']} |")
        else:
            out.append(f"  {pair[0]} vs {pair[1]} {pass_} {dtype}: {s['min']:.3f}–{s['max']:.3f}x, geomean "
                       f"{s['geomean']:.3f}, >= 1.0 in {s['ahead']} of {s['n']}{extra}; worst {s['worst']}")
    excluded = [r for r in rows if r[2] is None]
    if excluded:
        out.append(f"left out of the summary: {len(excluded)} case(s) "
                   "(not verified, or no finite time; listed above)")
    return "\n".join(out) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", help="flashbench results files (a sweep and its peers)")
    ap.add_argument("--pair", action="append", required=True, metavar="OURS:PEER",
                    help="two kernel names; repeat for more pairs")
    ap.add_argument("--markdown", action="store_true", help="Markdown tables")
    args = ap.parse_args(argv)
    try:
        pairs = [parse_pair(p) for p in args.pair]
        by_key, cases = index(args.files)
        kernels = {k for recs in by_key.values() for k in recs}
        for pair in pairs:
            for name in pair:
                if name not in kernels:
                    raise UsageError(f"--pair: no file has results of kernel '{name}' "
                                     f"(they have: {', '.join(sorted(kernels))})")
        rows, groups = compute(by_key, cases, pairs)
    except (UsageError, fbresults.ResultsError) as e:
        print(f"ratios.py: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(render(rows, groups, pairs, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
