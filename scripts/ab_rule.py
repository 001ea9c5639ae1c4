#!/usr/bin/env python3
"""The verdict of an A/B rule written before its device call, read from the call's files.

    python3 scripts/ab_rule.py DIR --spec-dir SPECS --kernel flash-sm90 --base def --variant new --rounds 3 \
        --rows 'l64r-*' --controls 'l64ctl-*' --min-geomean 1.03 --min-row 0.98 --control-band 0.98:1.02 \
        [--controls-geomean-band 0.99:1.01] [--json OUT.json]

A probe (a variant of one kernel: an environment word, a second build) becomes the default when, over interleaved
rounds in one device call, it is faster on the rows drawn for it and level on controls it should not change. DIR holds
one results file per side, spec and round, named BASE-SPEC-ROUND.json and VARIANT-SPEC-ROUND.json (rounds 1..N), the
layout of the call scripts under results/h200/*/calls/. SPECS is the folder of the spec files SPEC.json; --rows and
--controls are globs over their names (without .json), each naming at least one spec, none both.

Every case a matched spec expands to (for --kernel) is a row: rule rows from --rows, controls from --controls. A row's
ratio in a round is BASE's median time / VARIANT's median time (above 1: the variant is faster); its ratio over the
call is the geometric mean of its rounds'. The rule is met when
  * every row has both sides' results in every round, with status ok and verified true (a failed, skipped, missing
    or unverified result on either side fails the rule: a probe that is wrong or does not run is not a default);
  * the rule rows' ratios have a geometric mean >= --min-geomean and none is below --min-row;
  * every control's ratio lies within --control-band LO:HI;
  * given --controls-geomean-band LO:HI, the controls' ratios have a geometric mean within it (a bias that moves
    every control a little, where one short control's noise must not decide the rule alone: sessions 46-47's calls
    H and L each missed by one control whose code is the same under both sides, 1.0107 and 0.979);
  * every file names the same device and the same build (device.name, tool.git): a call is one machine and one set
    of binaries, and files mixed from two calls are no A/B. The verdict says which device it holds for (session 48:
    the same rule read 1.011 on an H200 for a probe built against an H100's DRAM traffic).
--in-process: the variant ran in the same process as the kernel (`flashbench run --variant`, call_step.sh's
ab_variants): DIR holds SPEC-ROUND.json, each with --kernel's records and its variant's, named --variant (a variant of
--kernel under settings.variants, or the rule is not met); --base is not given. Each round is then one process's,
both sides' reps interleaved where the run was.
--kernel-is-probe (with --in-process): the change under test is --kernel as built and --variant runs the code before
it (a check of a shipped default, as session 67's call E: the kernel against FB_FLASH_BWD=nodesc2); a row's ratio is
then the variant's median time / the kernel's (above 1: the kernel is faster), and the rule's base is the variant.
The rows and their rounds are printed, then the verdict and every reason it fails. --json also writes all of it
(the rule's figures, each row's rounds, the verdict) to a file, whole or not at all.

Exit status: 0 the rule is met, 1 it is not, 2 bad input (a missing folder or spec, a glob naming nothing, a
malformed results file, bad figures): one line on stderr naming it, nothing on stdout.
"""

import argparse
import fnmatch
import json
import math
import os
import sys

import fbresults
import fbspec


class UsageError(Exception):
    pass


def parse_band(text, flag="--control-band"):
    lo, sep, hi = text.partition(":")
    try:
        band = (float(lo), float(hi))
    except ValueError:
        band = None
    if not sep or band is None or not all(math.isfinite(x) and x > 0 for x in band) or band[0] > band[1]:
        raise UsageError(f"{flag}: '{text}' is not LO:HI (two positive ratios, LO <= HI, e.g. 0.98:1.02)")
    return band


