#!/usr/bin/env python3
"""Session 58: calls S and U's ncu figures as JSON, built from the committed pages in this folder.

    python3 summarize_ncu.py    (writes S/ncu-summary.json)

Per profile (S: flash-sm90 and the in-binary cudnn at 32 x 32 heads N = 512 and 16 x 32 N = 1024 d = 64 bf16
non-causal, N = 512 causal; U: PyTorch's cuDNN kernel at the same rows) the elapsed cycles and duration
(details.txt); for S's profiles the warp samples in all and the ten SASS instructions with the most, with their
largest stall reason; and the fit cycles = blocks' tiles x (fixed + steps x per_step) over N = 512 and 1024 (both
3072 work tiles of 192 rows on 132 blocks for ours: 23.27 a block, 4 and 8 K/V steps of 128 keys).
"""
import csv
import importlib.util
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
# The details page's elapsed cycles and duration, read as session 55's summary reads them.
_spec = importlib.util.spec_from_file_location("s55_summarize", os.path.join(HERE, "..", "s55", "summarize_ncu.py"))
_s55 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_s55)
details = _s55.details
ROWS = {"n512": "b32-n512-c0", "n512c": "b32-n512-c1", "n1024": "b16-n1024-c0"}  # S's names -> U's files


def sass(path):
    rows = list(csv.reader(open(path)))
    hdr, data = rows[1], [r for r in rows[2:] if len(r) == len(rows[1])]
    col = hdr.index("Warp Stall Sampling (All Samples)")
    stalls = [i for i, h in enumerate(hdr) if h.startswith("stall_") and "(Not Issued)" not in h]
    per = []
    for i, r in enumerate(data):
        n = float(r[col].replace(",", "") or 0)
        top = max(stalls, key=lambda j: float(r[j].replace(",", "") or 0))
        per.append({"index": i, "sass": r[hdr.index("Source")], "samples": n, "top_stall": hdr[top]})
    return per


def main():
    s = {}
    for side in ("ours", "cudnn"):
        for n in ROWS:
            d = os.path.join(HERE, "S", f"{side}-{n}")
            per = sass(os.path.join(d, "source-sass.csv"))
            total = sum(p["samples"] for p in per)
            top = sorted(per, key=lambda p: -p["samples"])[:10]
            s[f"{side}-{n}"] = {**details(os.path.join(d, "details.txt")), "warp_samples": total,
                                "top_instructions": [{**p, "share": p["samples"] / total} for p in top]}
    for n, u in ROWS.items():
        s[f"torch-cudnn-{n}"] = details(os.path.join(HERE, "U", f"details-{u}.txt"))
    tiles = 3072 / 132  # work tiles a block, both lengths
    for side in ("ours", "cudnn"):
        c4, c8 = s[f"{side}-n512"]["elapsed_cycles"], s[f"{side}-n1024"]["elapsed_cycles"]
        per_step = (c8 - c4) / tiles / 4
        s[f"{side}-fit"] = {"cycles_per_step": per_step, "cycles_per_tile_fixed": c4 / tiles - 4 * per_step,
                            "note": "ours' tiling (192 x 128) for both sides: cudnn's own tiles differ"}
    json.dump(s, open(os.path.join(HERE, "S", "ncu-summary.json"), "w"), indent=1)
    for k in ("ours-fit", "cudnn-fit"):
        print(k, {a: round(b) for a, b in s[k].items() if isinstance(b, float)})
    for k in ("ours-n512", "ours-n512c"):
        print(k, [(p["index"], p["sass"][:40], round(p["share"], 3), p["top_stall"]) for p in
                  s[k]["top_instructions"][:6]])


if __name__ == "__main__":
    main()
