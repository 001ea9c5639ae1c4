#!/usr/bin/env python3
"""Call D's table (session 63): per row, flash-sm90's median under each variant and round, def / variant (above 1
the variant faster) per round and over the rounds (geomean), the in-binary cudnn / def, every record's verdict; and
the rule written before the call (docs/perf-notes.md, "Session 63"), for each variant.

    d_table.py AB_DIR [--json OUT]

AB_DIR holds VARIANT-SPEC-ROUND.json (call_step.sh's ab_rounds)."""
import argparse
import json
import math
import os
import re
import sys

VARIANTS = ("def", "wide192", "wide256")


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def load(ab):
    """{(spec, key): {variant: {round: {kernel: record}}}}"""
    rows = {}
    pat = re.compile(r"^(%s)-(.+)-(\d+)\.json$" % "|".join(VARIANTS))
    for f in sorted(os.listdir(ab)):
        m = pat.match(f)
        if not m:
            continue
        v, spec, rnd = m.group(1), m.group(2), int(m.group(3))
        for r in json.load(open(os.path.join(ab, f))).get("results", []):
            rows.setdefault((spec, r["key"]), {}).setdefault(v, {}).setdefault(rnd, {})[r["kernel"]] = r
    return rows


def ok(r):
    return r is not None and r.get("status") == "ok" and r.get("verified") is True


def in_rule(spec, key):
    """The rule's rows: d = 64 non-causal at N >= 1024 (the papers' grid, fp16, the held-out non-causal shapes)."""
    n = int(re.search(r"-n(\d+)-", key).group(1))
    return "-full-" in key and n >= 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ab")
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = load(a.ab)
    out = {"rows": {}, "rule": {}}
    print("row | def us (rounds) | cudnn/def | " + " | ".join(f"def/{v} r1 r2 r3 (geo)" for v in VARIANTS[1:]))
    for (spec, key), by_v in sorted(rows.items(), key=lambda t: t[0][1]):
        rounds = sorted(by_v.get("def", {}))
        rec = {"spec": spec, "in_rule": in_rule(spec, key), "verified": True}
        t = {v: {r: by_v[v][r]["flash-sm90"]["time_ms"]["median"] * 1e3 for r in by_v.get(v, {})
                 if ok(by_v[v][r].get("flash-sm90"))} for v in VARIANTS}
        for v in VARIANTS:
            for r in by_v.get(v, {}):
                for k, x in by_v[v][r].items():
                    if not ok(x):
                        rec["verified"] = False
                        rec.setdefault("not_ok", []).append(f"{v} r{r} {k}: {x.get('status')} {x.get('reason', '')}")
        cud = [by_v["def"][r]["cudnn"]["time_ms"]["median"] * 1e3 / t["def"][r] for r in rounds
               if r in t["def"] and ok(by_v["def"][r].get("cudnn"))]
        rec["def_us"] = [round(t["def"][r], 1) for r in rounds if r in t["def"]]
        rec["cudnn_over_def"] = round(geomean(cud), 3) if cud else None
        cells = []
        for v in VARIANTS[1:]:
            rs = [t["def"][r] / t[v][r] for r in rounds if r in t["def"] and r in t.get(v, {})]
            rec[v] = {"by_round": [round(x, 3) for x in rs], "geomean": round(geomean(rs), 4) if rs else None,
                      "us": [round(t[v][r], 1) for r in sorted(t.get(v, {}))]}
            cells.append(" ".join(f"{x:.3f}" for x in rs) + f" ({geomean(rs):.3f})" if rs else "-")
        out["rows"][key] = rec
        print(f"{key}{'' if rec['in_rule'] else ' (reading)'}{'' if rec['verified'] else ' NOT VERIFIED'} | "
              f"{' '.join(str(x) for x in rec['def_us'])} | {rec['cudnn_over_def']} | " + " | ".join(cells))
    for v in VARIANTS[1:]:
        rule_rows = {k: r for k, r in out["rows"].items() if r["in_rule"]}
        gs = [r[v]["geomean"] for r in rule_rows.values() if r[v]["geomean"]]
        verified = all(r["verified"] for r in out["rows"].values())
        g = geomean(gs) if gs else float("nan")
        low = min(gs) if gs else float("nan")
        met = bool(gs) and len(gs) == len(rule_rows) and verified and g >= 1.02 and low >= 0.98
        out["rule"][v] = {"rows": len(rule_rows), "geomean": round(g, 4), "lowest_row": round(low, 4),
                          "every_record_verified": verified, "met": met}
        print(f"rule {v}: {len(gs)} of {len(rule_rows)} rows, geomean def/{v} {g:.4f} (>= 1.02), lowest row "
              f"{low:.4f} (>= 0.98), every record verified: {verified} -> {'met' if met else 'not met'}")
    if a.json:
        json.dump(out, open(a.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