def positive(flag, value):
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"{flag}: {value} is not a positive ratio")
    return value


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def match_specs(spec_dir, rows, controls):
    """[(spec name, role)] in name order; each glob must name a spec, no spec both roles."""
    if not os.path.isdir(spec_dir):
        raise UsageError(f"--spec-dir: '{spec_dir}' is not a folder")
    names = sorted(f[:-5] for f in os.listdir(spec_dir) if f.endswith(".json"))
    role = {}
    for flag, globs, r in (("--rows", rows, "row"), ("--controls", controls, "control")):
        for g in globs:
            hit = [n for n in names if fnmatch.fnmatchcase(n, g)]
            if not hit:
                raise UsageError(f"{flag}: '{g}' names no spec in {spec_dir}")
            for n in hit:
                if role.get(n, r) != r:
                    raise UsageError(f"{flag}: '{g}' names {n}, which is also a {role[n]} (--rows and --controls "
                                     f"must not share a spec)")
                role[n] = r
    return sorted(role.items())


def expected_keys(spec_dir, name, kernel):
    path = os.path.join(spec_dir, name + ".json")
    try:
        spec = fbspec.load_spec(path)
    except fbspec.SpecError as e:
        raise UsageError(str(e)) from None
    if spec["kernels"] is not None and kernel not in spec["kernels"]:
        raise UsageError(f"{path}: spec.kernels does not list --kernel {kernel}")
    keys = []
    for case in spec["cases"]:
        k = fbresults.case_key(case)
        if k not in keys:
            keys.append(k)
    return keys


def load_side(path, seen):
    """One results file (None where there is none); its device name and build go into seen["device"] and seen["git"]
    (sets)."""
    if not os.path.exists(path):
        return None
    try:
        doc = fbresults.load_results(path)
    except fbresults.ResultsError as e:
        raise UsageError(str(e)) from None
    seen["device"].add(str((doc.get("device") or {}).get("name") or "unnamed"))
    seen["git"].add(str((doc.get("tool") or {}).get("git") or "unnamed"))
    return doc


def side_times(path, doc, kernel, keys):
    """{key: (median ms, None) or (None, problem)} for one side of one spec and round: `kernel`'s records in doc,
    load_side()'s reading of path."""
    if doc is None:
        return {k: (None, f"no results file {os.path.basename(path)}") for k in keys}
    recs = {}
    for r in doc["results"]:
        if r["kernel"] == kernel:
            if r["key"] in recs:
                raise UsageError(f"{path}: {kernel} on {r['key']} twice")
            recs[r["key"]] = r
    out = {}
    for k in keys:
        r = recs.get(k)
        if r is None:
            out[k] = (None, f"{os.path.basename(path)}: no {kernel} result")
        elif r["status"] != "ok":
            out[k] = (None, f"{os.path.basename(path)}: {r['status']}" + (f" ({r['reason']})" if r["reason"] else ""))
        elif r["verified"] is not True:
            out[k] = (None, f"{os.path.basename(path)}: verified {json.dumps(r['verified'])}")
        elif not (math.isfinite(r["time_ms"]["median"]) and r["time_ms"]["median"] > 0):
            out[k] = (None, f"{os.path.basename(path)}: median time {r['time_ms']['median']}")
        else:
            out[k] = (r["time_ms"]["median"], None)
    return out


def variant_problem(path, doc, variant, kernel):
    """Why the in-process file at path does not hold `variant` as a variant of `kernel` (None: it does, or no file)."""
    if doc is None:
        return None  # side_times reports the missing file
    defined = ((doc.get("settings") or {}).get("variants") or {}).get(variant)
    if not isinstance(defined, dict) or defined.get("kernel") != kernel:
        return f"{os.path.basename(path)}: settings.variants names no variant '{variant}' of {kernel}"
    return None


