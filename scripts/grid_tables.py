#!/usr/bin/env python3
"""Markdown tables of a sweep beside its peers over interleaved rounds: the README's H200 tables.

    python3 scripts/grid_tables.py --round OURS1.json PEERS1.json [--round OURS2.json PEERS2.json ...]
                                   --lead flash-sm90 --kernels flash-sm90,cudnn,torch-cudnn,flash,torch-flash
                                   --pair flash-sm90:torch-cudnn [--pair flash:torch-flash ...]

One table per (pass, dtype, head dim, mask), one row per (batch, heads, kv_heads, seq_q, seq_k), in the order
scripts/ratios.py uses, labelled by the case key (--by-seq: by N). Columns: the lead kernel's time (ms), every
--kernels kernel's TFLOP/s, and every --pair's ratio (PEER's time / OURS's: above 1, OURS is faster). Over rounds
(--round, as in ratios.py: each names one round's files, a sweep and its peers run in turn in one device call), a
kernel's time is the geometric mean of its rounds' medians and its TFLOP/s the case's FLOP count over that time; a
ratio is then the geometric mean of the rounds' ratios (the same number). A cell is "—" where the kernel has no ok
result in some round, or failed verification in any (a wrong kernel never gets a figure); a ratio needs both kernels'
figures. Rows with no figure at all are left out. A table's heading names its group; the caller writes the prose
around it.

Bad input (a missing or malformed file, a kernel no file has, a pair that is not OURS:PEER, the same kernel's result
on a case twice in one round) gets one line naming it on stderr and exit status 2, with nothing on stdout.
"""

import argparse
import math
import sys

import fbresults
import ratios


def time_of(records):
    """Geometric mean of the rounds' median times of one kernel on one case ({round: record}), or None."""
    times = []
    for r in records:
        if r is None or r["status"] != "ok" or r["verified"] is False:
            return None
        t = r["time_ms"]["median"]
        if not (t > 0 and math.isfinite(t)):
            return None
        times.append(t)
    return ratios.geomean(times) if times else None


def tables(round_files, lead, kernels, pairs, by_seq=False):
    rounds, cases = [], {}
    for files in round_files:
        by_key, round_cases = ratios.index(files)
        rounds.append(by_key)
        cases.update(round_cases)
    have = {k for by_key in rounds for recs in by_key.values() for k in recs}
    names = list(dict.fromkeys([lead] + kernels + [n for p in pairs for n in p]))
    for name in names:
        if name not in have:
            raise ratios.UsageError(f"no file has results of kernel '{name}' (they have: {', '.join(sorted(have))})")
    groups = {}
    for key in sorted(cases, key=lambda k: ratios.case_order(cases[k])):
        c = cases[key]
        groups.setdefault((c["pass"], c["dtype"], c["head_dim"], c["causal"]), []).append(key)
    out = []
    for (pass_, dtype, head_dim, causal), keys in groups.items():
        head = ["N" if by_seq else "case", f"{lead} ms"]
        head += [f"{k} TFLOP/s" for k in kernels] + [f"{a} vs {b}" for a, b in pairs]
        rows = []
        for key in keys:
            recs = {k: [by_key.get(key, {}).get(k) for by_key in rounds] for k in names}
            t = {k: time_of(v) for k, v in recs.items()}
            if all(v is None for v in t.values()):
                continue
            c = cases[key]
            label = key if not by_seq else f"{c['seq_q']}" + (f" × {c['seq_k']}" if c["seq_k"] != c["seq_q"] else "")
            cells = [label, f"{t[lead]:.3f}" if t[lead] else "—"]
            cells += [f"{recs[k][0]['flops'] / (t[k] * 1e-3) / 1e12:.0f}" if t[k] else "—" for k in kernels]
            cells += [f"{t[b] / t[a]:.3f}×" if t[a] and t[b] else "—" for a, b in pairs]
            rows.append(cells)
        if not rows:
            continue
        mask = "causal" if causal else "non-causal"
        out.append(f"{pass_}, {dtype}, head dim {head_dim}, {mask} ({len(round_files)} round(s)):")
        out.append("")
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        out.extend("| " + " | ".join(r) + " |" for r in rows)
        out.append("")
    return "\n".join(out)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--round", action="append", nargs="+", metavar="FILE", dest="rounds", required=True,
                    help="one round's results files (a sweep and its peers); repeat once per round")
    ap.add_argument("--lead", required=True, help="the kernel whose time (ms) the tables show")
    ap.add_argument("--kernels", required=True, help="comma-separated kernels whose TFLOP/s the tables show")
    ap.add_argument("--pair", action="append", default=[], metavar="OURS:PEER", help="a ratio column; repeat")
    ap.add_argument("--by-seq", action="store_true",
                    help="label rows by N (seq_q, or seq_q x seq_k) instead of the case key: for sweeps whose groups "
                         "vary in seq only (batch and heads following N, as tokens / model_dim specs do)")
    args = ap.parse_args(argv)
    try:
        pairs = [ratios.parse_pair(p) for p in args.pair]
        kernels = [k for k in args.kernels.split(",") if k]
        if not kernels:
            raise ratios.UsageError("--kernels: no kernel named")
        text = tables(args.rounds, args.lead, kernels, pairs, args.by_seq)
    except (ratios.UsageError, fbresults.ResultsError) as e:
        print(f"grid_tables.py: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(text + ("\n" if text and not text.endswith("\n") else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
