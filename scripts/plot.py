#!/usr/bin/env python3
"""Plots from flashbench results files (the JSON `flashbench run -o` and scripts/peers.py write).

    python3 scripts/plot.py RESULTS.json [MORE.json ...] -o OUTDIR [--svg] [--ceilings CEILINGS.json]

Writes into OUTDIR (PNG, plus SVG with --svg):
  time_vs_n      median time vs N (log-log), one line per kernel, one panel per
                 (dtype, head_dim, causal, pass[, heads])
  speedup        time(naive) / time(kernel) vs N for every other kernel, with the seed's 2-4x claim
                 drawn as a band
  memory         peak bytes vs N (log-log); the legend gives each line's least-squares slope in log-log
                 (materialising N x N gives ~2 at fixed batch, tiling ~1)
  tflops         achieved TFLOP/s vs N, with the measured bf16 GEMM ceiling on fp16/bf16 panels
  gbps           achieved GB/s (modelled bytes / median time) vs N, with the measured copy ceiling
  roofline       TFLOP/s vs arithmetic intensity (model FLOPs / modelled bytes), one panel per dtype,
                 under the roof min(GEMM ceiling, intensity x copy ceiling) when both are known
  error          max |error| vs the fp64 reference vs N (log y), one panel per (dtype, pass); a
                 non-finite error is drawn as a red x at the top of its panel, an exact 0 as a
                 triangle at the bottom

Ceilings come from `device.ceilings` of a results file ({"copy_gbps", "gemm_bf16_tflops"}), or from
--ceilings (the output of `flashbench info --ceilings --json`), which wins. A figure with nothing to
show (say, no naive results for the speedup) is left out with a note on stderr.

Only `ok` results are drawn. A (case, kernel) found in more than one file on one device is drawn once,
from the file created last, with a warning; a kernel measured on several devices has the device in its
labels. The speedup pairs a kernel with naive of the same case on the same device. Inputs that are
JSON but not results files (no `schema_version` and no `results`, e.g. a ceilings file caught by
`results/h200/*.json`) are skipped with a note; an interrupted run (`"complete": false`) is drawn with a
note. Each figure has one legend below its panels and a caption saying what its bands and slopes mean.

Bad input (a missing, unreadable or malformed file, a schema of another major version, no ok result)
gives one line on stderr and exit status 2, and nothing is written.
"""

import argparse
import io
import json
import math
import os
import sys
import textwrap
from collections import OrderedDict, defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fbresults import ResultsError, load_results  # noqa: E402

PROG = "plot.py"
EXIT_INPUT = 2

# The seed's claim ("wall-clock speedups of 2-4x for N = 1,024-4,096"), drawn for reference.
SEED_SPEEDUP_BAND = (2.0, 4.0)
# Panels per row of a faceted figure, and the size of one panel in inches.
GRID_COLUMNS = 4
PANEL_W, PANEL_H = 4.0, 3.0
MAX_X_TICKS = 8
MIN_FIG_W = 7.0  # room for the figure title above a single panel
DPI = 100
# The shared legend under the panels: entries per row, and the height of a row and of a caption line
# (inches).
LEGEND_COLUMNS = 5
LEGEND_ROW_H, CAPTION_LINE_H = 0.19, 0.17
SUPTITLE_H = 0.45  # inches kept for the figure title
LEGEND_MARKER_W, LEGEND_CHAR_W = 0.7, 0.075  # inches per legend entry's handle and per character (8 pt)
CAPTION_WIDTH = 150  # characters per caption line at the narrowest figure
# Where out-of-range markers (non-finite or zero errors) sit, in axes fraction.
MARK_TOP, MARK_BOTTOM = 0.96, 0.04
X_MARGIN = 1.4  # factor of blank x range either side of a panel's extreme N
GIGA, TERA = 1e9, 1e12

FIGURES = ("time_vs_n", "speedup", "memory", "tflops", "gbps", "roofline", "error")
DTYPE_ORDER = ("fp64", "fp32", "fp16", "bf16", "fp8")
PASS_ORDER = ("fwd", "bwd", "fwd+bwd")


class InputError(Exception):
    pass


# ---------------------------------------------------------------------------------------------------
# Data


