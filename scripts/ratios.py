#!/usr/bin/env python3
"""Speed ratios of one kernel against a peer, case by case, from flashbench results files.

    python3 scripts/ratios.py RESULTS.json [MORE.json ...] --pair flash-sm90:torch-cudnn [--pair A:B ...]
                              [--markdown]
    python3 scripts/ratios.py --round OURS1.json PEERS1.json --round OURS2.json PEERS2.json [--round ...]
                              --pair flash-sm90:torch-cudnn [--markdown]

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

Rounds (--round FILES..., repeated): the same sweep and its peers run several times in one device call, interleaved
(ours, peers, ours, peers), each --round naming one round's files. Clocks at the power cap and rep spread move a
single run's ratio by a few percent, so one reading just below 1.0 says little; two rounds that agree say more. A
case's ratio is then taken in each round from that round's files alone, and its combined ratio is the geometric
mean of those; a case needs a ratio in every round (one round without it, or with OURS failing verification, and it
gets none). Rows show every round's ratio, the combined one, and "behind in every round" where all are below 1.0;
the summary adds, per pass and dtype, how many cases are ahead (>= 1.0) in every round and how many behind in every
round: the cases a claim of ">= 1.0x everywhere" cannot make.

Where a ratio's two timings come from different settings, stderr says so and the table is printed all the same: a
round whose files name different L2 flushes (settings.l2_flush_mode: FB_L2_FLUSH, which flashbench and peers.py read
alike; "write" where a file does not say), and held peers files behind different launch holds (busy, spin).

A ratio whose timing drifted gets a note naming the side, round and drift ("reps drifted: flash-sm90 +9.9% in round
1"): where the median of the second half of its reps differs from the first half's by more than 3%
(fbresults.rep_drift, the rule `flashbench run`'s summary applies). Such a median depends on what the GPU ran just
before (session 55's call O, an H100: flash-sm90's reps climbed 19.0 -> 22.5 ms timed after the portable kernel's
backward, and stayed at 19.0-19.4 ms timed first). peers.py files before session 55 keep no reps: no note there.

Where a pair's two sides come from different files and stand in different places in their cases (flash-sm90 timed
second, after the portable flash, against torch-cudnn timed first), stderr says so for that round: each file's run
order is flashbench's --kernels (settings.overrides.kernels) or its spec's kernels, and peers.py's settings.backends
(the order --backends names them, then its callables). Where a kernel stands in its case moves long rows by several
percent (session 56's call K, an H100: 16 of 48 GQA rows by more than 3% between both sides second and both first),
so a fair round gives both the same place, and a table reads both places.

A peers.py file timed before its launch hold (session 44: settings without "launch_hold": true) is named on stderr:
there a peer's time can include PyTorch's host time wherever that outlasted its kernels (small backward rows), which
flatters OURS; the table is printed all the same.

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


def unheld(doc):
    """Whether a results document is a peers.py file (backend "torch") whose reps were not timed behind the launch
    hold (peers.py before session 44)."""
    return doc.get("backend") == "torch" and (doc.get("settings") or {}).get("launch_hold") is not True


def flush_mode(doc):
    """The L2 flush a results file was timed under: settings.l2_flush_mode ("write" or "clean": FB_L2_FLUSH, which
    flashbench and peers.py read alike), "write" where the file does not say (every file before session 54)."""
    return (doc.get("settings") or {}).get("l2_flush_mode") or "write"


def hold_of(doc):
    """A held peers.py file's launch hold ("busy" or "spin"; "spin" where a held file does not say: sessions 44-49),
    None for other files (flashbench's, and peers files timed without the hold, which unheld() names)."""
    s = doc.get("settings") or {}
    if doc.get("backend") != "torch" or s.get("launch_hold") is not True:
        return None
    return s.get("launch_hold_kind") or "spin"


def rep_order_of(doc):
    """How a peers.py file took its kernels' reps: "interleaved" (--interleave, session 64) or "blocked" (each
    kernel's back to back; files before session 64 do not say); None for other files (flashbench's)."""
    if doc.get("backend") != "torch":
        return None
    return (doc.get("settings") or {}).get("rep_order") or "blocked"


def setting_notes(round_docs):
    """Lines for stderr where a ratio's timings come from different settings (round_docs: per round, its files' (path,
    document) pairs as index() read them): a round whose files name different L2 flushes, held peers files whose
    launch holds differ, or peers files whose rep orders differ (the last two within a round or between rounds).
    Ratios are printed all the same; the note says what they mix."""
    notes, holds, orders = [], {}, {}
    for r, docs in enumerate(round_docs, 1):
        modes = {}
        for path, doc in docs:
            modes.setdefault(flush_mode(doc), []).append(path)
            hold = hold_of(doc)
            if hold:
                holds.setdefault(hold, []).append(path)
            order = rep_order_of(doc)
            if order:
                orders.setdefault(order, []).append(path)
        if len(modes) > 1:
            where = "; ".join(f"{m}: {', '.join(paths)}" for m, paths in sorted(modes.items()))
            notes.append(f"round {r}: the files were timed under different L2 flushes ({where}): their ratios mix "
                         "two timings")
    if len(holds) > 1:
        where = "; ".join(f"{h}: {', '.join(paths)}" for h, paths in sorted(holds.items()))
        notes.append(f"the peers files were timed behind different launch holds ({where})")
    if len(orders) > 1:
        where = "; ".join(f"{o}: {', '.join(paths)}" for o, paths in sorted(orders.items()))
        notes.append(f"the peers files took their reps in different orders ({where}): interleaved reps (--interleave) "
                     "share the GPU's drift between a case's kernels, back-to-back ones do not")
    return notes


def run_order(doc):
    """The kernels of a results file in the order each case timed them, or None where the file does not say:
    flashbench's --kernels (settings.overrides.kernels) or its spec's kernels; peers.py's settings.backends (in the
    order it timed them, since session 56 the order --backends names them, before that the registry's), then its
    callables."""
    s = doc.get("settings") or {}
    if doc.get("backend") == "torch":
        order = [b for b in s.get("backends") or [] if isinstance(b, str)]
        order += [c.get("name") for c in s.get("callables") or [] if isinstance(c, dict)]
        return order or None
    order = (s.get("overrides") or {}).get("kernels") or (doc.get("spec") or {}).get("kernels")
    return [k for k in order if isinstance(k, str)] if isinstance(order, list) else None


def ordinal(n):
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def place_notes(round_docs, pairs):
    """Lines for stderr, per round and pair, where OURS and PEER come from different files and stand in different
    places in their cases (run_order; a file that does not say is left out)."""
    notes = []
    for r, docs in enumerate(round_docs, 1):
        for pair in pairs:
            sides = []
            for name in pair:
                path, doc = next(((p, d) for p, d in docs if any(x["kernel"] == name for x in d["results"])),
                                 (None, None))
                order = run_order(doc) if doc else None
                sides.append((path, order.index(name) + 1 if order and name in order else None))
            (ours_path, ours_place), (peer_path, peer_place) = sides
            if ours_path == peer_path or None in (ours_place, peer_place) or ours_place == peer_place:
                continue
            notes.append(f"round {r}: {pair[0]} is timed {ordinal(ours_place)} in its cases ({ours_path}), "
                         f"{pair[1]} {ordinal(peer_place)} ({peer_path}): where a kernel stands in its case moves "
                         "long rows by several percent (session 56's call K); give both the same place")
    return notes


def index(paths, unheld_paths=None, docs=None):
    """{key: {kernel: record}} over all files, and {key: case}; refuses a (key, kernel) seen twice. unheld_paths (a
    list): gets the paths of peers files timed without the launch hold; docs (a list): each file's (path, document)."""
    by_key, cases, seen = {}, {}, {}
    for path in paths:
        doc = fbresults.load_results(path)
        if docs is not None:
            docs.append((path, doc))
        if unheld_paths is not None and unheld(doc):
            unheld_paths.append(path)
        for r in doc["results"]:
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


def case_ratio(records, pair):
    """(ratio or None, note, checked) of one case's records {kernel: record}; None as a whole where either
    kernel has no ok result there."""
    ours, peer = records.get(pair[0]), records.get(pair[1])
    if not ours or not peer or ours["status"] != "ok" or peer["status"] != "ok":
        return None
    if ours["verified"] is False:
        return None, "not verified: no ratio", False
    t_ours, t_peer = ours["time_ms"]["median"], peer["time_ms"]["median"]
    if not (t_ours > 0 and t_peer > 0 and math.isfinite(t_ours) and math.isfinite(t_peer)):
        return None, "no finite time", False
    checked = ours["verified"] is True
    return t_peer / t_ours, "" if checked else "unverified (not checked)", checked


def drift_note(rounds, key, pair):
    """'reps drifted: ...' naming each side and round whose reps trended beyond fbresults.DRIFT_WARN (rep_drift: the
    median of the second half of the reps over the first's), or ''. Such a median depends on what the GPU ran before
    it (session 55: flash-sm90 +10% timed after another kernel's backward on an H100, flat when timed first)."""
    found = []
    for r, by_key in enumerate(rounds, 1):
        for kernel in pair:
            rec = by_key.get(key, {}).get(kernel)
            d = fbresults.rep_drift(rec["time_ms"].get("samples", [])) if rec and rec["status"] == "ok" else math.nan
            if math.isfinite(d) and abs(d) > fbresults.DRIFT_WARN:
                found.append(f"{kernel} {d * 100:+.1f}%" + (f" in round {r}" if len(rounds) > 1 else ""))
    return "reps drifted: " + ", ".join(found) if found else ""


def compute(rounds, cases, pairs):
    """rounds: one {key: {kernel: record}} per round. Rows (pair, key, combined ratio or None, note, per-round
    ratios) and summaries {(pair, pass, dtype): [(ratio, key, checked, per-round ratios)]}."""
    rows, groups = [], {}
    keys = sorted({k for by_key in rounds for k in by_key}, key=lambda k: case_order(cases[k]))
    for pair in pairs:
        for key in keys:
            found = [case_ratio(by_key.get(key, {}), pair) for by_key in rounds]
            if all(f is None for f in found):
                continue
            missing = [i + 1 for i, f in enumerate(found) if f is None]
            if missing:
                rows.append((pair, key, None, f"no result in round {', '.join(map(str, missing))}", []))
                continue
            per_round = [f[0] for f in found]
            bad = next((f[1] for f in found if f[0] is None), None)
            if bad:
                rows.append((pair, key, None, bad, per_round))
                continue
            ratio = geomean(per_round)
            checked = all(f[2] for f in found)
            note = "" if checked else "unverified (not checked)"
            if len(rounds) > 1 and max(per_round) < 1.0:
                note = "; ".join(n for n in ("behind in every round", note) if n)
            drifted = drift_note(rounds, key, pair)
            if drifted:
                note = "; ".join(n for n in (note, drifted) if n)
            rows.append((pair, key, ratio, note, per_round))
            case = cases[key]
            groups.setdefault((pair, case["pass"], case["dtype"]), []).append((ratio, key, checked, per_round))
    return rows, groups


def summary_line(values):
    ratios = [v[0] for v in values]
    worst = min(values)
    return {"n": len(ratios), "min": min(ratios), "max": max(ratios), "geomean": geomean(ratios),
            "ahead": sum(r >= 1.0 for r in ratios), "worst": worst[1],
            "unchecked": sum(not v[2] for v in values),
            "ahead_all": sum(min(v[3]) >= 1.0 for v in values),
            "behind_all": sum(max(v[3]) < 1.0 for v in values)}


def fmt_rounds(per_round, markdown):
    unit = "×" if markdown else ""
    return [("—" if markdown else "-") if r is None else f"{r:.3f}{unit}" for r in per_round]


def render(rows, groups, pairs, markdown, n_rounds=1):
    out = []
    multi = n_rounds > 1
    for pair in pairs:
        label = f"{pair[0]} vs {pair[1]}"
        pair_rows = [r for r in rows if r[0] == pair]
        if markdown:
            heads = [f"round {i + 1}" for i in range(n_rounds)] + ["combined"] if multi else ["ratio"]
            out += [f"### {label} (time of {pair[1]} / time of {pair[0]}"
                    f"{'; combined: geometric mean of the rounds' if multi else ''})", "",
                    f"| case | {' | '.join(heads)} | note |", "|---|" + "---|" * (len(heads) + 1)]
            for _, key, ratio, note, per_round in pair_rows:
                cells = (fmt_rounds(per_round, True) or ["—"] * n_rounds) if multi else []
                cells.append("—" if ratio is None else f"{ratio:.3f}×")
                out.append(f"| {key} | {' | '.join(cells)} | {note} |")
            out.append("")
        else:
            out.append(f"{label} (time of {pair[1]} / time of {pair[0]}; above 1.0: {pair[0]} is faster"
                       f"{'; rounds, then their geometric mean' if multi else ''})")
            for _, key, ratio, note, per_round in pair_rows:
                cells = [f"{c:>7s}" for c in (fmt_rounds(per_round, False) or ["-"] * n_rounds)] if multi else []
                cells.append(f"{'-' if ratio is None else f'{ratio:.3f}':>7s}")
                out.append(f"  {key:48s} {' '.join(cells)}  {note}".rstrip())
            if not pair_rows:
                out.append("  (no case where both ran)")
    if markdown:
        extra_heads = " ahead in every round | behind in every round |" if multi else ""
        out += [f"| pair | pass | dtype | n | min | max | geomean | >= 1.0 |{extra_heads} worst case |",
                "|---|---|---|---|---|---|---|---|" + ("---|---|" if multi else "") + "---|"]
    else:
        out.append(f"summary{f' over {n_rounds} rounds (combined ratios)' if multi else ''}:")
    for (pair, pass_, dtype), values in sorted(groups.items(), key=lambda g: (pairs.index(g[0][0]), fbresults.PASSES.index(g[0][1]),
                                                                    fbresults.DTYPES.index(g[0][2]))):
        s = summary_line(values)
        extra = f", {s['unchecked']} not verified" if s["unchecked"] else ""
        if markdown:
            every = f" {s['ahead_all']} | {s['behind_all']} |" if multi else ""
            out.append(f"| {pair[0]} vs {pair[1]} | {pass_} | {dtype} | {s['n']} | {s['min']:.2f}× | "
                       f"{s['max']:.2f}× | {s['geomean']:.3f} | {s['ahead']} of {s['n']}{extra} |{every} "
                       f"{s['worst']} |")
        else:
            every = (f"; ahead in every round {s['ahead_all']}, behind in every round {s['behind_all']}"
                     if multi else "")
            out.append(f"  {pair[0]} vs {pair[1]} {pass_} {dtype}: {s['min']:.3f}–{s['max']:.3f}x, geomean "
                       f"{s['geomean']:.3f}, >= 1.0 in {s['ahead']} of {s['n']}{extra}{every}; worst {s['worst']}")
    excluded = [r for r in rows if r[2] is None]
    if excluded:
        out.append(f"left out of the summary: {len(excluded)} case(s) "
                   "(not verified, or no finite time; listed above)")
    return "\n".join(out) + "\n"


def report(round_files, pair_texts, markdown=False, unheld_paths=None, notes=None):
    """The ratios' text for rounds of results files (one list of files per round; one list is a single run) and
    OURS:PEER pair texts; unheld_paths as index() takes it; notes (a list): gets setting_notes' lines. Raises
    UsageError or fbresults.ResultsError on bad input."""
    pairs = [parse_pair(p) for p in pair_texts]
    rounds, cases, round_docs = [], {}, []
    for files in round_files:
        round_docs.append([])
        by_key, round_cases = index(files, unheld_paths, round_docs[-1])
        rounds.append(by_key)
        cases.update(round_cases)
    kernels = {k for by_key in rounds for recs in by_key.values() for k in recs}
    for pair in pairs:
        for name in pair:
            if name not in kernels:
                raise UsageError(f"--pair: no file has results of kernel '{name}' "
                                 f"(they have: {', '.join(sorted(kernels))})")
    rows, groups = compute(rounds, cases, pairs)
    if notes is not None:
        notes.extend(setting_notes(round_docs))
        notes.extend(place_notes(round_docs, pairs))
    return render(rows, groups, pairs, markdown, len(rounds))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="flashbench results files (a sweep and its peers)")
    ap.add_argument("--round", action="append", nargs="+", metavar="FILE", dest="rounds",
                    help="one round's results files (a sweep and its peers); repeat once per round, in place of FILES")
    ap.add_argument("--pair", action="append", required=True, metavar="OURS:PEER",
                    help="two kernel names; repeat for more pairs")
    ap.add_argument("--markdown", action="store_true", help="Markdown tables")
    args = ap.parse_args(argv)
    try:
        for p in args.pair:
            parse_pair(p)
        if args.files and args.rounds:
            raise UsageError("give results files either as FILES (one round) or with --round, not both")
        if not args.files and not args.rounds:
            raise UsageError("no results files: give FILES, or --round FILES... once per round")
        unheld_paths, notes = [], []
        text = report(args.rounds or [args.files], args.pair, args.markdown, unheld_paths, notes)
    except (UsageError, fbresults.ResultsError) as e:
        print(f"ratios.py: {e}", file=sys.stderr)
        return 2
    for path in unheld_paths:
        print(f"ratios.py: {path}: peers timed without the launch hold (peers.py before session 44): a peer's time "
              "there can include PyTorch's host time on small rows", file=sys.stderr)
    for note in notes:
        print(f"ratios.py: {note}", file=sys.stderr)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
