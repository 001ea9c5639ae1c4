#!/usr/bin/env python3
"""Reads scripts/fp32s14_h200.sh's Nsight Compute exports of the fp32 backward and prints, per setting side by side:
the kernel's metrics (ncu-SETTING.csv, the raw page) and, from the source page (source-SETTING.csv[.gz], one row per
SASS instruction with its stall samples), where the warps wait: each mbarrier wait by barrier (named from its offset
above the block's first barrier, the layout of Tf32BwdBarriers in kernels/flash_sm90/flash_sm90_tf32_bwd_kernel.cuh,
kStages = 1), the wgmma waits and the named barriers, as % of all samples.

    scripts/fp32s14_waits.py OUTDIR SETTING...
"""
import csv
import gzip
import os
import re
import sys

# Tf32BwdBarriers (kStages = 1): at(i) = base + 8 i; qt_ready only under kDotFirst. Who waits on each.
BARRIERS = ["kv_full (producer)", "raw_full (producer: Q, dO landed)", "qd_ready (consumers: Q, dO split)",
            "t_ready (consumers: transposes; dotfirst: dO^T)", "qd_empty (producer: Q, dO free)",
            "t_empty (producer: Q^T, dO^T free)", "kv_split (consumers)", "qt_ready (consumers, dotfirst: Q^T)"]
METRICS = [("gpu__time_duration.sum", "time"),
           ("sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
            "tensor pipe %"),
           ("l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed", "LSU wavefronts %"),
           ("l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed", "smem bank reads %"),
           ("l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed", "smem bank writes %"),
           ("smsp__issue_active.avg.pct_of_peak_sustained_active", "issue active %"),
           ("smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio", "stall gmma"),
           ("smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", "stall barrier"),
           ("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", "stall long sb"),
           ("smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio", "stall short sb"),
           ("smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio", "stall mio"),
           ("smsp__average_warps_issue_stalled_wait_per_issue_active.ratio", "stall wait")]


def read_lines(path):
    for p in (path, path + ".gz"):
        if os.path.exists(p):
            opener = gzip.open if p.endswith(".gz") else open
            with opener(p, "rt", errors="replace") as f:
                return f.read().splitlines()
    return None


def metrics(out, setting):
    lines = read_lines(os.path.join(out, f"ncu-{setting}.csv"))
    if not lines:
        return None
    rows = list(csv.DictReader([l for l in lines if l.startswith('"')]))
    return rows[1] if len(rows) > 1 else None  # units, then the one launch


def waits(out, setting):
    """{label: % of all stall samples}, total samples, hottest instructions."""
    lines = read_lines(os.path.join(out, f"source-{setting}.csv"))
    if not lines:
        return None
    rows = list(csv.reader([l for l in lines if l.startswith('"')]))
    head = next((i for i, r in enumerate(rows) if "Address" in r and "Source" in r), None)
    if head is None:
        return None
    hdr = rows[head]
    data = [r for r in rows[head + 1:] if len(r) == len(hdr)]
    i_src, i_all = hdr.index("Source"), hdr.index("Warp Stall Sampling (All Samples)")

    def samples(r):
        try:
            return int(float(r[i_all].replace(",", "") or 0))
        except ValueError:
            return 0

    total = sum(samples(r) for r in data) or 1
    off = lambda s: int(re.search(r"\+(0x[0-9a-f]+)\]", s).group(1), 16) if re.search(r"\+(0x[0-9a-f]+)\]", s) else None
    inits = [off(r[i_src]) for r in data if "SYNCS.EXCH" in r[i_src] and off(r[i_src]) is not None]
    base = min(inits) if inits else None
    by = {}
    for i, r in enumerate(data):
        src = r[i_src]
        if "TRYWAIT" in src:
            o = off(src)
            k = (o - base) // 8 if base is not None and o is not None else None
            label = BARRIERS[k] if k is not None and 0 <= k < len(BARRIERS) else f"mbarrier +{o:#x}" if o else "mbarrier ?"
            n = samples(r)
            if i + 1 < len(data) and "BRA" in data[i + 1][i_src]:
                n += samples(data[i + 1])  # the wait's retry branch holds most of its samples
            by[label] = by.get(label, 0) + n
        elif "WARPGROUP.DEPBAR" in src:
            by["wgmma waits (WARPGROUP.DEPBAR)"] = by.get("wgmma waits (WARPGROUP.DEPBAR)", 0) + samples(r)
        elif "BAR.SYNC" in src:
            by["named barriers (BAR.SYNC)"] = by.get("named barriers (BAR.SYNC)", 0) + samples(r)
    # dQ^T's region (session 14, round 2): its wgmmas are the kernel's only m64n32k8 ones with A from registers
    # (S^T / dP^T are SS, dV / dK m64n64k8). From the named barrier before the first of them to the wait after the
    # last (the K^T fragment loads, the wgmmas and their waits).
    rs32 = [i for i, r in enumerate(data) if re.search(r"HGMMA\.64x32x8\.F32\.TF32 R\d+, R\d+, gdesc", r[i_src])]
    if rs32:
        first = max((i for i in range(rs32[0]) if "BAR.SYNC" in data[i][i_src]), default=rs32[0] - 1)
        last = next((i for i in range(rs32[-1], len(data)) if "WARPGROUP.DEPBAR" in data[i][i_src]), rs32[-1])
        by["dQ^T region (consumers: fragments, wgmmas, waits)"] = sum(samples(r) for r in data[first + 1:last + 1])
    hot = sorted(data, key=samples, reverse=True)[:6]
    return ({k: 100.0 * v / total for k, v in by.items()}, total,
            [f"{100.0 * samples(r) / total:5.2f}% {r[i_src].strip()[:60]}" for r in hot])


def main():
    out, settings = sys.argv[1], sys.argv[2:]
    cols = {s: metrics(out, s) for s in settings}
    cols = {s: c for s, c in cols.items() if c}
    if cols:
        print("ncu, one launch, d = 64 non-causal N = 4096 (fp32 backward):", " | ".join(f"{s:>10}" for s in cols))
        for key, name in METRICS:
            print(f"  {name:20}" + " | ".join(f"{cols[s].get(key, '-'):>10}" for s in cols))

        def count(c):  # the wavefronts themselves: % of peak x duration
            try:
                lsu = float(c["l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed"])
                return f"{lsu * float(c['gpu__time_duration.sum'].replace(',', '')) / 1e8:10.3f}"
            except (KeyError, ValueError):
                return f"{'-':>10}"
        print(f"  {'LSU % x time (rel)':20}" + " | ".join(count(cols[s]) for s in cols))
    w = {s: waits(out, s) for s in settings}
    w = {s: x for s, x in w.items() if x}
    if not w:
        print("waits: no source page read")
        return
    print("stall samples by wait, % of all samples (source counters):", " | ".join(f"{s:>10}" for s in w))
    labels = sorted({k for x in w.values() for k in x[0]})
    for k in labels:
        print(f"  {k[:48]:48}" + " | ".join(f"{w[s][0].get(k, 0.0):10.2f}" for s in w))
    print(f"  {'samples':48}" + " | ".join(f"{w[s][1]:10d}" for s in w))
    for s in w:
        print(f"  hottest ({s}): " + "; ".join(w[s][2]))


if __name__ == "__main__":
    main()