def judge(a):
    if not os.path.isdir(a.dir):
        raise UsageError(f"DIR: '{a.dir}' is not a folder")
    if a.rounds < 1:
        raise UsageError(f"--rounds: {a.rounds} is not a count of rounds (>= 1)")
    if a.kernel_is_probe and not a.in_process:
        raise UsageError("--kernel-is-probe: only with --in-process (the kernel and its variant in one file)")
    if a.in_process:
        if a.base is not None:
            raise UsageError("--base: the in-process layout has none (the base is --kernel itself)")
        a.base = a.kernel
    elif a.base is None:
        raise UsageError("--base is required (or --in-process)")
    if a.base == a.variant:
        raise UsageError(f"--base and --variant are both '{a.base}'")
    positive("--min-geomean", a.min_geomean)
    positive("--min-row", a.min_row)
    band = parse_band(a.control_band)
    gband = parse_band(a.controls_geomean_band, "--controls-geomean-band") if a.controls_geomean_band else None
    if gband is not None and not a.controls:
        raise UsageError("--controls-geomean-band: no --controls to take the geomean of")
    rows = []
    seen = {"device": set(), "git": set()}
    for name, role in match_specs(a.spec_dir, a.rows, a.controls):
        keys = expected_keys(a.spec_dir, name, a.kernel)
        per_round = []
        for r in range(1, a.rounds + 1):
            if a.in_process:
                path = os.path.join(a.dir, f"{name}-{r}.json")
                doc = load_side(path, seen)
                base = side_times(path, doc, a.kernel, keys)
                why = variant_problem(path, doc, a.variant, a.kernel)
                var = {k: (None, why) for k in keys} if why else side_times(path, doc, a.variant, keys)
                if a.kernel_is_probe:
                    base, var = var, base
            else:
                bpath = os.path.join(a.dir, f"{a.base}-{name}-{r}.json")
                vpath = os.path.join(a.dir, f"{a.variant}-{name}-{r}.json")
                base = side_times(bpath, load_side(bpath, seen), a.kernel, keys)
                var = side_times(vpath, load_side(vpath, seen), a.kernel, keys)
            per_round.append((base, var))
        for k in keys:
            ratios, problems = [], []
            for r, (base, var) in enumerate(per_round, 1):
                (tb, pb), (tv, pv) = base[k], var[k]
                problems += [f"round {r}, {p}" for p in (pb, pv) if p]
                ratios.append(tb / tv if tb and tv else None)
            ok = not problems
            rows.append({"spec": name, "key": k, "role": role, "ratios": ratios,
                         "ratio": geomean(ratios) if ok else None, "problems": problems})

    reasons = []
    for row in rows:
        if row["problems"]:
            reasons.append(f"{row['role']} {row['key']} ({row['spec']}): " + "; ".join(row["problems"]))
    rule_rows = [r for r in rows if r["role"] == "row" and r["ratio"] is not None]
    summary = {"rows": sum(r["role"] == "row" for r in rows), "controls": sum(r["role"] == "control" for r in rows),
               "device": sorted(seen["device"]), "git": sorted(seen["git"])}
    for what, label in (("device", "devices"), ("git", "builds")):
        if len(seen[what]) > 1:
            reasons.append(f"the files come from {len(seen[what])} {label}: " + ", ".join(sorted(seen[what])))
    if rule_rows:
        g = geomean([r["ratio"] for r in rule_rows])
        summary.update(geomean=g, min=min(r["ratio"] for r in rule_rows), max=max(r["ratio"] for r in rule_rows))
        if g < a.min_geomean:
            reasons.append(f"the rows' geomean {g:.4f} is below {a.min_geomean}")
        for r in rule_rows:
            if r["ratio"] < a.min_row:
                reasons.append(f"row {r['key']} ({r['spec']}) reads {r['ratio']:.4f}, below {a.min_row}")
    for r in rows:
        if r["role"] == "control" and r["ratio"] is not None and not band[0] <= r["ratio"] <= band[1]:
            reasons.append(f"control {r['key']} ({r['spec']}) reads {r['ratio']:.4f}, outside {band[0]}-{band[1]}")
    controls = [r["ratio"] for r in rows if r["role"] == "control" and r["ratio"] is not None]
    if controls:
        summary["controls_geomean"] = geomean(controls)
        if gband is not None and not gband[0] <= summary["controls_geomean"] <= gband[1]:
            reasons.append(f"the controls' geomean {summary['controls_geomean']:.4f} is outside {gband[0]}-{gband[1]}")
    return {
        "rule": {"kernel": a.kernel, "base": a.variant if a.kernel_is_probe else a.base,
                 "variant": a.kernel if a.kernel_is_probe else a.variant, "rounds": a.rounds,
                 "in_process": bool(a.in_process), "kernel_is_probe": bool(a.kernel_is_probe),
                 "rows": a.rows, "controls": a.controls, "min_geomean": a.min_geomean, "min_row": a.min_row,
                 "control_band": list(band), "controls_geomean_band": list(gband) if gband else None, "ratio": "base median time / variant median time, per round; a "
                 "row's ratio is the geomean of its rounds'"},
        "rows": rows,
        "summary": summary,
        "verdict": "not met" if reasons else "met",
        "reasons": reasons,
    }