def not_results(path):
    """Why `path` is JSON but no results file (a reason to skip it), or None: a file that may be one
    (or is unreadable or malformed) is left to load_results, which names what is wrong."""
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(doc, dict) or "schema_version" in doc or "results" in doc:
        return None
    inner = doc.get("ceilings", doc)
    if isinstance(inner, dict) and ("copy_gbps" in inner or "gemm_bf16_tflops" in inner):
        return f"holds ceilings, not results: pass it as --ceilings {path}"
    return "not a results file (no schema_version, no results)"


def load_rows(paths, notes=None):
    """Every record of every file as a flat dict (case fields at top level, plus `file`, `device`,
    `created`, `order`). Non-results JSON files are skipped, with a line in `notes`. Raises InputError
    for unusable input."""
    notes = notes if notes is not None else []
    rows, ceilings, used = [], {}, []
    for order, path in enumerate(paths):
        why = not_results(path)
        if why:
            notes.append(f"note: {path}: {why}; skipped")
            continue
        try:
            doc = load_results(path)
        except ResultsError as e:
            raise InputError(str(e)) from None
        used.append(path)
        if not doc["complete"]:
            notes.append(f"note: {path} is an interrupted run (\"complete\": false): the cases it did not "
                         "reach are missing from the figures")
        device = str(doc["device"].get("name", doc["backend"]))
        c = doc["device"].get("ceilings")
        if isinstance(c, dict) and device not in ceilings:
            ceilings[device] = c
        for r in doc["results"]:
            row = dict(r["case"])
            # x axis: the key length (N itself for self-attention). A query length that differs from it
            # (decode: seq_q of 1 against a long KV cache) gets its own panels (facet_of).
            row["seq"] = row["seq_k"]
            row["q_len"] = row["seq_q"] if row["seq_q"] != row["seq_k"] else None
            row.update({k: v for k, v in r.items() if k != "case"})
            row["file"] = os.path.basename(path)
            row["device"] = device
            row["created"] = doc["created"]
            row["order"] = order
            rows.append(row)
    if not used:
        raise InputError(f"no results file among {', '.join(paths)}: nothing to plot")
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        raise InputError(f"no result with status ok in {', '.join(used)} ({len(rows)} results in all): "
                         "nothing to plot")
    return ok, ceilings


def read_ceilings_file(path):
    import json
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))
    except OSError as e:
        raise InputError(f"--ceilings {path}: cannot open: {e.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"--ceilings {path}: malformed JSON: {e}") from None
    c = doc.get("ceilings", doc) if isinstance(doc, dict) else None
    if not isinstance(c, dict) or not any(isinstance(c.get(k), (int, float)) and not isinstance(c.get(k), bool)
                                          for k in ("copy_gbps", "gemm_bf16_tflops")):
        raise InputError(f"--ceilings {path}: expected an object with copy_gbps and/or gemm_bf16_tflops "
                         "(the output of `flashbench info --ceilings --json`)")
    return c


def ceiling(c, name):
    v = c.get(name) if c else None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        return None
    return float(v)


def preference(r):
    """Which of two results of one (device, kernel, case) is drawn: the one timed over more reps (a
    `verify` run times one rep, cold), then the one created later, then the later on the command line."""
    return (r["time_ms"]["reps"], r["created"], r["order"])


def dedupe(rows, notes=None):
    """One row per (device, kernel, case) where files overlap (a run and a merge of it, a re-run, a
    verify run of a sweep's case): see preference(). Each pair of overlapping files gives one warning
    in `notes`."""
    best = {}
    for r in rows:
        k = (r["device"], r["kernel"], r["key"])
        if k not in best or preference(r) >= preference(best[k]):
            best[k] = r
    dropped = defaultdict(int)  # (dropped file, kept file) -> results
    for r in rows:
        kept = best[(r["device"], r["kernel"], r["key"])]
        if kept is not r and kept["file"] != r["file"]:
            dropped[(r["file"], kept["file"])] += 1
    if notes is not None:
        for (lost, kept), n in dropped.items():
            notes.append(f"warning: {n} results (case, kernel) of {lost} are also in {kept}; drawn from "
                         f"{kept} (more reps, or created later)")
    keep = {id(r) for r in best.values()}
    return [r for r in rows if id(r) in keep]


def fit_loglog_slope(xs, ys):
    """Least-squares slope of log(y) against log(x) over points with x, y > 0 and finite; None when
    fewer than two distinct x remain."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys)
           if x > 0 and y > 0 and math.isfinite(x) and math.isfinite(y)]
    if len({p[0] for p in pts}) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    sxy = sum((p[0] - mx) * (p[1] - my) for p in pts)
    return sxy / sxx


def speedups(rows, base="naive"):
    """[(row, t_base / t_row)] for every ok row of a kernel other than `base` that has a `base` row of
    the same case on the same device."""
    base_time = {}
    for r in rows:
        if r["kernel"] == base and r["time_ms"]["median"] > 0:
            base_time.setdefault((r["device"], r["key"]), r["time_ms"]["median"])
    out = []
    for r in rows:
        t0 = base_time.get((r["device"], r["key"]))
        if r["kernel"] != base and t0 is not None and r["time_ms"]["median"] > 0:
            out.append((r, t0 / r["time_ms"]["median"]))
    return out


def mask_name(causal):
    return "causal" if causal else "full"


def facet_of(r):
    return (r["dtype"], r["head_dim"], r["causal"], r["pass"], r["heads"], r["kv_heads"], r.get("q_len"))


def facet_order(r):
    return (DTYPE_ORDER.index(r["dtype"]), r["head_dim"], r["causal"], PASS_ORDER.index(r["pass"]),
            r["heads"], r["kv_heads"], r.get("q_len") or 0)


def facet_titles(keys):
    """Short titles; heads are named only when they differ between panels or GQA is used."""
    show_heads = len({(k[4], k[5]) for k in keys}) > 1 or any(k[4] != k[5] for k in keys)
    titles = {}
    for k in keys:
        t = f"{k[0]}  d={k[1]}  {mask_name(k[2])}  {k[3]}"
        if show_heads:
            t += f"  H={k[4]}" + (f"/{k[5]}" if k[5] != k[4] else "")
        if k[6] is not None:  # seq_q != seq_k: x is the key length
            t += f"  Nq={n_label(k[6])}"
        titles[k] = t
    return titles


def label_files(rows):
    """Kernels measured on more than one device get the device in their labels (on one device, dedupe
    left one result per case)."""
    devices = defaultdict(set)
    for r in rows:
        devices[r["kernel"]].add(r["device"])
    return {k for k, d in devices.items() if len(d) > 1}


def series(rows, ambiguous_kernels):
    """Rows of one panel -> OrderedDict label -> rows sorted by N. A kernel whose rows hold two batch
    sizes at one N is split by batch; one whose batch changes with N at constant tokens says so."""
    by = OrderedDict()
    for r in rows:
        name = r["kernel"] + (f" [{r['device']}]" if r["kernel"] in ambiguous_kernels else "")
        by.setdefault(name, []).append(r)
    out = OrderedDict()
    for name, rs in by.items():
        seqs = [r["seq"] for r in rs]
        if len(set(seqs)) != len(seqs):
            for b in sorted({r["batch"] for r in rs}):
                out[f"{name} B={b}"] = sorted((r for r in rs if r["batch"] == b), key=lambda r: r["seq"])
            continue
        batches = {r["batch"] for r in rs}
        if len(batches) > 1:
            tokens = {r["batch"] * r["seq"] for r in rs}
            tag = f" (B*N={tokens.pop()})" if len(tokens) == 1 else " (B varies)"
        else:
            tag = ""
        out[name + tag] = sorted(rs, key=lambda r: r["seq"])
    return out


# ---------------------------------------------------------------------------------------------------
# Figures


class Styles:
    """One colour and marker per kernel name, the same in every figure."""

    MARKERS = "os^DvP*Xh<>"
    # Variants of one kernel in one panel (head dims, masks, batch sizes): same colour, another dash.
    LINESTYLES = ("-", "--", ":", "-.")

    def __init__(self, kernels, plt):
        cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        self.style = {k: (cycle[i % len(cycle)], self.MARKERS[i % len(self.MARKERS)])
                      for i, k in enumerate(kernels)}

    def of(self, label, variant=0):
        kernel = label.split(" ")[0]
        color, marker = self.style.get(kernel, ("black", "o"))
        return {"color": color, "marker": marker,
                "linestyle": self.LINESTYLES[variant % len(self.LINESTYLES)]}


def variants(labels):
    """label -> its index among the labels of the same kernel (0 for the first)."""
    count, out = defaultdict(int), {}
    for label in labels:
        kernel = label.split(" ")[0]
        out[label] = count[kernel]
        count[kernel] += 1
    return out


def grid(plt, n, title):
    cols = min(GRID_COLUMNS, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(max(PANEL_W * cols, MIN_FIG_W), PANEL_H * rows + 0.6),
                             squeeze=False)
    fig.suptitle(title, fontsize=11)
    flat = [ax for row in axes for ax in row]
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def finish(fig, axes, caption=None, legend_label=lambda label: label):
    """One legend for the whole figure, below its panels (a legend inside a panel covers its data),
    entries named by legend_label(line label) and listed once; then the caption, wrapped to the
    figure's width. The figure grows by what they take; the panels keep their size."""
    entries = OrderedDict()
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(legend_label(label), handle)
    w, h = fig.get_size_inches()
    # As many columns as the longest entry lets fit across the figure (a legend wider than the figure
    # is cut off at both sides).
    longest = max((len(label) for label in entries), default=0)
    cols = max(1, min(LEGEND_COLUMNS, len(entries), int(w // (LEGEND_MARKER_W + LEGEND_CHAR_W * longest))))
    legend_rows = -(-len(entries) // cols) if entries else 0
    lines = textwrap.wrap(caption, width=int(CAPTION_WIDTH * w / (GRID_COLUMNS * PANEL_W))) if caption else []
    bottom = legend_rows * LEGEND_ROW_H + len(lines) * CAPTION_LINE_H + 0.25
    total = h + bottom
    fig.set_size_inches(w, total)
    fig.tight_layout(rect=(0, bottom / total, 1, 1 - SUPTITLE_H / total))
    if entries:
        fig.legend(list(entries.values()), list(entries), loc="upper center", ncol=cols, fontsize=8,
                   frameon=False, bbox_to_anchor=(0.5, bottom / total))
    if lines:
        fig.text(0.5, 0.1 / total, "\n".join(lines), ha="center", va="bottom", fontsize=8, color="dimgray")
    return fig


def plain_log_ticks(axis):
    """Ticks at 1, 2, 5 x 10^k labelled as plain numbers (2000, 0.05): matplotlib's default labels a log
    axis spanning less than a decade with 2x10^3-style minor labels only."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def n_label(n):
    """1024 -> "1k", 32768 -> "32k", 130 -> "130": short labels for sequence lengths."""
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def log2_x(ax, seqs):
    """Log-2 x axis ticked at the N values drawn, with plain labels: readable, and far cheaper to lay
    out than matplotlib's default math-text powers of two."""
    from matplotlib.ticker import FixedLocator, NullLocator
    ax.set_xscale("log", base=2)
    ticks = sorted(set(seqs))
    if len(ticks) > MAX_X_TICKS:  # keep every k-th so that labels do not overlap
        step = -(-len(ticks) // MAX_X_TICKS)
        ticks = ticks[::step]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([n_label(n) for n in ticks])
    ax.set_xlabel("sequence length N")


def faceted(plt, styles, rows, title, ylabel, value, logy=True, decorate=None, ambiguous=frozenset(),
            caption=None, plain_ticks=False):
    """A panel per facet, a line per series, y = value(row) (rows with value None are dropped); a linear
    y axis starts at 0, so that ratios read as heights, and has plain tick labels (no 1e-2 offset)."""
    rows = [r for r in rows if value(r) is not None]
    if not rows:
        return None
    facets = OrderedDict()
    for r in sorted(rows, key=facet_order):
        facets.setdefault(facet_of(r), []).append(r)
    titles = facet_titles(list(facets))
    fig, axes = grid(plt, len(facets), title)
    for ax, (key, rs) in zip(axes, facets.items()):
        lines = series(rs, ambiguous)
        var = variants(lines)
        for label, pts in lines.items():
            extra = decorate.label(label, pts) if decorate else ""
            ax.plot([p["seq"] for p in pts], [value(p) for p in pts], label=label + extra, linewidth=1.4,
                    markersize=4, **styles.of(label, var[label]))
        log2_x(ax, [r["seq"] for r in rs])
        if key[6] is not None:  # a query length of its own (decode): x is the key length
            ax.set_xlabel("keys N_k")
        if logy:
            ax.set_yscale("log")
            if plain_ticks:
                plain_log_ticks(ax.yaxis)
        ax.set_ylabel(ylabel)
        if decorate:
            decorate.panel(ax, key, rs)
        if not logy:
            ax.set_ylim(bottom=0)
            ax.ticklabel_format(axis="y", style="plain", useOffset=False)
        ax.set_title(titles[key], fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    if decorate and hasattr(decorate, "prepare_legend"):
        decorate.prepare_legend(axes)
    legend_label = decorate.legend_label if decorate and hasattr(decorate, "legend_label") else (lambda x: x)
    return finish(fig, axes, caption, legend_label)


class SlopeLabel:
    """Memory figure: each line's fitted log-log slope in its label ("naive  slope 2.00"); the shared
    legend gives each line's range of slopes over the panels."""

    SEP = "  slope "

    def label(self, _label, pts):
        s = fit_loglog_slope([p["seq"] for p in pts], [p["peak_bytes"] for p in pts])
        return f"{self.SEP}{s:.2f}" if s is not None else f"{self.SEP}n/a"

    def panel(self, ax, key, rs):
        pass

    def prepare_legend(self, axes):
        """The range of each line's slope over the panels, for the shared legend."""
        self.slopes = defaultdict(list)
        for ax in axes:
            for line in ax.get_lines():
                name, _, slope = line.get_label().partition(self.SEP)
                if slope and slope != "n/a":
                    self.slopes[name].append(float(slope))

    def legend_label(self, label):
        name = label.split(self.SEP)[0]
        s = getattr(self, "slopes", {}).get(name)
        if not s:
            return name
        lo, hi = min(s), max(s)
        return f"{name}: slope {lo:.2f}" + (f" to {hi:.2f}" if f"{hi:.2f}" != f"{lo:.2f}" else "")


class CeilingLine:
    """A horizontal ceiling per device; `applies(facet)` says on which panels it belongs."""

    def __init__(self, ceilings, name, label, applies=lambda key: True, scale=1.0):
        self.lines = [(dev, ceiling(c, name) * scale) for dev, c in ceilings.items() if ceiling(c, name)]
        self.label_text, self.applies = label, applies

    def label(self, _label, _pts):
        return ""

    def panel(self, ax, key, rs):
        if not self.applies(key):
            return
        devices = {r["device"] for r in rs}
        for dev, v in self.lines:
            if dev in devices:
                ax.axhline(v, color="black", linestyle="--", linewidth=1,
                           label=self.label_text + (f" ({dev})" if len(self.lines) > 1 else ""))


class SpeedupBand:
    def label(self, _label, _pts):
        return ""

    def panel(self, ax, key, rs):
        lo, hi = SEED_SPEEDUP_BAND
        ax.axhspan(lo, hi, color="tab:green", alpha=0.15, label=f"seed's claim: {lo:g}-{hi:g}x")
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")


SPEEDUP_CAPTION = (
    "Speed-up = naive's median time / the kernel's, same case and device. Green band: the seed's claim "
    f"that tiled attention runs {SEED_SPEEDUP_BAND[0]:g}-{SEED_SPEEDUP_BAND[1]:g}x faster than naive at "
    "N = 1k-4k (README, 'What the numbers say'). Dotted line: 1x, as fast as naive.")


def fig_speedup(plt, styles, rows, ambiguous):
    pairs = speedups(rows)
    if not pairs:
        return None
    for r, s in pairs:
        r["_speedup"] = s
    return faceted(plt, styles, [r for r, _ in pairs], "speedup over naive: time(naive) / time(kernel)",
                   "speedup (x)", lambda r: r.get("_speedup"), logy=False, decorate=SpeedupBand(),
                   ambiguous=ambiguous, caption=SPEEDUP_CAPTION)


def fig_roofline(plt, styles, rows, ceilings):
    pts = [r for r in rows if r["bytes_moved"] > 0 and r["tflops"] > 0 and r["flops"] > 0]
    if not pts:
        return None
    devices = sorted({r["device"] for r in pts})
    roofless = [d for d in devices if not (ceiling(ceilings.get(d), "copy_gbps") or
                                           ceiling(ceilings.get(d), "gemm_bf16_tflops"))]
    caption = ("Intensity = model FLOPs / modelled bytes. Dashed roof: min(measured bf16 GEMM ceiling, "
               "intensity x measured copy bandwidth); the GEMM ceiling applies to fp16/bf16 only.")
    if roofless:
        caption += (f" No roof for {', '.join(roofless)}: no measured ceilings (flashbench measures them on "
                    "CUDA devices; pass --ceilings FILE).")
    scale, unit = rate_unit([r["tflops"] for r in pts], "TFLOP/s")
    dtypes = sorted({r["dtype"] for r in pts}, key=DTYPE_ORDER.index)
    fig, axes = grid(plt, len(dtypes), f"roofline: achieved {unit} vs arithmetic intensity (modelled bytes)")
    for ax, dt in zip(axes, dtypes):
        rs = [r for r in pts if r["dtype"] == dt]
        for kernel in OrderedDict.fromkeys(r["kernel"] for r in rs):
            ks = [r for r in rs if r["kernel"] == kernel]
            ax.scatter([r["flops"] / r["bytes_moved"] for r in ks], [r["tflops"] * scale for r in ks], s=14,
                       label=kernel, **{k: v for k, v in styles.of(kernel).items() if k in ("color", "marker")})
        ai = [r["flops"] / r["bytes_moved"] for r in rs]
        lo, hi = min(ai) / 2, max(ai) * 2
        for dev, c in ceilings.items():
            copy, gemm = ceiling(c, "copy_gbps"), ceiling(c, "gemm_bf16_tflops")
            suffix = f" ({dev})" if len(ceilings) > 1 else ""
            if copy:
                xs = [lo * (hi / lo) ** (i / 50) for i in range(51)]
                ys = [x * copy * GIGA / TERA * scale for x in xs]
                if gemm and dt in ("fp16", "bf16"):
                    ys = [min(y, gemm * scale) for y in ys]
                ax.plot(xs, ys, color="black", linestyle="--", linewidth=1, label="measured roof" + suffix)
            elif gemm and dt in ("fp16", "bf16"):
                ax.axhline(gemm * scale, color="black", linestyle="--", linewidth=1,
                           label="bf16 GEMM ceiling" + suffix)
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log_ticks(ax.xaxis)
        plain_log_ticks(ax.yaxis)
        ax.set_xlabel("FLOP per modelled byte")
        ax.set_ylabel(unit)
        ax.set_title(dt, fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    return finish(fig, axes, caption)


def fig_error(plt, styles, rows, ambiguous):
    """Errors vs fp64, one panel per (dtype, pass); lines per kernel (split by head_dim / mask when
    those vary within the panel)."""
    rs = [r for r in rows if r["ref_max_abs_err"] is not None]
    if not rs:
        return None
    panels = OrderedDict()
    for r in sorted(rs, key=lambda r: (DTYPE_ORDER.index(r["dtype"]), PASS_ORDER.index(r["pass"]))):
        panels.setdefault((r["dtype"], r["pass"]), []).append(r)
    fig, axes = grid(plt, len(panels), "max |error| vs the fp64 reference")
    for ax, ((dt, ps), prs) in zip(axes, panels.items()):
        vary_d = len({r["head_dim"] for r in prs}) > 1
        vary_mask = len({r["causal"] for r in prs}) > 1
        vary_heads = len({(r["heads"], r["kv_heads"]) for r in prs}) > 1
        groups = OrderedDict()
        for r in prs:
            label = r["kernel"] + (f" [{r['device']}]" if r["kernel"] in ambiguous else "")
            if vary_d:
                label += f" d={r['head_dim']}"
            if vary_mask:
                label += " " + mask_name(r["causal"])
            if vary_heads:
                label += f" H={r['heads']}/{r['kv_heads']}"
            groups.setdefault(label, []).append(r)
        nonfinite, zeros = [], []
        var = variants(groups)
        for label, g in groups.items():
            # Several batch sizes at one N: the worst error at that N.
            worst = {}
            for r in g:
                e = r["ref_max_abs_err"]
                if not math.isfinite(e):
                    nonfinite.append(r["seq"])
                elif e == 0:
                    zeros.append(r["seq"])
                else:
                    worst[r["seq"]] = max(worst.get(r["seq"], 0.0), e)
            if worst:
                xs = sorted(worst)
                ax.plot(xs, [worst[x] for x in xs], label=label, linewidth=1.4, markersize=4,
                        **styles.of(label, var[label]))
        ax.set_yscale("log")
        # Markers placed in axes fraction do not widen the data limits: set x from every N shown.
        seqs = [r["seq"] for r in prs]
        ax.set_xlim(min(seqs) / X_MARGIN, max(seqs) * X_MARGIN)
        if not any(line.get_xdata().size for line in ax.get_lines()):
            ax.text(0.5, 0.5, "no finite, non-zero error to draw", transform=ax.transAxes, ha="center",
                    fontsize=8, color="grey")
        if nonfinite:
            ax.scatter(nonfinite, [MARK_TOP] * len(nonfinite), marker="x", color="red", s=30, zorder=5,
                       transform=ax.get_xaxis_transform(), label="non-finite (inf/nan), off scale")
        if zeros:
            ax.scatter(zeros, [MARK_BOTTOM] * len(zeros), marker="v", color="grey", s=24, zorder=5,
                       transform=ax.get_xaxis_transform(), label="exactly 0, off scale")
        log2_x(ax, seqs)
        ax.set_ylabel("max |error|")
        ax.set_title(f"{dt}  {ps}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    return finish(fig, axes, "Max |kernel - fp64 reference| over the compared elements, worst output tensor "
                             "(O, LSE; dQ, dK, dV for the backward); the worst over batch sizes where a panel "
                             "holds several. Red x: a non-finite error, drawn at the top; grey triangle: "
                             "exactly 0, drawn at the bottom.")


def rate_unit(values, unit):
    """(scale, unit) for rates: below 1 (CPU runs, tiny cases), a thousandth of the unit, so that ticks
    read 20, 40 rather than 0.02, 0.04."""
    values = [v for v in values if v > 0 and math.isfinite(v)]
    if values and max(values) < 1:
        return 1e3, {"TFLOP/s": "GFLOP/s", "GB/s": "MB/s"}[unit]
    return 1.0, unit


def missing_ceiling_note(rows, ceilings, name):
    devices = sorted({r["device"] for r in rows if not ceiling(ceilings.get(r["device"]), name)})
    if not devices:
        return ""
    return (f" No ceiling drawn for {', '.join(devices)}: none measured (flashbench measures them on CUDA "
            "devices; pass --ceilings FILE).")


def build_figures(rows, ceilings, notes=None):
    """name -> matplotlib Figure, for every figure that has data."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = dedupe(rows, notes)
    styles = Styles(list(OrderedDict.fromkeys(r["kernel"] for r in rows)), plt)
    amb = label_files(rows)
    tensor_core = lambda key: key[0] in ("fp16", "bf16")  # noqa: E731  the bf16 GEMM ceiling's dtypes
    figs = OrderedDict()
    figs["time_vs_n"] = faceted(
        plt, styles, rows, "median time vs N", "time (ms)",
        lambda r: r["time_ms"]["median"] if r["time_ms"]["median"] > 0 else None, ambiguous=amb, plain_ticks=True,
        caption="Median of the timed runs, log-log. At a fixed batch the work grows as N^2 (a slope of 2); "
                "where batch x N is fixed (B*N in the legend) it grows as N (a slope of 1).")
    figs["speedup"] = fig_speedup(plt, styles, rows, amb)
    figs["memory"] = faceted(
        plt, styles, rows, "peak memory vs N", "peak bytes",
        lambda r: r["peak_bytes"] if r["peak_bytes"] > 0 else None, decorate=SlopeLabel(), ambiguous=amb,
        caption="Peak bytes a run allocated (outputs and workspace; inputs excluded). Slope: least-squares "
                "exponent of peak bytes in N (log-log) per line. At a fixed batch, naive's N x N arrays grow "
                "as N^2 (slope near 2) and tiled kernels' memory as N (slope 1); where batch x N is fixed "
                "(B*N in the legend) each slope is one lower: naive near 1, tiled near 0.")
    scale, unit = rate_unit([r["tflops"] for r in rows], "TFLOP/s")
    figs["tflops"] = faceted(
        plt, styles, rows, f"achieved {unit} (model FLOPs / median time)", unit,
        lambda r: r["tflops"] * scale if r["tflops"] > 0 else None, logy=False,
        decorate=CeilingLine(ceilings, "gemm_bf16_tflops", "measured bf16 GEMM ceiling", tensor_core, scale),
        ambiguous=amb,
        caption="FLOPs: 4 B H N^2 d for the forward, halved when causal; backward 2.5x, fwd+bwd 3.5x "
                "(FlashAttention's convention). Dashed: the device's measured cuBLAS bf16 GEMM peak, on "
                "fp16/bf16 panels." + missing_ceiling_note(rows, ceilings, "gemm_bf16_tflops"))
    scale_b, unit_b = rate_unit([r["gbps"] for r in rows if r["bytes_moved"] > 0], "GB/s")
    figs["gbps"] = faceted(
        plt, styles, rows, f"achieved {unit_b} (modelled bytes / median time)", unit_b,
        lambda r: r["gbps"] * scale_b if r["gbps"] > 0 and r["bytes_moved"] > 0 else None,
        decorate=CeilingLine(ceilings, "copy_gbps", "measured copy ceiling", scale=scale_b), ambiguous=amb,
        plain_ticks=True,
        caption="Modelled bytes: the fewest each algorithm must move to and from memory (bytes_moved, src/case.h), "
                "so a kernel that moves more than its model shows less than it achieves. Dashed: the "
                "device's measured copy bandwidth." + missing_ceiling_note(rows, ceilings, "copy_gbps"))
    figs["roofline"] = fig_roofline(plt, styles, rows, ceilings)
    figs["error"] = fig_error(plt, styles, rows, amb)
    return figs, plt


# ---------------------------------------------------------------------------------------------------
# CLI


def parse_args(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", metavar="RESULTS.json", help="flashbench / peers.py results files")
    p.add_argument("-o", "--outdir", required=True, help="folder for the plots (created if missing)")
    p.add_argument("--svg", action="store_true", help="also write SVG files")
    p.add_argument("--ceilings", metavar="JSON",
                   help="output of `flashbench info --ceilings --json` (overrides device.ceilings)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    notes = []
    try:
        rows, ceilings = load_rows(args.inputs, notes)
        if args.ceilings:
            c = read_ceilings_file(args.ceilings)
            ceilings = {dev: c for dev in ({r["device"] for r in rows})}
        if os.path.exists(args.outdir) and not os.path.isdir(args.outdir):
            raise InputError(f"-o {args.outdir}: exists and is not a folder")
    except InputError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return EXIT_INPUT

    try:
        figs, plt = build_figures(rows, ceilings, notes)
    except ImportError as e:
        print(f"{PROG}: needs matplotlib ({e}); pip install -r scripts/requirements.txt", file=sys.stderr)
        return EXIT_INPUT
    for note in notes:
        print(f"{PROG}: {note}", file=sys.stderr)
    # Render everything in memory first: a failure while drawing leaves the folder untouched.
    blobs = []
    for name, fig in figs.items():
        if fig is None:
            print(f"{PROG}: note: no data for {name}, not written", file=sys.stderr)
            continue
        for ext in ("png", "svg") if args.svg else ("png",):
            buf = io.BytesIO()
            fig.savefig(buf, format=ext, dpi=DPI)
            blobs.append((os.path.join(args.outdir, f"{name}.{ext}"), buf.getvalue()))
        plt.close(fig)

    try:
        os.makedirs(args.outdir, exist_ok=True)
        for path, data in blobs:
            tmp = path + ".tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
    except OSError as e:
        print(f"{PROG}: -o {args.outdir}: cannot write: {e}", file=sys.stderr)
        return EXIT_INPUT
    for path, _ in blobs:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