def fmt_ratio(x):
    return f"{x:.3f}" if x is not None else "  -  "


def report(v):
    rule = v["rule"]
    lines = [f"{rule['variant']} against {rule['base']} ({rule['kernel']}): base time / variant time, above 1 the "
             f"variant faster; rounds 1-{rule['rounds']} and their geomean",
             f"rule: rows' geomean >= {rule['min_geomean']}, no row below {rule['min_row']}, controls within "
             f"{rule['control_band'][0]}-{rule['control_band'][1]}" +
             (f" and their geomean within {rule['controls_geomean_band'][0]}-{rule['controls_geomean_band'][1]}"
              if rule["controls_geomean_band"] else "") + ", every row verified on both sides in every round"]
    width = max([len(r["key"]) for r in v["rows"]] + [4])
    for role in ("row", "control"):
        for r in (x for x in v["rows"] if x["role"] == role):
            mark = "" if not r["problems"] else "  FAILED: " + "; ".join(r["problems"])
            lines.append(f"  {role:7s} {r['key']:{width}s}  " + " ".join(fmt_ratio(x) for x in r["ratios"]) +
                         f"  {fmt_ratio(r['ratio'])}{mark}")
    s = v["summary"]
    if "geomean" in s:
        lines.append(f"rows: {s['rows']}, geomean {s['geomean']:.4f} ({s['min']:.3f}-{s['max']:.3f}); "
                     f"controls: {s['controls']}" +
                     (f", geomean {s['controls_geomean']:.4f}" if "controls_geomean" in s else ""))
    else:
        lines.append(f"rows: {s['rows']}, none with a ratio; controls: {s['controls']}")
    if s.get("device"):
        lines.append(f"device: {', '.join(s['device'])}; build: {', '.join(s['git'])}")
    lines.append("verdict: MET" if v["verdict"] == "met" else "verdict: NOT MET")
    lines += [f"  - {x}" for x in v["reasons"]]
    return "\n".join(lines)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir", metavar="DIR", help="BASE-SPEC-ROUND.json and VARIANT-SPEC-ROUND.json (--in-process: "
                   "SPEC-ROUND.json)")
    p.add_argument("--spec-dir", required=True, help="the folder of the call's SPEC.json files")
    p.add_argument("--kernel", required=True)
    p.add_argument("--base", help="the files' prefix of the default (e.g. def); not with --in-process")
    p.add_argument("--variant", required=True,
                   help="the files' prefix of the probe (e.g. new); --in-process: the variant's kernel name")
    p.add_argument("--in-process", action="store_true",
                   help="the variant ran beside --kernel in each file (flashbench run --variant): SPEC-ROUND.json")
    p.add_argument("--kernel-is-probe", action="store_true",
                   help="with --in-process: --kernel is the change under test, --variant the code before it")
    p.add_argument("--rounds", type=int, required=True)
    p.add_argument("--rows", action="append", required=True, help="glob over spec names: the rule's rows")
    p.add_argument("--controls", action="append", default=[], help="glob over spec names: the controls")
    p.add_argument("--min-geomean", type=float, required=True)
    p.add_argument("--min-row", type=float, required=True)
    p.add_argument("--control-band", default="0.98:1.02", help="LO:HI (default 0.98:1.02)")
    p.add_argument("--controls-geomean-band", help="LO:HI: the controls' geomean must lie within (default: none)")
    p.add_argument("--json", help="also write the verdict and every row here")
    a = p.parse_args(argv)
    try:
        v = judge(a)
        if a.json:
            try:
                fbresults.write_atomic(a.json, json.dumps(v, indent=1) + "\n")
            except OSError as e:
                raise UsageError(f"--json: cannot write '{a.json}': {e.strerror}") from None
    except UsageError as e:
        print(f"ab_rule.py: {e}", file=sys.stderr)
        return 2
    print(report(v))
    return 0 if v["verdict"] == "met" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
