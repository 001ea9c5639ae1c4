#!/usr/bin/env python3
"""Tests of scripts/: plot.py, peers.py (its torch-free parts), ncu_bytes.py (CSV parsing), sanitize.sh,
and the spec/results readers they share. Plain unittest: `python3 tests/test_scripts.py`.

Needs matplotlib (scripts/requirements.txt) for the plot tests; without it the other tests still run and
the exit status is 77 (ctest: skipped) if they pass. PyTorch, ncu and compute-sanitizer are never
needed: peers.py is tested up to the point where it imports torch, and the GPU tools are stand-ins.
When FLASHBENCH_EXE names a built flashbench, a tiny CPU sweep checks that the Python spec expansion
matches flashbench's and that plot.py reads what flashbench writes.

Exit status: 0 all passed, 1 a test failed, 77 matplotlib missing (and nothing else failed).
"""

import contextlib
import importlib.util
import io
import json
import math
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "scripts")
RESULTS_FIXTURES = os.path.join(ROOT, "tests", "data", "results")
PLOT_FIXTURES = os.path.join(ROOT, "tests", "data", "plots")
sys.path.insert(0, SCRIPTS)

import fbresults  # noqa: E402
import fbspec  # noqa: E402
import ncu_bytes  # noqa: E402
import peers  # noqa: E402
import ratios  # noqa: E402

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
if HAVE_MATPLOTLIB:
    import plot  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
EXIT_SKIP = 77
FLASHBENCH_EXE = os.environ.get("FLASHBENCH_EXE", "")


def run_script(name, *args, env=None, cwd=None):
    return subprocess.run([sys.executable, os.path.join(SCRIPTS, name), *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=600)


def png_size(path):
    """(width, height) from a PNG's IHDR chunk; AssertionError if the file is not a PNG."""
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == PNG_SIGNATURE, f"{path}: not a PNG"
    assert head[12:16] == b"IHDR", f"{path}: no IHDR chunk first"
    return struct.unpack(">II", head[16:24])


def fixture(*parts):
    return os.path.join(*parts)


# ---------------------------------------------------------------------------------------------------
# plot.py


@unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is not installed (pip install -r scripts/requirements.txt)")
class PlotCli(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="fb-plot-")
        self.addCleanup(shutil.rmtree, self.tmp)

    def assert_every_figure(self, out, stdout, svg):
        exts = ("png", "svg") if svg else ("png",)
        expected = {f"{name}.{ext}" for name in plot.FIGURES for ext in exts}
        self.assertEqual(set(os.listdir(out)), expected)
        self.assertEqual({os.path.basename(p) for p in stdout.split()}, expected, "stdout lists the files written")
        for name in expected:
            path = os.path.join(out, name)
            self.assertGreater(os.path.getsize(path), 0, name)
            if name.endswith(".png"):
                w, h = png_size(path)
                self.assertGreater(w, 0, name)
                self.assertGreater(h, 0, name)
            else:
                with open(path) as f:
                    text = f.read()
                self.assertIn("<svg", text, name)

    def test_flashbench_and_peers_fixtures_give_every_figure(self):
        out = os.path.join(self.tmp, "plots")
        r = run_script("plot.py", fixture(RESULTS_FIXTURES, "base.json"), fixture(PLOT_FIXTURES, "peers.json"),
                       "-o", out, "--svg", "--ceilings", fixture(PLOT_FIXTURES, "ceilings.json"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_every_figure(out, r.stdout, svg=True)

    def test_overlapping_files_with_failed_records_plot(self):
        # Two runs of the same cases (one with a failed record): each (case, kernel) is drawn once, with
        # a warning that names both files, and the failed record is left out.
        out = os.path.join(self.tmp, "plots")
        r = run_script("plot.py", fixture(RESULTS_FIXTURES, "failed.json"), fixture(RESULTS_FIXTURES, "missing.json"),
                       "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_every_figure(out, r.stdout, svg=False)
        self.assertRegex(r.stderr, r"warning: \d+ results \(case, kernel\) of (failed|missing)\.json are also in")

    def test_mixed_glob_skips_non_results_files_with_a_hint(self):
        # `plot.py results/h200/*.json` also catches ceilings.json: skipped with a note, not refused.
        out = os.path.join(self.tmp, "plots")
        ceilings = fixture(PLOT_FIXTURES, "ceilings.json")
        other = os.path.join(self.tmp, "notes.json")
        with open(other, "w") as f:
            json.dump({"measurements": []}, f)
        r = run_script("plot.py", fixture(RESULTS_FIXTURES, "base.json"), ceilings, other, "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_every_figure(out, r.stdout, svg=False)
        self.assertIn(f"note: {ceilings}: holds ceilings, not results: pass it as --ceilings {ceilings}; skipped",
                      r.stderr)
        self.assertIn(f"note: {other}: not a results file", r.stderr)
        # Nothing but such files: nothing to plot.
        r = run_script("plot.py", ceilings, "-o", os.path.join(self.tmp, "none"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("no results file among", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "none")))

    def test_interrupted_run_is_drawn_with_a_note(self):
        with open(fixture(RESULTS_FIXTURES, "base.json")) as f:
            doc = json.load(f)
        doc["complete"] = False
        partial = os.path.join(self.tmp, "partial.json")
        with open(partial, "w") as f:
            json.dump(doc, f)
        r = run_script("plot.py", partial, "-o", os.path.join(self.tmp, "plots"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("partial.json is an interrupted run", r.stderr)

    def test_figures_without_data_are_left_out_with_a_note(self):
        # Peers only: no naive to divide by, no byte model: speedup, gbps and roofline have nothing.
        out = os.path.join(self.tmp, "plots")
        r = run_script("plot.py", fixture(PLOT_FIXTURES, "peers.json"), "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(set(os.listdir(out)), {"time_vs_n.png", "memory.png", "tflops.png", "error.png"})
        for name in ("speedup", "gbps", "roofline"):
            self.assertIn(f"no data for {name}", r.stderr)

    def test_bad_input_exits_2_with_one_message_and_writes_nothing(self):
        cases = {
            "bad_major.json": "schema_version: '2.0.0' is not supported",
            "no_ok.json": "no result with status ok",
            "bad_field.json": "results[1].time_ms.median: expected a number",
            "malformed.json": "malformed JSON",
            "empty.json": "empty file",
            "does-not-exist.json": "cannot open",
        }
        for name, message in cases.items():
            with self.subTest(input=name):
                out = os.path.join(self.tmp, "out-" + name)
                path = fixture(PLOT_FIXTURES, name)
                r = run_script("plot.py", path, "-o", out)
                self.assertEqual(r.returncode, 2, r.stderr)
                lines = r.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, r.stderr)
                self.assertIn(message, lines[0])
                if name != "no_ok.json":
                    self.assertIn(name, lines[0], "the message names the file")
                self.assertEqual(r.stdout, "")
                self.assertFalse(os.path.exists(out), "nothing written")

    def test_one_bad_file_among_good_ones_writes_nothing(self):
        out = os.path.join(self.tmp, "existing")
        os.mkdir(out)
        r = run_script("plot.py", fixture(RESULTS_FIXTURES, "base.json"), fixture(PLOT_FIXTURES, "bad_major.json"),
                       "-o", out)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(os.listdir(out), [])

    def test_output_path_that_is_a_file_is_refused(self):
        path = os.path.join(self.tmp, "a-file")
        open(path, "w").close()
        r = run_script("plot.py", fixture(RESULTS_FIXTURES, "base.json"), "-o", path)
        self.assertEqual(r.returncode, 2)
        self.assertIn("not a folder", r.stderr)

    def test_bad_ceilings_file_is_refused(self):
        r = run_script("plot.py", fixture(RESULTS_FIXTURES, "base.json"), "-o", os.path.join(self.tmp, "o"),
                       "--ceilings", fixture(PLOT_FIXTURES, "peers.json"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("--ceilings", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "o")))


@unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is not installed")
class PlotContent(unittest.TestCase):
    """What the figures hold, read back from the matplotlib objects."""

    @classmethod
    def setUpClass(cls):
        rows, ceilings = plot.load_rows([fixture(RESULTS_FIXTURES, "base.json"), fixture(PLOT_FIXTURES, "peers.json")])
        ceilings = {dev: plot.read_ceilings_file(fixture(PLOT_FIXTURES, "ceilings.json")) for dev in ceilings or
                    {r["device"] for r in rows}}
        cls.figs, cls.plt = plot.build_figures(rows, ceilings)

    @classmethod
    def tearDownClass(cls):
        cls.plt.close("all")

    def labels(self, ax):
        handles, labels = ax.get_legend_handles_labels()
        return labels

    def panel(self, fig, title_part):
        axes = [ax for ax in fig.axes if ax.get_visible() and title_part in ax.get_title()]
        self.assertTrue(axes, f"no panel titled with {title_part!r}")
        return axes[0]

    def test_speedup_band_drawn_on_every_panel(self):
        for ax in (a for a in self.figs["speedup"].axes if a.get_visible()):
            self.assertIn("seed's claim: 2-4x", self.labels(ax))
            band = [p for p in ax.patches if p.get_label().startswith("seed's claim")]
            self.assertEqual(len(band), 1)
            # A data-space y span over the whole width: its extent in data coordinates is [2, 4].
            box = band[0].get_path().get_extents(band[0].get_patch_transform())
            self.assertAlmostEqual(box.y0, plot.SEED_SPEEDUP_BAND[0])
            self.assertAlmostEqual(box.y1, plot.SEED_SPEEDUP_BAND[1])

    def test_speedup_values_are_naive_over_kernel(self):
        ax = self.panel(self.figs["speedup"], "bf16  d=128  full  fwd")
        line = next(l for l in ax.get_lines() if l.get_label() == "flash")
        with open(fixture(RESULTS_FIXTURES, "base.json")) as f:
            recs = json.load(f)["results"]
        t = {(r["kernel"], r["case"]["seq"]): r["time_ms"]["median"] for r in recs
             if r["key"].endswith("-d128-bf16-full-fwd") and r["case"]["heads"] == 16 and r["status"] == "ok"}
        for n, s in zip(line.get_xdata(), line.get_ydata()):
            self.assertAlmostEqual(s, t[("naive", n)] / t[("flash", n)], places=9)

    def test_memory_legend_gives_fitted_slopes(self):
        ax = self.panel(self.figs["memory"], "bf16  d=128  full  fwd")
        slopes = {l.split()[0]: float(l.split("slope ")[1]) for l in self.labels(ax)}
        # Each legend slope is numpy's least-squares line through the ok points of the fixtures.
        import numpy as np
        points = {}
        for path in (fixture(RESULTS_FIXTURES, "base.json"), fixture(PLOT_FIXTURES, "peers.json")):
            for r in fbresults.load_results(path)["results"]:
                if (r["status"] == "ok" and r["key"].startswith("b4-h16-kv16-")
                        and r["key"].endswith("-d128-bf16-full-fwd")):
                    points.setdefault(r["kernel"], []).append((r["case"]["seq"], r["peak_bytes"]))
        self.assertEqual(set(slopes), set(points))
        for kernel, pts in points.items():
            fit = np.polyfit(np.log([n for n, _ in pts]), np.log([b for _, b in pts]), 1)[0]
            self.assertAlmostEqual(slopes[kernel], fit, places=2, msg=kernel)
        # Materialising N x N grows faster than tiling: the fixture's lines say so.
        self.assertGreater(slopes["naive"], slopes["flash"] + 0.5)

    def test_gemm_ceiling_only_on_tensor_core_dtypes(self):
        bf16 = self.panel(self.figs["tflops"], "bf16")
        self.assertIn("measured bf16 GEMM ceiling", self.labels(bf16))
        fp64 = self.panel(self.figs["tflops"], "fp64")
        self.assertNotIn("measured bf16 GEMM ceiling", self.labels(fp64))
        self.assertIn("measured copy ceiling", self.labels(self.panel(self.figs["gbps"], "bf16")))

    def test_tflops_axis_starts_at_zero(self):
        for ax in (a for a in self.figs["tflops"].axes if a.get_visible()):
            self.assertEqual(ax.get_ylim()[0], 0)

    def test_nonfinite_and_zero_errors_are_marked_not_dropped(self):
        bf16 = self.panel(self.figs["error"], "bf16  fwd")
        self.assertIn("non-finite (inf/nan), off scale", self.labels(bf16))
        nan_marks = [c for c in bf16.collections if c.get_label().startswith("non-finite")][0]
        self.assertEqual([x for x, _ in nan_marks.get_offsets()], [8192])
        fp64 = self.panel(self.figs["error"], "fp64  fwd")
        zero_marks = [c for c in fp64.collections if c.get_label().startswith("exactly 0")][0]
        self.assertEqual(sorted(x for x, _ in zero_marks.get_offsets()), [256, 512, 1024])
        self.assertEqual(fp64.get_yscale(), "log")

    def test_time_panels_are_log_log(self):
        for ax in (a for a in self.figs["time_vs_n"].axes if a.get_visible()):
            self.assertEqual((ax.get_xscale(), ax.get_yscale()), ("log", "log"))

    def test_one_legend_below_the_panels_and_a_caption(self):
        for name, fig in self.figs.items():
            with self.subTest(figure=name):
                self.assertEqual(len(fig.legends), 1, "one figure legend")
                self.assertTrue(all(ax.get_legend() is None for ax in fig.axes), "no legend over a panel")
                legend_top = fig.legends[0].get_window_extent(fig.canvas.get_renderer()).y1
                lowest_panel = min(ax.get_position().y0 for ax in fig.axes if ax.get_visible())
                self.assertLessEqual(legend_top, lowest_panel * fig.bbox.height)
                self.assertTrue(fig.texts, "a caption")
        caption = " ".join(t.get_text() for t in self.figs["speedup"].texts)
        self.assertIn("seed's claim", caption)
        self.assertIn("1x", caption)
        caption = " ".join(t.get_text() for t in self.figs["memory"].texts)
        self.assertIn("N^2 (slope near 2)", caption)
        labels = [t.get_text() for t in self.figs["memory"].legends[0].get_texts()]
        self.assertTrue(any(l.startswith("naive") and "slope" in l for l in labels), labels)

    def test_small_rates_use_smaller_units(self):
        # A CPU run's TFLOP/s sit at a few hundredths: the axis says GFLOP/s and reads 10, 20.
        rows, _ = plot.load_rows([fixture(RESULTS_FIXTURES, "base.json")])
        top_tflops = max(x["tflops"] for x in rows)
        top_gbps = max(x["gbps"] for x in rows)
        for r in rows:
            r["tflops"] *= 1e-3 / top_tflops  # at most 1 GFLOP/s
            r["gbps"] *= 1e-3 / top_gbps
        figs, plt = plot.build_figures(rows, {})
        try:
            ax = next(a for a in figs["tflops"].axes if a.get_visible())
            self.assertEqual(ax.get_ylabel(), "GFLOP/s")
            self.assertLessEqual(max(max(l.get_ydata()) for l in ax.get_lines()), 1.0 + 1e-9)
            self.assertGreater(max(max(l.get_ydata()) for l in ax.get_lines()), 0.1)
            self.assertEqual(next(a for a in figs["gbps"].axes if a.get_visible()).get_ylabel(), "MB/s")
            caption = " ".join(" ".join(t.get_text().split()) for t in figs["roofline"].texts)
            self.assertIn("No roof for", caption)
        finally:
            for f in figs.values():
                if f is not None:
                    plt.close(f)


class PlotHelpers(unittest.TestCase):
    @unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is not installed")
    def test_fit_loglog_slope(self):
        ns = [256, 512, 1024, 4096]
        self.assertAlmostEqual(plot.fit_loglog_slope(ns, [3 * n * n for n in ns]), 2.0, places=12)
        self.assertAlmostEqual(plot.fit_loglog_slope(ns, [7 * n + 0.0 for n in ns]), 1.0, places=12)
        self.assertIsNone(plot.fit_loglog_slope([1024, 1024], [1, 2]), "one distinct N: no slope")
        self.assertAlmostEqual(plot.fit_loglog_slope([0, 2, 4, 8], [5, 4, 16, math.nan]), 2.0, places=12)

    @unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is not installed")
    def test_speedups_pair_same_case_same_device_only(self):
        def row(kernel, key, device, ms):
            return {"kernel": kernel, "key": key, "device": device, "time_ms": {"median": ms}}
        rows = [row("naive", "k1", "A", 4.0), row("flash", "k1", "A", 2.0), row("flash", "k1", "B", 1.0),
                row("flash", "k2", "A", 1.0), row("torch-flash", "k1", "A", 1.0)]
        got = {(r["kernel"], r["device"], r["key"]): s for r, s in plot.speedups(rows)}
        self.assertEqual(got, {("flash", "A", "k1"): 2.0, ("torch-flash", "A", "k1"): 4.0})


# ---------------------------------------------------------------------------------------------------
# The results reader (shared by the scripts)


def results_doc(records):
    return {"schema_version": fbresults.SCHEMA_VERSION, "tool": {"name": "t", "version": "0", "git": "x"},
            "created": "2025-01-01T00:00:00Z", "backend": "torch", "device": {}, "spec": {},
            "settings": {"warmup": 0, "reps": 1}, "results": records}


class ResultsReader(unittest.TestCase):

    def test_every_committed_results_fixture_reads(self):
        for name in sorted(os.listdir(RESULTS_FIXTURES)):
            if name.endswith(".json"):
                with self.subTest(fixture=name):
                    self.assertTrue(fbresults.load_results(fixture(RESULTS_FIXTURES, name))["results"])

    def test_nonfinite_strings_decode(self):
        case = {"batch": 1, "heads": 1, "kv_heads": 1, "seq": 8, "head_dim": 32, "dtype": "fp16", "causal": True,
                "pass": "fwd"}
        rec = peers.make_record(case, "torch-flash", "ok", times_ms=[1.0], errors={"O": math.nan})
        doc = fbresults.results_from_json(json.loads(json.dumps(results_doc([rec]))))
        self.assertEqual(doc["results"][0]["ref_max_abs_err"], math.inf, "NaN anywhere counts as inf")
        self.assertTrue(math.isnan(fbresults.decode_number("nan", "x")))

    def test_refusals_name_the_field(self):
        case = {"batch": 1, "heads": 1, "kv_heads": 1, "seq": 8, "head_dim": 32, "dtype": "fp16", "causal": False,
                "pass": "fwd"}
        good = peers.make_record(case, "torch-flash", "ok", times_ms=[1.0])
        bad = [
            (dict(good, key="b2-h1-kv1-n8-d32-fp16-full-fwd"), "results[0].key"),
            (dict(good, flops=True), "results[0].flops: expected a number"),
            (dict(good, status="done"), "results[0].status"),
            (dict(good, case=dict(case, dtype="e5m2")), "results[0].case.dtype"),
            (dict(good, memory={"peak_bytes": -1}), "results[0].memory.peak_bytes"),
            ({k: v for k, v in good.items() if k != "errors"}, "results[0].errors: missing"),
            (dict(good, case=dict(case, seq_q=8, seq_k=9)), "results[0].case.seq: 8 does not match"),
            (dict(good, case={k: v for k, v in case.items() if k != "seq"}), "results[0].case.seq: missing"),
        ]
        for rec, message in bad:
            with self.subTest(message=message):
                with self.assertRaises(fbresults.ResultsError) as cm:
                    fbresults.results_from_json(results_doc([rec]))
                self.assertIn(message, str(cm.exception))


# ---------------------------------------------------------------------------------------------------
# ratios.py: a kernel against a peer, case by case


class Ratios(unittest.TestCase):
    CASE = {"batch": 1, "heads": 2, "kv_heads": 2, "seq": 64, "head_dim": 64, "dtype": "bf16", "causal": False,
            "pass": "fwd"}

    def rec(self, kernel, ms, verified=True, **case):
        r = peers.make_record(dict(self.CASE, **case), kernel, "ok", times_ms=[ms])
        r["verified"] = verified
        return r

    def write(self, tmp, name, records):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            json.dump(results_doc(records), f)
        return path

    def write_times(self, tmp, name, kernel, times, seqs=(64, 128, 256)):
        """One kernel's verified results at seq 64, 128, 256 (the given median times)."""
        return self.write(tmp, name, [self.rec(kernel, ms, seq=seq) for ms, seq in zip(times, seqs)])

    def test_peers_timed_without_the_launch_hold_are_named_on_stderr(self):
        with tempfile.TemporaryDirectory() as tmp:
            def write_doc(name, records, **changes):
                doc = results_doc(records)
                doc.update(changes)
                path = os.path.join(tmp, name)
                with open(path, "w") as f:
                    json.dump(doc, f)
                return path
            ours = write_doc("ours.json", [self.rec("k", 1.0)], backend="cuda")  # flashbench's: never named
            old = write_doc("old.json", [self.rec("p", 2.0, None)])  # peers.py before session 44
            held = write_doc("held.json", [self.rec("q", 2.0, None)], settings={"warmup": 0, "reps": 1,
                                                                                "launch_hold": True})
            r = run_script("ratios.py", ours, old, held, "--pair", "k:p", "--pair", "k:q")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("old.json: peers timed without the launch hold", r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertRegex(r.stdout, r"b1-h2-kv2-n64-d64-bf16-full-fwd\s+2\.000")

    def test_mixed_flushes_and_holds_are_named_on_stderr(self):
        # A round whose flashbench and peers files were timed under different L2 flushes (FB_L2_FLUSH), or held peers
        # files behind different launch holds: the ratios are printed, and stderr says what they mix.
        with tempfile.TemporaryDirectory() as tmp:
            def write_doc(name, records, **settings):
                doc = results_doc(records)
                doc["settings"] = {"warmup": 0, "reps": 1, **settings}
                if name.startswith("ours"):
                    doc["backend"] = "cuda"  # flashbench's
                path = os.path.join(tmp, name)
                with open(path, "w") as f:
                    json.dump(doc, f)
                return path
            ours1 = write_doc("ours1.json", [self.rec("k", 1.0)])  # no l2_flush_mode: the write (before session 54)
            ours2 = write_doc("ours2.json", [self.rec("k", 1.0)], l2_flush_mode="clean")
            busy = write_doc("busy.json", [self.rec("p", 2.0, None)], launch_hold=True, launch_hold_kind="busy",
                             l2_flush_mode="write")
            spin = write_doc("spin.json", [self.rec("p", 2.0, None)], launch_hold=True, launch_hold_kind="spin",
                             l2_flush_mode="clean")
            busy_clean = write_doc("busy_clean.json", [self.rec("p", 2.0, None)], launch_hold=True,
                                   launch_hold_kind="busy", l2_flush_mode="clean")
            same = run_script("ratios.py", "--round", ours1, busy, "--round", ours2, busy_clean, "--pair", "k:p")
            self.assertEqual(same.returncode, 0, same.stderr)
            self.assertEqual(same.stderr, "")
            mixed = run_script("ratios.py", "--round", ours1, busy, "--round", ours1, spin, "--pair", "k:p")
            self.assertEqual(mixed.returncode, 0, mixed.stderr)
            self.assertRegex(mixed.stdout, r"b1-h2-kv2-n64-d64-bf16-full-fwd\s+2\.000")
            lines = mixed.stderr.strip().splitlines()
            self.assertEqual(len(lines), 2, mixed.stderr)
            self.assertIn("round 2: the files were timed under different L2 flushes (clean: ", lines[0])
            self.assertIn("spin.json", lines[0])
            self.assertIn("different launch holds (busy: ", lines[1])

    def test_mixed_rep_orders_are_named_on_stderr(self):
        # Session 64: peers files whose reps were interleaved (settings.rep_order) against files timed back to back
        # (files before session 64 do not say: blocked). Named between rounds; the same order, or flashbench's files
        # (no rep_order), not named.
        with tempfile.TemporaryDirectory() as tmp:
            def write_doc(name, records, backend="torch", **settings):
                doc = results_doc(records)
                doc["backend"] = backend
                doc["settings"] = {"warmup": 0, "reps": 1, "launch_hold": True, "launch_hold_kind": "busy",
                                   **settings}
                path = os.path.join(tmp, name)
                with open(path, "w") as f:
                    json.dump(doc, f)
                return path
            ours = write_doc("ours.json", [self.rec("k", 1.0)], backend="cuda")
            old = write_doc("old.json", [self.rec("p", 2.0, None)])  # no rep_order: blocked
            blocked = write_doc("blocked.json", [self.rec("p", 2.0, None)], rep_order="blocked")
            inter = write_doc("inter.json", [self.rec("p", 2.0, None)], rep_order="interleaved")
            same = run_script("ratios.py", "--round", ours, old, "--round", ours, blocked, "--pair", "k:p")
            self.assertEqual(same.returncode, 0, same.stderr)
            self.assertEqual(same.stderr, "")
            mixed = run_script("ratios.py", "--round", ours, blocked, "--round", ours, inter, "--pair", "k:p")
            self.assertEqual(mixed.returncode, 0, mixed.stderr)
            lines = mixed.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, mixed.stderr)
            self.assertIn("took their reps in different orders (blocked: ", lines[0])
            self.assertIn("interleaved: " + inter, lines[0])
        self.assertIsNone(ratios.rep_order_of({"backend": "cuda", "settings": {"rep_order": "interleaved"}}))

    def test_sides_in_different_places_are_named_on_stderr(self):
        # Session 55's call O: flash-sm90 timed first in flashbench's cases (the spec reversed) against torch-cudnn
        # timed second in peers.py's (after torch-flash). A round whose pair stands in different places is named,
        # a round with both in the same place is not; --kernels (settings.overrides.kernels) outranks the spec.
        with tempfile.TemporaryDirectory() as tmp:
            def write_doc(name, kernels, spec_kernels=None, overrides=None, backends=None):
                doc = results_doc([self.rec(k, 1.0 if k.startswith("flash") else 2.0, None) for k in kernels])
                if backends is None:
                    doc["backend"] = "cuda"  # flashbench's
                    if spec_kernels is not None:
                        doc["spec"] = {"kernels": spec_kernels}
                    if overrides is not None:
                        doc["settings"]["overrides"] = {"kernels": overrides}
                else:
                    doc["settings"].update(backends=backends, launch_hold=True, launch_hold_kind="busy")
                path = os.path.join(tmp, name)
                with open(path, "w") as f:
                    json.dump(doc, f)
                return path
            both = ["flash", "flash-sm90"]
            asis = write_doc("asis.json", both, spec_kernels=both)
            rev = write_doc("rev.json", both, spec_kernels=both[::-1])
            flag = write_doc("flag.json", both, spec_kernels=both, overrides=both[::-1])  # run --kernels sm90,flash
            unknown = write_doc("unknown.json", both)  # a spec without kernels: the order is the registry's
            peers2 = write_doc("peers2.json", ["torch-flash", "torch-cudnn"], backends=["torch-flash", "torch-cudnn"])
            peers1 = write_doc("peers1.json", ["torch-flash", "torch-cudnn"], backends=["torch-cudnn", "torch-flash"])
            pairs = ["--pair", "flash-sm90:torch-cudnn", "--pair", "flash:torch-flash"]
            same = run_script("ratios.py", "--round", asis, peers2, "--round", rev, peers1, "--round", unknown,
                              peers1, *pairs)
            self.assertEqual(same.returncode, 0, same.stderr)
            self.assertEqual(same.stderr, "")
            mixed = run_script("ratios.py", "--round", asis, peers2, "--round", flag, peers2, *pairs)
            self.assertEqual(mixed.returncode, 0, mixed.stderr)
            self.assertRegex(mixed.stdout, r"b1-h2-kv2-n64-d64-bf16-full-fwd\s+2\.000")
            lines = mixed.stderr.strip().splitlines()
            self.assertEqual(len(lines), 2, mixed.stderr)
            self.assertIn("round 2: flash-sm90 is timed 1st in its cases (", lines[0])
            self.assertIn("flag.json), torch-cudnn 2nd (", lines[0])
            self.assertIn("round 2: flash is timed 2nd in its cases (", lines[1])
            self.assertIn("torch-flash 1st", lines[1])
            self.assertEqual([ratios.ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 111)],
                             ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "111th"])

    def test_reps_that_drifted_are_noted(self):
        # A timing whose second half of reps reads more than 3% off its first half (fbresults.rep_drift, run's
        # summary's rule) gets a note naming the side and the round; steady reps and peers files without reps none.
        climbing = [19.15, 19.51, 19.92, 20.83, 20.91, 21.53, 21.89, 21.89, 22.14, 22.65]  # results/h100/s55/T
        self.assertAlmostEqual(fbresults.rep_drift(climbing), 21.89 / 19.92 - 1, places=12)
        self.assertAlmostEqual(fbresults.rep_drift([4, 4, 4, 9, 2, 2, 2]), -0.5, places=12)  # the middle rep left out
        self.assertTrue(math.isnan(fbresults.rep_drift([1, 2, 3, 4, 5])))
        self.assertTrue(math.isnan(fbresults.rep_drift([0, 0, 0, 1, 1, 1])))
        with tempfile.TemporaryDirectory() as tmp:
            def rec(kernel, times, verified=True):
                r = peers.make_record(self.CASE, kernel, "ok", times_ms=times)
                r["verified"] = verified
                return r
            self.assertEqual(rec("p", [1.0, 2.0])["time_ms"]["samples"], [1.0, 2.0], "peers.py keeps its reps")
            steady = [19.0, 19.1, 19.2, 19.4, 19.3, 19.4, 19.4, 19.4, 19.0, 19.0]
            ours1 = self.write(tmp, "ours1.json", [rec("k", climbing)])
            ours2 = self.write(tmp, "ours2.json", [rec("k", steady)])
            peer = self.write(tmp, "peer.json", [rec("p", [20.0] * 10, None)])
            old = self.write(tmp, "old.json", [rec("p", [20.0] * 10, None)])
            with open(old) as f:
                doc = json.load(f)
            del doc["results"][0]["time_ms"]["samples"]  # a peers.py file from before session 55
            with open(old, "w") as f:
                json.dump(doc, f)
            r = run_script("ratios.py", "--round", ours1, peer, "--round", ours2, old, "--pair", "k:p")
            self.assertEqual(r.returncode, 0, r.stderr)
            row = next(line for line in r.stdout.splitlines() if "b1-h2-kv2-n64-d64-bf16-full-fwd" in line)
            self.assertIn("reps drifted: k +9.9% in round 1", row)
            self.assertNotIn("round 2", row)
            one = run_script("ratios.py", ours2, peer, "--pair", "k:p")
            self.assertNotIn("drifted", one.stdout)

    def test_ratio_is_peer_over_ours_and_summary_is_its_geomean(self):
        with tempfile.TemporaryDirectory() as tmp:
            ours = self.write(tmp, "ours.json", [self.rec("k", 1.0), self.rec("k", 2.0, seq=128),
                                                 self.rec("k", 1.0, causal=True)])
            peer = self.write(tmp, "peer.json", [self.rec("p", 2.0, None), self.rec("p", 1.0, None, seq=128),
                                                 self.rec("p", 1.0, None, causal=True)])
            r = run_script("ratios.py", ours, peer, "--pair", "k:p")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertRegex(r.stdout, r"b1-h2-kv2-n64-d64-bf16-full-fwd\s+2\.000")
            self.assertRegex(r.stdout, r"b1-h2-kv2-n128-d64-bf16-full-fwd\s+0\.500")
            # 2.0, 0.5 and 1.0: geomean 1.0, two of three at >= 1.0, the worst is the 0.5 case
            self.assertIn("k vs p fwd bf16: 0.500–2.000x, geomean 1.000, >= 1.0 in 2 of 3; "
                          "worst b1-h2-kv2-n128-d64-bf16-full-fwd", r.stdout)

    def test_a_wrong_kernel_gets_no_ratio(self):
        with tempfile.TemporaryDirectory() as tmp:
            ours = self.write(tmp, "ours.json", [self.rec("k", 1.0), self.rec("k", 0.1, False, seq=128)])
            peer = self.write(tmp, "peer.json", [self.rec("p", 1.0), self.rec("p", 1.0, seq=128)])
            r = run_script("ratios.py", ours, peer, "--pair", "k:p", "--markdown")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("| b1-h2-kv2-n128-d64-bf16-full-fwd | — | not verified: no ratio |", r.stdout)
            self.assertIn("| k vs p | fwd | bf16 | 1 | 1.00× | 1.00× | 1.000 | 1 of 1 |", r.stdout,
                          "the fast unverified case must not lift the summary")
            self.assertIn("left out of the summary: 1 case(s)", r.stdout)

    def test_bad_input_exits_2_with_one_line_and_no_output(self):
        with tempfile.TemporaryDirectory() as tmp:
            ours = self.write(tmp, "ours.json", [self.rec("k", 1.0)])
            peer = self.write(tmp, "peer.json", [self.rec("p", 1.0)])
            bad = [
                (["--pair", "k-p"], "--pair: 'k-p' is not OURS:PEER"),
                (["--pair", "k:k"], "compares a kernel with itself"),
                (["--pair", "k:torch-cudnn"], "no file has results of kernel 'torch-cudnn'"),
            ]
            for extra, message in bad:
                with self.subTest(args=extra):
                    r = run_script("ratios.py", ours, peer, *extra)
                    self.assertEqual(r.returncode, 2)
                    self.assertEqual(r.stdout, "")
                    self.assertIn(message, r.stderr)
                    self.assertEqual(len(r.stderr.strip().splitlines()), 1)
            r = run_script("ratios.py", ours, ours, "--pair", "k:p")
            self.assertEqual((r.returncode, r.stdout), (2, ""))
            self.assertIn("is also in", r.stderr)
            r = run_script("ratios.py", ours, os.path.join(tmp, "missing.json"), "--pair", "k:p")
            self.assertEqual((r.returncode, r.stdout), (2, ""))
            self.assertIn("missing.json: cannot open", r.stderr)

    def test_rounds_take_each_rounds_ratio_and_flag_cases_behind_in_every_round(self):
        with tempfile.TemporaryDirectory() as tmp:
            # n64: 2.0 then 0.5 (combined 1.0, not behind in every round); n128: 0.9 then 0.8 (behind in both);
            # n256: 1.1 then 1.2 (ahead in both)
            o1 = self.write_times(tmp, "o1.json", "k", [1.0, 1.0, 1.0])
            p1 = self.write_times(tmp, "p1.json", "p", [2.0, 0.9, 1.1])
            o2 = self.write_times(tmp, "o2.json", "k", [2.0, 1.0, 1.0])
            p2 = self.write_times(tmp, "p2.json", "p", [1.0, 0.8, 1.2])
            r = run_script("ratios.py", "--round", o1, p1, "--round", o2, p2, "--pair", "k:p")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertRegex(r.stdout, r"b1-h2-kv2-n64-d64-bf16-full-fwd\s+2\.000\s+0\.500\s+1\.000\n")
            self.assertRegex(r.stdout, r"b1-h2-kv2-n128-d64-bf16-full-fwd\s+0\.900\s+0\.800\s+0\.849\s+"
                                       r"behind in every round\n")
            self.assertRegex(r.stdout, r"b1-h2-kv2-n256-d64-bf16-full-fwd\s+1\.100\s+1\.200\s+1\.149\n")
            self.assertIn("k vs p fwd bf16: 0.849–1.149x, geomean 0.992, >= 1.0 in 2 of 3; ahead in every round 1, "
                          "behind in every round 1; worst b1-h2-kv2-n128-d64-bf16-full-fwd", r.stdout)
            r = run_script("ratios.py", "--round", o1, p1, "--round", o2, p2, "--pair", "k:p", "--markdown")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("| b1-h2-kv2-n128-d64-bf16-full-fwd | 0.900× | 0.800× | 0.849× | behind in every round |",
                          r.stdout)
            self.assertIn("| k vs p | fwd | bf16 | 3 | 0.85× | 1.15× | 0.992 | 2 of 3 | 1 | 1 | "
                          "b1-h2-kv2-n128-d64-bf16-full-fwd |", r.stdout)

    def test_a_round_with_a_wrong_or_missing_result_gives_no_ratio(self):
        with tempfile.TemporaryDirectory() as tmp:
            o1 = self.write_times(tmp, "o1.json", "k", [1.0, 1.0, 1.0])
            p1 = self.write_times(tmp, "p1.json", "p", [1.0, 1.0, 1.0])
            # round 2: n128 fast and wrong, n256 not run
            o2 = self.write(tmp, "o2.json", [self.rec("k", 1.0), self.rec("k", 0.1, False, seq=128)])
            p2 = self.write_times(tmp, "p2.json", "p", [1.0, 1.0, 1.0])
            r = run_script("ratios.py", "--round", o1, p1, "--round", o2, p2, "--pair", "k:p")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertRegex(r.stdout, r"b1-h2-kv2-n128-d64-bf16-full-fwd\s+1\.000\s+-\s+-\s+not verified: no ratio")
            self.assertRegex(r.stdout, r"b1-h2-kv2-n256-d64-bf16-full-fwd\s+-\s+-\s+-\s+no result in round 2")
            self.assertIn("k vs p fwd bf16: 1.000–1.000x, geomean 1.000, >= 1.0 in 1 of 1;", r.stdout,
                          "a case wrong or missing in one round must stay out of the summary")
            self.assertIn("left out of the summary: 2 case(s)", r.stdout)

    def test_rounds_refuse_mixed_or_duplicate_input(self):
        with tempfile.TemporaryDirectory() as tmp:
            ours = self.write(tmp, "ours.json", [self.rec("k", 1.0)])
            peer = self.write(tmp, "peer.json", [self.rec("p", 1.0)])
            for args, message in (
                    ([ours, peer, "--round", ours, peer], "either as FILES (one round) or with --round"),
                    ([], "no results files"),
                    (["--round", ours, ours, peer], "is also in")):
                with self.subTest(args=args):
                    r = run_script("ratios.py", *args, "--pair", "k:p")
                    self.assertEqual((r.returncode, r.stdout), (2, ""))
                    self.assertIn(message, r.stderr)
                    self.assertEqual(len(r.stderr.strip().splitlines()), 1)
            # the same files in two rounds are two readings, not a duplicate
            r = run_script("ratios.py", "--round", ours, peer, "--round", ours, peer, "--pair", "k:p")
            self.assertEqual(r.returncode, 0, r.stderr)


# ---------------------------------------------------------------------------------------------------
# grid_tables.py: the README's tables of a sweep beside its peers, over rounds


class GridTables(unittest.TestCase):
    CASE, rec, write = Ratios.CASE, Ratios.rec, Ratios.write

    def test_times_are_the_rounds_geomean_and_ratios_peer_over_ours(self):
        with tempfile.TemporaryDirectory() as tmp:
            # k: 1.0 then 4.0 ms at n64 (geomean 2.0); p: 4.0 then 4.0 (4.0): ratio 2.0. At n128 k fails
            # verification in round 2: no figure for k, no ratio; p keeps its figure.
            o1 = self.write(tmp, "o1.json", [self.rec("k", 1.0), self.rec("k", 1.0, seq=128)])
            p1 = self.write(tmp, "p1.json", [self.rec("p", 4.0), self.rec("p", 2.0, seq=128)])
            o2 = self.write(tmp, "o2.json", [self.rec("k", 4.0), self.rec("k", 0.1, False, seq=128)])
            p2 = self.write(tmp, "p2.json", [self.rec("p", 4.0), self.rec("p", 2.0, seq=128)])
            r = run_script("grid_tables.py", "--round", o1, p1, "--round", o2, p2, "--lead", "k", "--kernels", "k,p",
                           "--pair", "k:p")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("fwd, bf16, head dim 64, non-causal (2 round(s)):", r.stdout)
            self.assertIn("| case | k ms | k TFLOP/s | p TFLOP/s | k vs p |", r.stdout)
            flops = peers.make_record(dict(self.CASE), "k", "ok", times_ms=[1.0])["flops"]
            self.assertIn(f"| b1-h2-kv2-n64-d64-bf16-full-fwd | 2.000 | {flops / 2e-3 / 1e12:.0f} | "
                          f"{flops / 4e-3 / 1e12:.0f} | 2.000× |", r.stdout)
            self.assertRegex(r.stdout, r"\| b1-h2-kv2-n128-d64-bf16-full-fwd \| — \| — \| \d+ \| — \|")

    def test_one_file_a_round_holds_both_kernels(self):
        # peers.py with a callable (fb_torch: ours and SDPA's in one loop) writes both kernels to one file a round.
        with tempfile.TemporaryDirectory() as tmp:
            r1 = self.write(tmp, "r1.json", [self.rec("p", 3.0), self.rec("k", 2.0)])
            r2 = self.write(tmp, "r2.json", [self.rec("k", 2.0), self.rec("p", 1.0)])
            r = run_script("grid_tables.py", "--round", r1, "--round", r2, "--lead", "k", "--kernels", "k,p",
                           "--pair", "k:p", "--by-seq")
            self.assertEqual(r.returncode, 0, r.stderr)
            # k 2.0 ms in both rounds; p / k 1.5 and 0.5: geomean sqrt(0.75)
            self.assertIn("| 64 | 2.000 |", r.stdout)
            self.assertIn(f"| {math.sqrt(0.75):.3f}× |", r.stdout)

    def test_bad_input_exits_2_with_one_line_and_no_output(self):
        with tempfile.TemporaryDirectory() as tmp:
            ours = self.write(tmp, "ours.json", [self.rec("k", 1.0)])
            peer = self.write(tmp, "peer.json", [self.rec("p", 1.0)])
            for extra, message in ((["--lead", "x", "--kernels", "k"], "no file has results of kernel 'x'"),
                                   (["--lead", "k", "--kernels", "k", "--pair", "k-p"], "is not OURS:PEER"),
                                   (["--lead", "k", "--kernels", ","], "--kernels: no kernel named")):
                with self.subTest(args=extra):
                    r = run_script("grid_tables.py", "--round", ours, peer, *extra)
                    self.assertEqual((r.returncode, r.stdout), (2, ""))
                    self.assertIn(message, r.stderr)
                    self.assertEqual(len(r.stderr.strip().splitlines()), 1)
            r = run_script("grid_tables.py", "--round", ours, ours, "--lead", "k", "--kernels", "k")
            self.assertEqual((r.returncode, r.stdout), (2, ""))
            self.assertIn("is also in", r.stderr)


class WSummary(unittest.TestCase):
    """results/h200/s61/calls/w_summary.py: the one-loop calls' figures (sessions 62-63) that README quotes."""
    CASE, rec, write = Ratios.CASE, Ratios.rec, Ratios.write
    SCRIPT = os.path.join(ROOT, "results", "h200", "s61", "calls", "w_summary.py")

    def summarize(self, tmp, pairs, rounds):
        """rounds: [{kernel: (ms at seq 64, ms at seq 128)}, ...] as peers-bf16-1.json, -2.json; pairs: PEER:OURS."""
        with open(os.path.join(tmp, "pairs.txt"), "w") as f:
            f.write(" ".join(pairs) + "\n")
        self.write(tmp, "check-results.json", [self.rec("flash_sm90", 1.0), self.rec("flash", 1.0, False)])
        for i, times in enumerate(rounds, 1):
            self.write(tmp, f"peers-bf16-{i}.json",
                       [self.rec(k, ms, seq=seq) for k, t in times.items() for ms, seq in zip(t, (64, 128))])
        r = subprocess.run([sys.executable, self.SCRIPT, tmp], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(tmp, "summary.json")) as f:
            return json.load(f)

    def test_each_pair_over_the_rounds_and_the_worse_of_two_cudnn_graphs(self):
        k64, k128 = "b1-h2-kv2-n64-d64-bf16-full-fwd", "b1-h2-kv2-n128-d64-bf16-full-fwd"
        # ours 0.105 / 0.180 ms in both rounds; torch-cudnn 0.100 / 0.200, flashbench's graph 0.110 / 0.190 in round
        # 1 and 0.1375 / 0.190 in round 2 (geomean over the rounds sqrt(0.110 * 0.1375) at n64).
        rounds = [{"flash_sm90": (0.105, 0.180), "torch-cudnn": (0.100, 0.200), "cudnn": (0.110, 0.190)},
                  {"flash_sm90": (0.105, 0.180), "torch-cudnn": (0.100, 0.200), "cudnn": (0.1375, 0.190)}]
        with tempfile.TemporaryDirectory() as tmp:
            s = self.summarize(tmp, ["torch-cudnn:flash_sm90", "cudnn:flash_sm90"], rounds)
            self.assertEqual(s["check"]["records"], 2)
            self.assertEqual(s["check"]["verified"], 1)
            torch, graph = s["grids"]["bf16/torch-cudnn:flash_sm90"], s["grids"]["bf16/cudnn:flash_sm90"]
            self.assertEqual(torch["over_rounds"]["ratio"], {k64: round(0.100 / 0.105, 3), k128: round(0.2 / 0.18, 3)})
            g64 = round(math.sqrt(0.110 * 0.1375) / 0.105, 3)
            self.assertEqual(graph["over_rounds"]["ratio"], {k64: g64, k128: round(0.19 / 0.18, 3)})
            self.assertEqual(graph["rounds"]["1"]["ratio"][k64], round(0.110 / 0.105, 3))
            # per row the lower of the two: torch-cudnn's at n64 (0.952), the graph's at n128 (1.056)
            both = torch["against_both_one_loop"]
            self.assertEqual(both["range"], [round(0.100 / 0.105, 3), round(0.19 / 0.18, 3)])
            self.assertEqual((both["at_or_above_1"], both["cases"]), (1, 2))
            self.assertEqual(both["behind"], {k64: round(0.100 / 0.105, 3)})
            self.assertNotIn("against_both_one_loop", graph)
            self.assertEqual(torch["over_rounds"]["behind_every_round"], [k64])

    def test_no_second_graph_no_one_loop_against_both(self):
        rounds = [{"flash_sm90": (0.1, 0.2), "torch-cudnn": (0.1, 0.2)}] * 2
        with tempfile.TemporaryDirectory() as tmp:
            s = self.summarize(tmp, ["torch-cudnn:flash_sm90"], rounds)
            self.assertEqual(list(s["grids"]), ["bf16"])
            self.assertNotIn("against_both_one_loop", s["grids"]["bf16"])


class Paired(unittest.TestCase):
    """scripts/paired.py: a kernel against its peer rep by rep from interleaved peers.py files, each case's median
    paired ratio with a 95% order-statistics interval and a verdict."""
    CASE = Ratios.CASE

    def doc(self, cases, rep_order="interleaved"):
        """cases: {seq: {kernel: samples (ms)}}; kernel 'bad' records verified false."""
        recs = []
        for seq, kernels in cases.items():
            for k, samples in kernels.items():
                r = peers.make_record(dict(self.CASE, seq=seq), k, "ok", times_ms=samples)
                r["verified"] = False if k == "bad" else None
                recs.append(r)
        d = results_doc(recs)
        d["settings"] = {"warmup": 0, "reps": 10, **({"rep_order": rep_order} if rep_order else {})}
        return d

    def run_paired(self, docs, *args):
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for i, d in enumerate(docs):
                paths.append(os.path.join(tmp, f"p{i}.json"))
                with open(paths[-1], "w") as f:
                    json.dump(d, f)
            out = os.path.join(tmp, "out.json")
            r = run_script("paired.py", *paths, *args, "--json", out)
            figures = None
            if os.path.exists(out):
                with open(out) as f:
                    figures = json.load(f)
        return r, figures, paths

    def test_interval_rank(self):
        import paired  # scripts/ on sys.path (above)
        self.assertEqual([paired.interval_rank(n) for n in (1, 5, 6, 10, 20, 30)], [0, 0, 1, 2, 6, 10])

    def test_verdicts_from_pairs(self):
        ours = [1.0 + 0.01 * i for i in range(10)]  # ours drifts up over the rounds; so do the peers below
        cases = {
            64: {"ours": ours, "peer": [x * 0.98 for x in ours]},  # 2% behind in every pair
            128: {"ours": ours, "peer": [x * 1.03 for x in ours]},  # 3% ahead
            256: {"ours": ours, "peer": [x * (1.01 if i % 2 else 0.99) for i, x in enumerate(ours)]},  # level
            512: {"ours": ours[:4], "peer": ours[:4]},  # 4 pairs: too few
        }
        r, fig, _ = self.run_paired([self.doc(cases)], "--pair", "ours:peer")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = fig["pairs"]["ours:peer"]["rows"]
        key = lambda n: f"b1-h2-kv2-n{n}-d64-bf16-full-fwd"  # noqa: E731
        self.assertEqual({n: rows[key(n)]["verdict"] for n in cases},
                         {64: "behind", 128: "ahead", 256: "level", 512: "few"})
        self.assertAlmostEqual(rows[key(64)]["median"], 0.98, places=9)
        self.assertEqual(rows[key(64)]["n"], 10)
        self.assertEqual(fig["pairs"]["ours:peer"]["behind"], [key(64)])
        self.assertEqual(fig["pairs"]["ours:peer"]["counts"], {"ahead": 1, "level": 1, "behind": 1, "few": 1})
        # Two files pool their pairs (20), and a case whose ours failed verification gets no ratio.
        cases2 = {64: {"ours": ours, "peer": [x * 0.98 for x in ours]}, 1024: {"bad": ours, "peer": ours}}
        r, fig, _ = self.run_paired([self.doc(cases), self.doc(cases2)], "--pair", "ours:peer", "--pair", "bad:peer")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(fig["pairs"]["ours:peer"]["rows"][key(64)]["n"], 20)
        self.assertEqual(fig["pairs"]["bad:peer"]["not_verified"], [key(1024)])
        self.assertIn("not verified (no ratio)", r.stdout)

    def test_flashbench_files(self):
        """flashbench run --interleave's files pair the same way (their samples in round order)."""
        ours = [1.0 + 0.01 * i for i in range(8)]
        d = self.doc({64: {"ours": ours, "peer": [x * 0.97 for x in ours]}})
        d["backend"] = "cuda"
        r, fig, _ = self.run_paired([d], "--pair", "ours:peer")
        self.assertEqual(r.returncode, 0, r.stderr)
        row = fig["pairs"]["ours:peer"]["rows"]["b1-h2-kv2-n64-d64-bf16-full-fwd"]
        self.assertEqual((row["n"], row["verdict"]), (8, "behind"))
        self.assertAlmostEqual(row["median"], 0.97, places=9)

    def test_refusals(self):
        ok = self.doc({64: {"ours": [1.0] * 6, "peer": [1.0] * 6}})
        for docs, args, want in (
                ([self.doc({64: {"ours": [1.0] * 6, "peer": [1.0] * 6}}, rep_order="blocked")], ["--pair", "ours:peer"],
                 "not a file with interleaved reps"),
                ([self.doc({64: {"ours": [1.0] * 6, "peer": [1.0] * 6}}, rep_order=None)], ["--pair", "ours:peer"],
                 "settings.rep_order is None"),
                ([ok], ["--pair", "ours:nobody"], "no record of kernel 'nobody'"),
                ([ok], ["--pair", "ours"], "--pair: 'ours' is not OURS:PEER")):
            r, fig, _ = self.run_paired(docs, *args)
            self.assertEqual(r.returncode, 2, (want, r.stderr))
            self.assertIn(want, r.stderr)
            self.assertEqual(r.stdout, "")
            self.assertIsNone(fig, "nothing written")


class Agree(unittest.TestCase):
    """results/h200/s64/calls/agree.py: how far a call's two rounds agree (session 64's blocked / interleaved
    comparison that README quotes)."""
    CASE, rec, write = Ratios.CASE, Ratios.rec, Ratios.write
    SCRIPT = os.path.join(ROOT, "results", "h200", "s64", "calls", "agree.py")

    def test_round_gaps_flips_and_rows_behind(self):
        k64, k128 = "b1-h2-kv2-n64-d64-bf16-full-fwd", "b1-h2-kv2-n128-d64-bf16-full-fwd"
        # ours 0.1 / 0.2 ms both rounds; the peer 0.098 / 0.21 in round 1 and 0.097 / 0.189 in round 2: n64 behind
        # in both (0.98, 0.97), n128 ahead then behind (1.05, 0.945: a flip, the largest gap, 10%).
        rounds = [{"ours": (0.1, 0.2), "peer": (0.098, 0.21)}, {"ours": (0.1, 0.2), "peer": (0.097, 0.189)}]
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "pairs.txt"), "w") as f:
                f.write("peer:ours\n")
            for i, times in enumerate(rounds, 1):
                self.write(tmp, f"peers-bf16-{i}.json",
                           [self.rec(k, ms, seq=seq) for k, t in times.items() for ms, seq in zip(t, (64, 128))])
            out = os.path.join(tmp, "agree.json")
            r = subprocess.run([sys.executable, self.SCRIPT, out, f"X={tmp}"], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                g = json.load(f)["X"]["grids"]["bf16/peer:ours"]
        self.assertEqual(g["rows"], 2)
        self.assertEqual(g["rep_order"], ["blocked", "blocked"])  # files without settings.rep_order
        self.assertEqual(g["verdict_flips"], 1)
        self.assertEqual(g["largest_gap_row"], k128)
        self.assertAlmostEqual(g["round_gap_pct_max"], round(100 * (1.05 / 0.945 - 1), 2), places=2)
        gaps = sorted([1.05 / 0.945, 0.98 / 0.97])
        self.assertAlmostEqual(g["round_gap_pct_median"], round(100 * (math.sqrt(gaps[0] * gaps[1]) - 1), 2),
                               places=2)
        self.assertEqual(g["lowest"], [0.98, 0.945])
        self.assertEqual(g["under_1_both"], {k64: [0.98, 0.97]})

    def test_usage(self):
        r = subprocess.run([sys.executable, self.SCRIPT, "out.json"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)


class S65Summary(unittest.TestCase):
    """results/h200/s65/calls/summary.py: calls J, K, G's figures (README's "flashbench's own loop" quotes them)."""
    CASE, rec = Ratios.CASE, Ratios.rec
    SCRIPT = os.path.join(ROOT, "results", "h200", "s65", "calls", "summary.py")

    def test_ratios_agree_paired_and_gate(self):
        with tempfile.TemporaryDirectory() as tmp:
            call = os.path.join(tmp, "J")
            for timing, order in (("I", "interleaved"), ("B", "blocked")):
                os.makedirs(os.path.join(call, timing))
                for rnd, peer in ((1, (0.098, 0.21)), (2, (0.097, 0.22))):
                    recs = [self.rec("flash-sm90", 0.1, seq=64), self.rec("flash-sm90", 0.2, seq=128),
                            self.rec("cudnn", peer[0], seq=64), self.rec("cudnn", peer[1], seq=128),
                            self.rec("flash-sm90", 0.3, verified=False, seq=256), self.rec("cudnn", 0.1, seq=256)]
                    doc = results_doc(recs)
                    doc["settings"]["rep_order"] = order
                    doc["device"] = {"name": "GPU X"}
                    with open(os.path.join(call, timing, f"peers-bf16-{rnd}.json"), "w") as f:
                        json.dump(doc, f)
            with open(os.path.join(call, "agree.json"), "w") as f:
                json.dump({"I": {"grids": {}}}, f)
            key = "b1-h2-kv2-n64-d64-bf16-full-fwd"
            with open(os.path.join(call, "paired.json"), "w") as f:
                json.dump({"pairs": {"flash-sm90:cudnn": {"counts": {"behind": 1}, "behind": [key],
                                                          "rows": {key: {"median": 0.975}}}}}, f)
            os.makedirs(os.path.join(tmp, "gate"))
            with open(os.path.join(tmp, "gate", "J-B.json"), "w") as f:
                json.dump({"failed": True, "rows": [
                    {"key": key, "kernel": "cudnn", "verdict": "regression", "base_median_ms": 1.0,
                     "new_median_ms": 1.06},
                    {"key": key, "kernel": "flash-sm90", "verdict": "same", "base_median_ms": 1.0,
                     "new_median_ms": 1.0}]}, f)
            out = os.path.join(tmp, "summary.json")
            r = subprocess.run([sys.executable, self.SCRIPT, tmp, out], capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                s = json.load(f)
        self.assertEqual((s["device"], s["commit"]), ("GPU X", "x"))
        first = s["calls"]["J"]["timings"]["I"]["peers-bf16-1.json"]
        # cudnn / flash-sm90: 0.98 at n64, 1.05 at n128; n256 left out (flash-sm90 not verified).
        self.assertEqual((first["rows"], first["min"], first["max"], first["at_least_1"]), (2, 0.98, 1.05, 1))
        self.assertEqual(first["geomean"], round(math.sqrt(0.98 * 1.05), 3))
        self.assertEqual(first["rep_order"], "interleaved")
        self.assertEqual(s["calls"]["J"]["timings"]["B"]["peers-bf16-2.json"]["min"], 0.97)
        self.assertEqual(s["calls"]["J"]["paired"]["flash-sm90:cudnn"]["behind"], {key: {"median": 0.975}})
        self.assertEqual(s["gate"]["J-B.json"], {"failed": True, "flagged": [[key, "cudnn", "regression", 1.06]]})


# ---------------------------------------------------------------------------------------------------
# ab_rule.py: the verdict of an A/B rule written before its call


class ABRule(unittest.TestCase):
    """Synthetic calls (two rule specs of two cases each, one control spec, three rounds), then two of session 40's
    real calls, whose verdicts were first read by hand (docs/perf-notes.md, "Session 40")."""
    ROUNDS = 3
    RULE = ["--kernel", "k", "--base", "def", "--variant", "new", "--rounds", "3", "--rows", "r-*",
            "--controls", "c-*", "--min-geomean", "1.03", "--min-row", "0.98", "--control-band", "0.98:1.02"]

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name
        self.specs = os.path.join(self.tmp, "specs")
        self.ab = os.path.join(self.tmp, "ab")
        os.makedirs(self.specs)
        os.makedirs(self.ab)
        # spec name -> its seq lengths; every spec runs bf16 and fp16 (two cases)
        self.seqs = {"r-a": 256, "r-b": 512, "c-x": 1024}
        for name, n in self.seqs.items():
            with open(os.path.join(self.specs, name + ".json"), "w") as f:
                json.dump({"seq": [n], "batch": [2], "heads": 4, "kv_heads": 1, "head_dim": [64],
                           "dtype": ["bf16", "fp16"], "causal": [True], "pass": ["bwd"], "kernels": ["k"]}, f)

    def tearDown(self):
        self._tmp.cleanup()

    def case(self, name, dtype):
        return {"batch": 2, "heads": 4, "kv_heads": 1, "seq": self.seqs[name], "head_dim": 64, "dtype": dtype,
                "causal": True, "pass": "bwd"}

    def write_call(self, ratio, override=None):
        """Every file of a call: the base at 1.0 ms, the variant at 1 / ratio(spec) ms; override(side, name, round,
        dtype, record) may change a record (None drops it)."""
        for name in self.seqs:
            for r in range(1, self.ROUNDS + 1):
                for side in ("def", "new"):
                    recs = []
                    for dtype in ("bf16", "fp16"):
                        ms = 1.0 if side == "def" else 1.0 / ratio(name)
                        rec = peers.make_record(self.case(name, dtype), "k", "ok", times_ms=[ms])
                        rec["verified"] = True
                        if override:
                            rec = override(side, name, r, dtype, rec)
                        if rec is not None:
                            recs.append(rec)
                    with open(os.path.join(self.ab, f"{side}-{name}-{r}.json"), "w") as f:
                        json.dump(results_doc(recs), f)

    def judge(self, *extra, rule=None):
        return run_script("ab_rule.py", self.ab, "--spec-dir", self.specs, *(rule or self.RULE), *extra)

    def write_in_process(self, ratio, variant_of="k", verified=True):
        """The in-process layout: SPEC-ROUND.json with k at 1.0 ms and its variant `new` at 1 / ratio(spec) ms."""
        for name in self.seqs:
            for r in range(1, self.ROUNDS + 1):
                recs = []
                for dtype in ("bf16", "fp16"):
                    for kernel, ms in (("k", 1.0), ("new", 1.0 / ratio(name))):
                        rec = peers.make_record(self.case(name, dtype), kernel, "ok", times_ms=[ms])
                        rec["verified"] = verified if kernel == "new" else True
                        recs.append(rec)
                doc = results_doc(recs)
                doc["settings"]["variants"] = {"new": {"kernel": variant_of, "env": {"FB_SM90_FWD_PROBE": "x"}}}
                with open(os.path.join(self.ab, f"{name}-{r}.json"), "w") as f:
                    json.dump(doc, f)

    def test_in_process_layout_reads_the_variant_beside_its_kernel(self):
        rule = [a for a in self.RULE if a not in ("--base", "def")] + ["--in-process"]
        self.write_in_process(lambda name: {"r-a": 1.02, "r-b": 1.05, "c-x": 1.0}[name])
        r = self.judge(rule=rule)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("verdict: MET", r.stdout)
        self.write_in_process(lambda name: {"r-a": 1.02, "r-b": 1.05, "c-x": 1.0}[name], verified=False)
        r = self.judge(rule=rule)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("verified false", r.stdout)
        # a file whose `new` is another kernel's variant is no A/B of k
        self.write_in_process(lambda name: 1.05, variant_of="other")
        r = self.judge(rule=rule)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("names no variant 'new' of k", r.stdout)
        # --base is the kernel itself there: naming one is refused, as is leaving both out
        r = self.judge("--base", "def", rule=rule)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--base: the in-process layout has none", r.stderr)
        r = self.judge(rule=[a for a in self.RULE if a not in ("--base", "def")])
        self.assertEqual(r.returncode, 2)
        self.assertIn("--base is required", r.stderr)

    def test_kernel_is_probe_reads_the_ratio_the_other_way(self):
        """A shipped change checked against its variant of the code before (session 67's call E): the kernel is the
        probe, and the same files that meet the rule for the variant fail it for the kernel, and the other way."""
        rule = [a for a in self.RULE if a not in ("--base", "def")] + ["--in-process"]
        # `new` 2-5% faster than k on the rows: met for `new`, not for k as the probe (k 2-5% slower)
        self.write_in_process(lambda name: {"r-a": 1.02, "r-b": 1.05, "c-x": 1.0}[name])
        r = self.judge("--kernel-is-probe", rule=rule)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("reads 0.9524, below", r.stdout)
        # `new` 2-5% slower: k, the probe, is faster where `new` runs the code before it
        self.write_in_process(lambda name: {"r-a": 1 / 1.02, "r-b": 1 / 1.05, "c-x": 1.0}[name])
        r = self.judge("--kernel-is-probe", "--json", os.path.join(self.ab, "v.json"), rule=rule)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("k against new (k)", r.stdout)
        with open(os.path.join(self.ab, "v.json")) as f:
            v = json.load(f)
        self.assertEqual((v["rule"]["base"], v["rule"]["variant"], v["rule"]["kernel_is_probe"]), ("new", "k", True))
        self.assertGreater(v["summary"]["min"], 1.0)
        r = self.judge("--kernel-is-probe", rule=rule)
        self.assertEqual(r.returncode, 0)
        # only for the in-process layout
        r = self.judge("--kernel-is-probe")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--kernel-is-probe: only with --in-process", r.stderr)

    def test_met_rows_and_controls_and_json(self):
        self.write_call(lambda name: {"r-a": 1.02, "r-b": 1.05, "c-x": 1.0}[name])
        out = os.path.join(self.tmp, "rule.json")
        r = self.judge("--json", out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("verdict: MET", r.stdout)
        # four rule rows (two specs x two dtypes), geomean of 1.02, 1.02, 1.05, 1.05
        self.assertIn(f"rows: 4, geomean {math.sqrt(1.02 * 1.05):.4f} (1.020-1.050); controls: 2", r.stdout)
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(doc["verdict"], "met")
        self.assertEqual(doc["reasons"], [])
        self.assertEqual(len(doc["rows"]), 6)
        self.assertEqual(sorted({x["role"] for x in doc["rows"]}), ["control", "row"])
        for x in doc["rows"]:
            self.assertEqual(len(x["ratios"]), 3)

    def test_files_of_two_devices_or_builds_fail_it(self):
        # Each file names its device and build; a call is one of each (files mixed from two calls are no A/B).
        def named(device, git):  # every file on GPU A at build abc, but new-r-b-2.json on `device` at `git`
            self.write_call(lambda name: 1.05 if name.startswith("r-") else 1.0)
            for fn in os.listdir(self.ab):
                path = os.path.join(self.ab, fn)
                with open(path) as fh:
                    doc = json.load(fh)
                odd = fn == "new-r-b-2.json"
                doc["device"] = {"name": device if odd else "GPU A"}
                doc["tool"]["git"] = git if odd else "abc"
                with open(path, "w") as fh:
                    json.dump(doc, fh)
        out = os.path.join(self.tmp, "rule.json")
        named("GPU A", "abc")
        r = self.judge("--json", out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("device: GPU A; build: abc", r.stdout)
        with open(out) as f:
            self.assertEqual(json.load(f)["summary"]["device"], ["GPU A"])
        named("GPU B", "abc")
        r = self.judge()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("the files come from 2 devices: GPU A, GPU B", r.stdout)
        named("GPU A", "def")
        r = self.judge()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("the files come from 2 builds: abc, def", r.stdout)

    def test_each_part_of_the_rule_can_fail_it(self):
        cases = [
            ("geomean", {"r-a": 1.01, "r-b": 1.02, "c-x": 1.0}, "the rows' geomean 1.0150 is below 1.03"),
            ("floor", {"r-a": 0.97, "r-b": 1.12, "c-x": 1.0}, "reads 0.9700, below 0.98"),
            ("control", {"r-a": 1.05, "r-b": 1.05, "c-x": 1.03}, "reads 1.0300, outside 0.98-1.02"),
            ("control low", {"r-a": 1.05, "r-b": 1.05, "c-x": 0.97}, "reads 0.9700, outside 0.98-1.02"),
        ]
        for what, ratios, reason in cases:
            with self.subTest(what):
                self.write_call(lambda name: ratios[name])
                r = self.judge()
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assertIn("verdict: NOT MET", r.stdout)
                self.assertIn(reason, r.stdout)

    def test_controls_geomean_band(self):
        """--controls-geomean-band: one noisy control inside its own band no longer decides alone, a bias of every
        control does."""
        def control_ratios(bf16, fp16):
            def override(side, name, r, dtype, rec):
                if side == "new" and name == "c-x":
                    ms = 1.0 / (bf16 if dtype == "bf16" else fp16)
                    rec = peers.make_record(self.case(name, dtype), "k", "ok", times_ms=[ms])
                    rec["verified"] = True
                return rec
            return override

        loose = ["--control-band", "0.97:1.03", "--controls-geomean-band", "0.99:1.01"]
        self.write_call(lambda name: 1.05, control_ratios(0.975, 1.02))
        r = self.judge(*loose)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"controls: 2, geomean {math.sqrt(0.975 * 1.02):.4f}", r.stdout)
        self.assertIn("their geomean within 0.99-1.01", r.stdout)
        self.assertEqual(self.judge().returncode, 1)  # the same call under 0.98-1.02 a control
        self.write_call(lambda name: 1.05, control_ratios(0.985, 0.985))
        r = self.judge(*loose)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("the controls' geomean 0.9850 is outside 0.99-1.01", r.stdout)
        r = self.judge("--controls-geomean-band", "1.01:0.99")
        self.assertEqual((r.returncode, r.stdout), (2, ""), r.stderr)
        self.assertIn("--controls-geomean-band: '1.01:0.99' is not LO:HI", r.stderr)
        no_controls = [x for x in self.RULE if x not in ("--controls", "c-*")]
        r = self.judge("--controls-geomean-band", "0.99:1.01", rule=no_controls)
        self.assertEqual((r.returncode, r.stdout), (2, ""), r.stderr)
        self.assertIn("no --controls", r.stderr)

    def test_a_row_that_fails_or_is_missing_fails_the_rule_however_fast(self):
        def unverified(side, name, r, dtype, rec):
            if (side, name, r, dtype) == ("new", "r-b", 2, "fp16"):
                rec["verified"] = False
            return rec

        def failed(side, name, r, dtype, rec):
            if (side, name, r, dtype) == ("def", "c-x", 1, "bf16"):
                rec.update(status="failed", reason="out of memory")
            return rec

        def dropped(side, name, r, dtype, rec):
            return None if (side, name, r, dtype) == ("new", "r-a", 3, "bf16") else rec

        def null_verdict(side, name, r, dtype, rec):
            if (side, r) == ("new", 1):
                rec["verified"] = None
            return rec

        for what, override, reason in (
                ("unverified", unverified, "round 2, new-r-b-2.json: verified false"),
                ("failed", failed, "round 1, def-c-x-1.json: failed (out of memory)"),
                ("dropped", dropped, "round 3, new-r-a-3.json: no k result"),
                ("not verified at all", null_verdict, "verified null")):
            with self.subTest(what):
                self.write_call(lambda name: 1.2 if name != "c-x" else 1.0, override)
                r = self.judge()
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assertIn("NOT MET", r.stdout)
                self.assertIn(reason, r.stdout)
        # a round that never ran (its file absent): the rule is not met, the reason names the file
        self.write_call(lambda name: 1.2 if name != "c-x" else 1.0)
        os.remove(os.path.join(self.ab, "new-r-a-3.json"))
        r = self.judge()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("round 3, no results file new-r-a-3.json", r.stdout)

    def test_bad_input_exit_2_nothing_on_stdout_no_json(self):
        self.write_call(lambda name: 1.05)
        out = os.path.join(self.tmp, "rule.json")
        with open(os.path.join(self.ab, "def-r-a-2.json"), "w") as f:
            f.write("{ not json")
        r = self.judge("--json", out)
        self.assertEqual((r.returncode, r.stdout), (2, ""), r.stderr)
        self.assertIn("def-r-a-2.json", r.stderr)
        self.assertFalse(os.path.exists(out))
        self.write_call(lambda name: 1.05)
        bad = [
            (["--rows", "zz-*"], "--rows: 'zz-*' names no spec"),
            (["--controls", "r-a"], "which is also a row"),
            (["--control-band", "1.02:0.98"], "--control-band: '1.02:0.98' is not LO:HI"),
            (["--control-band", "x"], "--control-band: 'x'"),
            (["--min-row", "-1"], "--min-row: -1.0 is not a positive ratio"),
            (["--rounds", "0"], "--rounds: 0"),
            (["--kernel", "other"], "does not list --kernel other"),
        ]
        for extra, message in bad:
            with self.subTest(message):
                r = self.judge(*extra, "--json", out)
                self.assertEqual((r.returncode, r.stdout), (2, ""), r.stderr)
                self.assertIn(message, r.stderr)
                self.assertFalse(os.path.exists(out))
        r = run_script("ab_rule.py", os.path.join(self.tmp, "nowhere"), "--spec-dir", self.specs, *self.RULE)
        self.assertEqual((r.returncode, r.stdout), (2, ""), r.stderr)
        self.assertIn("DIR: ", r.stderr)

    def test_session_40_calls_give_the_verdicts_read_by_hand(self):
        s40 = os.path.join(ROOT, "results", "h200", "s40")
        rule = ["--kernel", "flash-sm90", "--base", "def", "--variant", "new", "--rounds", "3", "--min-geomean",
                "1.03", "--min-row", "0.98"]
        # call A, big8: met, 1.010-1.100x (geomean 1.056), controls 1.003x / 0.995x
        r = run_script("ab_rule.py", os.path.join(s40, "A", "ab"), "--spec-dir", os.path.join(s40, "calls"),
                       *rule, "--rows", "big8r-*", "--controls", "big8ctl-*")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("rows: 10, geomean 1.0563 (1.010-1.100); controls: 2", r.stdout)
        # call F, big64: not met, 0.786-1.079x (geomean 0.989), two rows under 0.98
        r = run_script("ab_rule.py", os.path.join(s40, "F", "ab"), "--spec-dir", os.path.join(s40, "calls"),
                       *rule, "--rows", "b64r-*", "--controls", "b64ctl-*")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("rows: 8, geomean 0.9889 (0.786-1.079)", r.stdout)
        self.assertEqual(r.stdout.count(", below 0.98"), 2)

    def test_session_47_call_l_gives_the_verdict_its_call_printed(self):
        """Call L (one H100): fused's 16 rows 1.039-1.258x (geomean 1.113), its rule not met by one control at 0.979."""
        bwd = os.path.join(ROOT, "results", "h100", "s47", "L", "bwd")
        r = run_script("ab_rule.py", os.path.join(bwd, "ab"), "--spec-dir", os.path.join(bwd, "specs"), "--kernel",
                       "flash-sm90", "--base", "def", "--variant", "fused", "--rounds", "3", "--rows", "fuse46-b*",
                       "--rows", "hold44-small-bwd", "--rows", "held40g-*", "--controls", "fuse46ctl-*",
                       "--min-geomean", "1.03", "--min-row", "0.985", "--control-band", "0.985:1.015")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("rows: 16, geomean 1.1131 (1.039-1.258); controls: 3", r.stdout)
        self.assertIn("reads 0.9791, outside 0.985-1.015", r.stdout)

    def test_session_49_calls_q_and_s_give_the_verdicts_their_calls_printed(self):
        """Call Q (one H100) made the dynamic tile order a default: met, 1.019-1.353x; call S put it on GQA: not met,
        six of seven rows under 0.98. The rule of both, as their scripts ran it."""
        s49 = os.path.join(ROOT, "results", "h100", "s49")
        rule = ["--kernel", "flash-sm90", "--base", "def", "--rounds", "3", "--min-geomean", "1.02", "--min-row",
                "0.98", "--control-band", "0.97:1.03", "--controls-geomean-band", "0.99:1.01"]
        q = os.path.join(s49, "Q")
        r = run_script("ab_rule.py", os.path.join(q, "ab"), "--spec-dir", os.path.join(q, "specs"), *rule,
                       "--variant", "dyn", "--rows", "dyn48-c64", "--controls", "dyn48ctl-f64")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("rows: 6, geomean 1.1043 (1.019-1.353); controls: 2, geomean 1.0018", r.stdout)
        self.assertIn("device: NVIDIA H100 80GB HBM3", r.stdout)
        s = os.path.join(s49, "S")
        r = run_script("ab_rule.py", os.path.join(s, "ab"), "--spec-dir", os.path.join(s, "specs"), *rule,
                       "--variant", "dyngqa", "--rows", "dyngqa49-*", "--controls", "dyngqa49ctl-*")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("rows: 7, geomean 0.9081 (0.777-1.311)", r.stdout)
        self.assertEqual(r.stdout.count(", below 0.98"), 6)


# ---------------------------------------------------------------------------------------------------
# ptxas_log.sh and ptxas_spills.py: ptxas's reports of the kernels, and their register spills


class PtxasSpills(unittest.TestCase):
    ENTRY = ("ptxas info    : Compiling entry function '{fn}' for '{arch}'\n"
             "ptxas info    : Function properties for {fn}\n"
             "    {stack} bytes stack frame, {st} bytes spill stores, {ld} bytes spill loads\n"
             "ptxas info    : Used 168 registers, used 1 barriers, 640 bytes cmem[0]\n")
    NVCC = ["--nvcc-version", "13.0.88"]

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name
        self.build = os.path.join(self.tmp, "build")
        self.objdir = os.path.join(self.build, "CMakeFiles", "flashbench_kernels.dir", "kernels", "flash")
        os.makedirs(self.objdir)

    def tearDown(self):
        self._tmp.cleanup()

    def report(self, name, *entries):
        with open(os.path.join(self.objdir, name + ".cu.o.ptxas"), "w") as f:
            f.write("ptxas info    : 0 bytes gmem\n")
            for fn, arch, stack, st, ld in entries:
                f.write(self.ENTRY.format(fn=fn, arch=arch, stack=stack, st=st, ld=ld))

    def baseline(self, allow, nvcc="13.0", archs=("sm_80", "sm_90a")):
        path = os.path.join(self.tmp, "base.json")
        with open(path, "w") as f:
            json.dump({"nvcc": nvcc, "archs": list(archs), "note": "t", "allow": allow}, f)
        return path

    def spills(self, *args):
        return run_script("ptxas_spills.py", self.build, *self.NVCC, *args)

    def test_spills_beyond_the_baseline_fail_and_stack_alone_is_not_a_spill(self):
        self.report("a", ("_Z1av", "sm_80", 0, 0, 0), ("_Z1av", "sm_90a", 256, 0, 0))
        self.report("b", ("_Z1bv", "sm_80", 24, 16, 16), ("_Z1bv", "sm_90a", 8, 0, 8), ("_Z1cv", "sm_90a", 8, 4, 4))
        r = self.spills("--allow", self.baseline([]))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("5 functions checked (sm_80, sm_90a); 3 spill, 3 beyond the baseline", r.stdout)
        self.assertIn("OVER: kernels/flash/b.cu sm_80 _Z1bv: spills 16 bytes (baseline 0)", r.stdout)
        self.assertNotIn("a.cu", r.stdout)
        # the baseline as written from this build: passes; then one function grows by a byte, one is renamed
        out = os.path.join(self.tmp, "written.json")
        r = self.spills("--write-baseline", out, "--note", "why")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual((doc["nvcc"], doc["archs"], doc["note"], len(doc["allow"])), ("13.0", ["sm_80", "sm_90a"],
                                                                                        "why", 3))
        r = self.spills("--allow", out, "--list")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("spills: kernels/flash/b.cu sm_90a _Z1bv: 8 bytes", r.stdout)
        self.report("b", ("_Z1bv", "sm_80", 24, 16, 17), ("_Z1bv", "sm_90a", 8, 0, 4), ("_Z1dv", "sm_90a", 8, 4, 4))
        r = self.spills("--allow", out)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("OVER: kernels/flash/b.cu sm_80 _Z1bv: spills 17 bytes (baseline 16)", r.stdout)
        self.assertIn("OVER: kernels/flash/b.cu sm_90a _Z1dv: spills 4 bytes (baseline 0)", r.stdout)
        self.assertIn("_Z1bv (kernels/flash/b.cu, sm_90a) spills 4 bytes, the baseline allows 8", r.stdout)
        self.assertIn("_Z1cv (kernels/flash/b.cu, sm_90a) is in the baseline and not in this build", r.stdout)

    def test_other_nvcc_or_arch_is_not_checked(self):
        self.report("b", ("_Z1bv", "sm_89", 8, 8, 8), ("_Z1bv", "sm_90a", 8, 8, 8))
        r = self.spills("--allow", self.baseline([], nvcc="12.4"))
        self.assertEqual(r.returncode, EXIT_SKIP, r.stdout + r.stderr)
        self.assertIn("is for nvcc 12.4, this build used 13.0.88", r.stderr)
        r = self.spills("--allow", self.baseline([], archs=["sm_90a"]))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("not checked (no baseline for them): sm_89", r.stdout)
        self.assertIn("1 beyond the baseline", r.stdout)

    def test_no_reports_is_a_skip_and_bad_input_exit_2(self):
        r = self.spills("--allow", self.baseline([]))
        self.assertEqual(r.returncode, EXIT_SKIP, r.stdout + r.stderr)
        self.report("a", ("_Z1av", "sm_80", 0, 0, 0))
        entry = {"source": "x.cu", "arch": "sm_80", "function": "_Z1xv", "spill_bytes": 8}
        for allow, message in (
                ([dict(entry, spill_bytes=0)], "spill_bytes"),
                ([{k: v for k, v in entry.items() if k != "function"}], "allow[0].function"),
                ([entry, entry], "listed twice")):
            with self.subTest(message):
                r = self.spills("--allow", self.baseline(allow))
                self.assertEqual((r.returncode, r.stdout), (2, ""), r.stderr)
                self.assertIn(message, r.stderr)
        for args, message in ((lambda: ["--allow", self.baseline([], nvcc="x")], ".nvcc"),
                              (lambda: ["--allow", self.baseline([], archs=[])], ".archs"),
                              (lambda: [], "give --allow BASELINE"),
                              (lambda: ["--allow", "a.json", "--write-baseline", "b.json"], "one of them")):
            with self.subTest(message):
                r = self.spills(*args())
                self.assertEqual((r.returncode, r.stdout), (2, ""), r.stderr)
                self.assertIn(message, r.stderr)
        r = run_script("ptxas_spills.py", self.build, "--nvcc-version", "thirteen", "--allow", self.baseline([]))
        self.assertEqual((r.returncode, r.stdout), (2, ""), r.stderr)
        r = run_script("ptxas_spills.py", os.path.join(self.tmp, "nowhere"), *self.NVCC, "--allow",
                       self.baseline([]))
        self.assertEqual((r.returncode, r.stdout), (2, ""), r.stderr)
        with open(os.path.join(self.objdir, "c.cu.o.ptxas"), "w") as f:
            f.write("    8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n")
        r = self.spills("--allow", self.baseline([]))
        self.assertEqual((r.returncode, r.stdout), (2, ""), r.stderr)
        self.assertIn("c.cu.o.ptxas:1", r.stderr)
        # another ptxas's wording: its entry functions unread would pass every kernel, so it is refused
        with open(os.path.join(self.objdir, "c.cu.o.ptxas"), "w") as f:
            f.write(self.ENTRY.format(fn="_Z1cv", arch="sm_90a", stack=8, st=8, ld=8).replace("spill stores", "spilled"))
        r = self.spills("--allow", self.baseline([]))
        self.assertEqual((r.returncode, r.stdout), (2, ""), r.stderr)
        self.assertIn("1 entry functions and 0", r.stderr)

    SERIAL = ("ptxas info    : (C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
              "insufficient register resources for the wgmma pipeline in the function '{fn}'\n")
    INJECT = ("ptxas info    : (C7517) warpgroup.wait is injected in around line 72 by compiler to allow use of registers "
              "defined by GMMA in function '{fn}'\n")

    def diag_report(self, name, diags, entries):
        """A report as ptxas writes one for a two-arch compile: the sm_80 run's entries, then the sm_90a run's
        diagnostics before its entries."""
        with open(os.path.join(self.objdir, name + ".cu.o.ptxas"), "w") as f:
            for fn in entries:
                f.write(self.ENTRY.format(fn=fn, arch="sm_80", stack=0, st=0, ld=0))
            f.write("".join(diags) + "ptxas info    : 0 bytes gmem\n")
            for fn in entries:
                f.write(self.ENTRY.format(fn=fn, arch="sm_90a", stack=0, st=0, ld=0))

    def test_wgmma_serialised_always_fails_and_injected_waits_are_held_to_the_baseline(self):
        diags = [self.SERIAL.format(fn="_Z1sv"), self.INJECT.format(fn="_Z1iv"), self.INJECT.format(fn="_Z1iv"),
                 "ptxas info    : (C9999) something new\n"]
        self.diag_report("w", diags, ["_Z1sv", "_Z1iv", "_Z1cv"])
        r = self.spills("--allow", self.baseline([]))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("0 beyond the baseline", r.stdout)  # no spills: the wgmma lines fail it
        self.assertIn("wgmma: 1 functions serialised, 1 with more injected waits / arrives than the baseline "
                      "(2 injected in 1 functions)", r.stdout)
        self.assertIn("SERIALIZED: kernels/flash/w.cu sm_90a _Z1sv: every wgmma waits for the one before (C7511: "
                      "serialized due to insufficient register resources for the wgmma pipeline)", r.stdout)
        self.assertIn("INJECTED: kernels/flash/w.cu sm_90a _Z1iv: 2 warpgroup waits / arrives injected by ptxas "
                      "(baseline 0)", r.stdout)
        self.assertIn("note: kernels/flash/w.cu: ptxas (C9999) something new", r.stdout)
        self.assertNotIn("_Z1cv", r.stdout)
        # a serialised wgmma cannot be written into a baseline
        out = os.path.join(self.tmp, "written.json")
        r = self.spills("--write-baseline", out)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("a serialised wgmma cannot be allowed", r.stderr)
        self.assertFalse(os.path.exists(out))
        # without it: the injected waits are written, and held to their count
        self.diag_report("w", diags[1:3], ["_Z1sv", "_Z1iv"])
        r = self.spills("--write-baseline", out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(out) as f:
            doc = json.load(f)
        entry = {"source": "kernels/flash/w.cu", "arch": "sm_90a", "function": "_Z1iv", "count": 2}
        self.assertEqual(doc["injected"], [entry])
        r = self.spills("--allow", out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.diag_report("w", diags[1:3] + [self.INJECT.format(fn="_Z1iv")], ["_Z1sv", "_Z1iv"])
        r = self.spills("--allow", out)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("INJECTED: kernels/flash/w.cu sm_90a _Z1iv: 3 warpgroup waits / arrives injected by ptxas "
                      "(baseline 2)", r.stdout)
        self.diag_report("w", diags[1:2], ["_Z1sv", "_Z1iv"])
        r = self.spills("--allow", out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("_Z1iv (kernels/flash/w.cu, sm_90a) has 1 injected wgmma waits / arrives, the baseline allows 2",
                      r.stdout)
        # malformed allowances
        for bad, message in (({**entry, "count": 0}, "injected[0].count"), ({**entry, "arch": ""}, "injected[0].arch")):
            with self.subTest(message):
                path = os.path.join(self.tmp, "bad.json")
                with open(path, "w") as f:
                    json.dump(dict(doc, injected=[bad]), f)
                r = self.spills("--allow", path)
                self.assertEqual((r.returncode, r.stdout), (2, ""), r.stderr)
                self.assertIn(message, r.stderr)

    def test_the_committed_baseline_reads(self):
        r = self.spills("--allow", os.path.join(ROOT, "tests", "data", "ptxas_spills.json"))
        self.assertEqual(r.returncode, EXIT_SKIP, r.stdout + r.stderr)  # no reports in this empty build

    @unittest.skipUnless(shutil.which("bash"), "bash is not installed")
    def test_the_launcher_keeps_the_report_and_passes_the_rest_through(self):
        fake = os.path.join(self.tmp, "fake-nvcc")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\n"
                    "echo 'compiling'\n"
                    "printf \"%s\" \"ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
                    "ptxas info    : Function properties for k\n"
                    "    0 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n\" >&2\n"
                    "echo 'a warning' >&2\n"
                    "exit ${FAKE_RC:-0}\n")
        os.chmod(fake, 0o755)
        obj = os.path.join(self.objdir, "k.cu.o")
        launcher = os.path.join(SCRIPTS, "ptxas_log.sh")
        r = subprocess.run(["bash", launcher, fake, "-c", "k.cu", "-o", obj], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual((r.stdout, r.stderr), ("compiling\n", "a warning\n"))
        with open(obj + ".ptxas") as f:
            self.assertIn("4 bytes spill stores", f.read())
        r = self.spills("--allow", self.baseline([]))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("OVER: kernels/flash/k.cu sm_90a k: spills 4 bytes (baseline 0)", r.stdout)
        # a failed compile keeps its exit status and writes no report
        os.remove(obj + ".ptxas")
        r = subprocess.run(["bash", launcher, fake, "-c", "k.cu", "-o", obj], capture_output=True, text=True,
                           env=dict(os.environ, FAKE_RC="3"))
        self.assertEqual(r.returncode, 3)
        self.assertFalse(os.path.exists(obj + ".ptxas"))


class SassSpills(unittest.TestCase):
    # cuobjdump -sass's layout: a function header, addresses in comments, labels before their instruction; an outer
    # loop (0x0040-0x0100) around an inner one (0x0060-0x00c0), a spill reloaded in the inner loop, one stored before
    # the loops and one reloaded after them.
    SASS = textwrap.dedent("""\
                code for sm_90a
                        Function : _Z1kPf
                .headerflags    @"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS"
                /*0000*/                   LDC R1, c[0x0][0x28] ;                    /* 0x00000a00ff017b82 */
                /*0010*/                   STL [R1], R4 ;                            /* 0x0000000401007387 */
                /*0020*/                   MOV R2, RZ ;                              /* 0x000000ff00027202 */
                /*0030*/                   MOV R3, RZ ;                              /* 0x000000ff00037202 */
        .L_x_1:
                /*0040*/                   IADD3 R2, R2, 0x1, RZ ;                   /* 0x0000000102027810 */
                /*0050*/                   MOV R5, RZ ;                              /* 0x000000ff00057202 */
        .L_x_0:
                /*0060*/                   LDL R6, [R1] ;                            /* 0x0000000001067983 */
                /*0070*/                   FADD R7, R6, R7 ;                         /* 0x0000000706077221 */
                /*0080*/                   IADD3 R5, R5, 0x1, RZ ;                   /* 0x0000000105057810 */
                /*0090*/                   ISETP.GE.AND P0, PT, R5, 0x8, PT ;        /* 0x000000080500780c */
                /*00a0*/                   NOP ;                                     /* 0x0000000000007918 */
                /*00b0*/                   NOP ;                                     /* 0x0000000000007918 */
                /*00c0*/              @!P0 BRA `(.L_x_0) ;                           /* 0xffffff9000008947 */
                /*00d0*/                   ISETP.GE.AND P1, PT, R2, 0x4, PT ;        /* 0x000000040200780c */
                /*00e0*/                   NOP ;                                     /* 0x0000000000007918 */
                /*00f0*/                   NOP ;                                     /* 0x0000000000007918 */
                /*0100*/              @!P1 BRA `(.L_x_1) ;                           /* 0xffffff3000009947 */
                /*0110*/                   LDL.64 R8, [R1+0x8] ;                     /* 0x0000080001087983 */
                /*0120*/                   BRA `(.L_x_2) ;                           /* 0x0000000000007947 */
        .L_x_2:
                /*0130*/                   EXIT ;                                    /* 0x000000000000794d */
        """)

    @staticmethod
    def run_on(text, *flags):
        """sass_spills.py FLAGS... on TEXT written to a file."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "k.sass")
            with open(path, "w") as f:
                f.write(text)
            return run_script("sass_spills.py", *flags, path)

    def test_spills_by_loop_depth(self):
        r = self.run_on(self.SASS)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("_Z1kPf: 20 instructions, 2 loops", r.stdout)  # the forward BRA is no loop
        self.assertIn("LDL: depth 0: 1, depth 2: 1", r.stdout)
        self.assertIn("STL: depth 0: 1", r.stdout)
        self.assertRegex(r.stdout, r"000060  depth 2  LDL R6, \[R1\]")
        r = self.run_on("not sass\n")
        self.assertEqual((r.returncode, r.stdout), (2, ""), r.stderr)
        self.assertIn("no 'Function :'", r.stderr)

    # cuobjdump -sass as it really prints (nvcc 13.0, sm_90a): branch targets as function-relative addresses, not labels.
    # A work loop (0x0040) around a K/V loop (0x0060) that reloads a spill; in the K/V loop an mbarrier wait whose slow
    # path the compiler laid out after EXIT (0x0100: spin on itself, then jump back to 0x0080). That jump back goes to an
    # address lower than its own but is no loop: 0x0080 does not dominate 0x0100's block. A spill stored before the loops
    # and one reloaded after them; BRA.DIV, which falls through when the warp is converged.
    SASS_CUOBJDUMP = textwrap.dedent("""\
                code for sm_90a
                        Function : _Z2k2Pf
                .headerflags    @"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS"
                /*0000*/                   LDC R1, c[0x0][0x28] ;                    /* 0x00000a00ff017b82 */
                /*0010*/                   STL [R1], R4 ;                            /* 0x0000000401007387 */
                /*0020*/                   BRA.DIV UR4, 0x130 ;                      /* 0x0000000604047947 */
                /*0030*/                   MOV R2, RZ ;                              /* 0x000000ff00027202 */
                /*0040*/                   IADD3 R2, R2, 0x1, RZ ;                   /* 0x0000000102027810 */
                /*0050*/                   MOV R5, RZ ;                              /* 0x000000ff00057202 */
                /*0060*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P2, [UR9], R4 ;  /* 0x0000000001067983 */
                /*0070*/              @!P2 BRA 0x100 ;                               /* 0x0000000000008947 */
                /*0080*/                   LDL R6, [R1] ;                            /* 0x0000000001067983 */
                /*0090*/                   IADD3 R5, R5, 0x1, RZ ;                   /* 0x0000000105057810 */
                /*00a0*/                   ISETP.GE.AND P0, PT, R5, 0x8, PT ;        /* 0x000000080500780c */
                /*00b0*/              @!P0 BRA 0x60 ;                                /* 0xffffff9000008947 */
                /*00c0*/                   ISETP.GE.AND P1, PT, R2, 0x4, PT ;        /* 0x000000040200780c */
                /*00d0*/              @!P1 BRA 0x40 ;                                /* 0xffffff3000009947 */
                /*00e0*/                   LDL.64 R8, [R1+0x8] ;                     /* 0x0000080001087983 */
                /*00f0*/                   EXIT ;                                    /* 0x000000000000794d */
                /*0100*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P2, [UR9], R4 ;  /* 0x0000000001067983 */
                /*0110*/              @!P2 BRA 0x100 ;                               /* 0xfffffff000008947 */
                /*0120*/                   BRA 0x80 ;                                /* 0xffffff5000007947 */
                /*0130*/                   STL [R1+0x4], R3 ;                        /* 0x0000000401007387 */
                /*0140*/                   BRA 0x30 ;                                /* 0xfffffef000007947 */
        """)

    def test_cuobjdump_addresses_and_natural_loops(self):
        r = self.run_on(self.SASS_CUOBJDUMP)
        self.assertEqual(r.returncode, 0, r.stderr)
        # three loops: work (0x40), K/V (0x60, with the slow path 0x100-0x120 in it), the spin at 0x100
        self.assertIn("_Z2k2Pf: 21 instructions, 3 loops", r.stdout)
        self.assertIn("loop at 000040: 13 instructions", r.stdout)  # 0x40-0xd0 and the slow path 0x100-0x120
        self.assertIn("loop at 000060: 9 instructions", r.stdout)
        self.assertIn("loop at 000100: 2 instructions", r.stdout)
        self.assertIn("LDL: depth 0: 1, depth 2: 1", r.stdout)
        self.assertIn("STL: depth 0: 2", r.stdout)
        self.assertRegex(r.stdout, r"000080  depth 2  LDL R6, \[R1\]  \(innermost loop at 000060, 9 instructions\)")
        self.assertRegex(r.stdout, r"0000e0  depth 0  LDL.64 R8")

    def test_summary(self):
        # the two listings and a function with no local memory, which the summary leaves out
        clean = "        Function : _Z5cleanv\n        /*0000*/                   EXIT ;    /* 0x000000000000794d */\n"
        r = self.run_on(self.SASS + self.SASS_CUOBJDUMP + clean, "--summary")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0].split("\t")[:2], ["ldl_out", "stl_out"])
        # ldl/stl outside loops, inside loops, the busiest loop's local ops and size, instructions, name
        self.assertEqual(lines[1].split("\t"), ["1", "1", "1", "0", "1", "7", "20", "_Z1kPf"])
        self.assertEqual(lines[2].split("\t"), ["1", "2", "1", "0", "1", "9", "21", "_Z2k2Pf"])
        self.assertEqual(lines[3], "# 3 functions, 2 with local-memory loads or stores")
        r = run_script("sass_spills.py", "--summary")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--summary needs a SASS file", r.stderr)


class SassMix(unittest.TestCase):
    # A K/V loop as ptxas lays one out (cuobjdump -sass's form): the header waits on an mbarrier, whose slow path sits
    # after EXIT and jumps back (0x0120-0x0140); a masked block (0x0080-0x00a0) that @P1 BRA skips; the softmax's
    # FFMA/MUFU (0x00b0-0x00d0) and the back edge. One pass with no mask and no retry: 0x0040-0x0070 and
    # 0x00b0-0x00e0, 8 instructions; the loop as laid out: 14 (0x0040-0x00e0 and the slow path).
    SASS = textwrap.dedent("""\
                code for sm_90a
                        Function : _Z2kvPf
                /*0000*/                   MOV R2, RZ ;                              /* 0x000000ff00027202 */
                /*0010*/                   MOV R3, RZ ;                              /* 0x000000ff00037202 */
                /*0020*/                   MOV R4, RZ ;                              /* 0x000000ff00047202 */
                /*0030*/                   MOV R5, RZ ;                              /* 0x000000ff00057202 */
                /*0040*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P2, [UR9], R4 ;  /* 0x0000000001067983 */
                /*0050*/              @!P2 BRA 0x120 ;                               /* 0x0000000000008947 */
                /*0060*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ ;  /* 0x0000000001067983 */
                /*0070*/               @P1 BRA 0xb0 ;                                /* 0x0000000000008947 */
                /*0080*/                   ISETP.GE.AND P3, PT, R5, R6, PT ;         /* 0x000000060500720c */
                /*0090*/                   FSEL R24, R24, -INF , !P3 ;               /* 0x0000000018187808 */
                /*00a0*/                   FSEL R25, R25, -INF , !P3 ;               /* 0x0000000019197808 */
                /*00b0*/                   FFMA R24, R24, R7, -R8 ;                  /* 0x0000000718187223 */
                /*00c0*/                   MUFU.EX2 R24, R24 ;                       /* 0x0000001800187308 */
                /*00d0*/                   FFMA R25, R25, R7, -R8 ;                  /* 0x0000000719197223 */
                /*00e0*/              @!P0 BRA 0x40 ;                                /* 0xffffff5000008947 */
                /*00f0*/                   STG.E [R2.64], R24 ;                      /* 0x0000001802007986 */
                /*0100*/                   EXIT ;                                    /* 0x000000000000794d */
                /*0110*/                   BRA 0x110 ;                               /* 0xfffffff000007947 */
                /*0120*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P2, [UR9], R4 ;  /* 0x0000000001067983 */
                /*0130*/              @!P2 BRA 0x120 ;                               /* 0xfffffff000008947 */
                /*0140*/                   BRA 0x60 ;                                /* 0xffffff2000007947 */
        """)

    def run_on(self, text, *flags):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "k.sass")
            with open(path, "w") as f:
                f.write(text)
            return run_script("sass_mix.py", path, *flags)

    def test_shortest_pass(self):
        r = self.run_on(self.SASS, "--min-size", "5")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("loop at 000040: 14 instructions in 6 blocks; shortest pass 8 instructions "
                      "(000040 000060 0000b0)", r.stdout)
        rows = {l.split()[0]: l.split()[1:] for l in r.stdout.splitlines() if re.match(r"^    [A-Z]+ +\d+ +\d+$", l)}
        # opcode: in the loop as laid out, in one pass (the predicate and the suffixes dropped)
        self.assertEqual(rows["FSEL"], ["2", "0"])
        self.assertEqual(rows["ISETP"], ["1", "0"])
        self.assertEqual(rows["FFMA"], ["2", "2"])
        self.assertEqual(rows["MUFU"], ["1", "1"])
        self.assertEqual(rows["HGMMA"], ["1", "1"])
        self.assertEqual(rows["SYNCS"], ["2", "1"])
        self.assertEqual(rows["BRA"], ["5", "3"])
        self.assertIn("off the pass: 000080, 3 instructions (FSEL 2, ISETP 1)", r.stdout)
        self.assertIn("off the pass: 000120, 2 instructions (BRA 1, SYNCS 1)", r.stdout)
        self.assertIn("off the pass: 000140, 1 instructions (BRA 1)", r.stdout)
        # the spin at 0x0120 is a loop of its own, under --min-size; the default (100) leaves both out
        self.assertNotIn("loop at 000120", r.stdout)
        r = self.run_on(self.SASS)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "_Z2kvPf: 21 instructions"), r.stderr)
        # --json: the same reading as data
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "mix.json")
            r = self.run_on(self.SASS, "--min-size", "5", "--json", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                d = json.load(f)
        self.assertEqual(d["min_size"], 5)
        (fn,) = d["functions"]
        self.assertEqual((fn["function"], fn["instructions"], len(fn["loops"])), ("_Z2kvPf", 21, 1))
        lp = fn["loops"][0]
        self.assertEqual((lp["header"], lp["size"], lp["blocks"]), ("000040", 14, 6))
        self.assertEqual(lp["pass"], {"size": 8, "blocks": ["000040", "000060", "0000b0"]})
        self.assertEqual(lp["opcodes"]["FSEL"], [2, 0])
        self.assertEqual(lp["opcodes"]["FFMA"], [2, 2])
        self.assertEqual([b["start"] for b in lp["off_pass"]], ["000080", "000120", "000140"])
        self.assertEqual(lp["off_pass"][0]["opcodes"], {"FSEL": 2, "ISETP": 1})

    def test_bad_input(self):
        r = self.run_on(self.SASS, "--function", "nosuch")
        self.assertEqual((r.returncode, r.stdout), (2, ""))
        self.assertIn("no function's name contains 'nosuch'", r.stderr)
        r = self.run_on(self.SASS, "--min-size", "0")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--min-size must be a positive integer, got '0'", r.stderr)
        r = self.run_on("not sass\n")
        self.assertEqual((r.returncode, r.stdout), (2, ""))
        self.assertIn("no 'Function :'", r.stderr)
        r = run_script("sass_mix.py", "--min-size")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--min-size needs a value", r.stderr)


# ---------------------------------------------------------------------------------------------------
# call_step.sh: a device call's plumbing, with stand-ins for the carried flashbench and GPU tests


CALL_FAKE_FLASHBENCH = """#!/usr/bin/env python3
# flashbench run SPEC ... -o FILE, a stand-in: every case of the spec for each of its kernels, verified, at 1 ms
# (0.9 ms where FAKE_FAST is set), and the order of the runs appended to runs.txt beside the call.
import json, os, sys
sys.path.insert(0, @SCRIPTS@)
import fbresults, fbspec, peers
args = sys.argv[1:]
spec = fbspec.load_spec(args[1])
if "--list" in args:  # a case a line, the memory it needs: more where FAKE_WS is set (a plan with a workspace)
    for i, c in enumerate(spec["cases"]):
        print(f"{i + 1}  {peers.make_record(c, 'k', 'ok', times_ms=[1.0])['key']}  "
              f"{'2.5' if os.environ.get('FAKE_WS') else '1.5'} MiB")
    sys.exit(0)
out = args[args.index("-o") + 1]
with open(os.path.join(os.getcwd(), "runs.txt"), "a") as f:
    f.write(os.path.basename(out) + "\\n")
ms = 0.9 if os.environ.get("FAKE_FAST") else 1.0
# --variant NAME=KERNEL:...: NAME runs after its kernel, 0.8 ms where NAME starts with "fast"
variants = [args[i + 1].split("=", 1)[0] for i, a in enumerate(args) if a == "--variant"]
with open(os.path.join(os.getcwd(), "variants.txt"), "a") as f:
    f.write(" ".join(variants) + "\\n")
recs = []
for c in spec["cases"]:
    for k in spec["kernels"] + variants:
        t = 0.8 if k.startswith("fast") else ms
        r = peers.make_record(c, k, "ok", times_ms=[t] * 8)
        r["verified"] = True
        recs.append(r)
settings = {"warmup": 0, "reps": 8}
if "--interleave" in args:
    settings["rep_order"] = "interleaved"
doc = {"schema_version": fbresults.SCHEMA_VERSION, "tool": {"name": "fake", "version": "0", "git": "x"},
        "created": "2026-01-01T00:00:00Z", "backend": "cuda", "device": {}, "spec": spec["spec"],
        "settings": settings, "results": recs}
fbresults.write_atomic(out, json.dumps(doc))
"""


@unittest.skipUnless(shutil.which("bash") and shutil.which("xz") and shutil.which("setsid"),
                     "bash, xz or setsid is not installed")
class CallStep(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name
        self.repo = os.path.join(self.tmp, "repo")          # the device's copy of the working tree
        self.out = os.path.join(self.tmp, "OUT")            # what the device tool brings back
        os.makedirs(os.path.join(self.repo, "specs"))
        os.makedirs(os.path.join(self.repo, "out"))
        os.makedirs(self.out)
        os.symlink(SCRIPTS, os.path.join(self.repo, "scripts"))
        for name, n in (("r-a", 256), ("r-b", 512)):
            with open(os.path.join(self.repo, "specs", name + ".json"), "w") as f:
                json.dump({"seq": [n], "batch": [1], "heads": 2, "head_dim": [64], "dtype": ["bf16"],
                           "pass": ["bwd"], "kernels": ["k"]}, f)
        pack = os.path.join(self.tmp, "pack", "build-dev")
        os.makedirs(os.path.join(pack, "tests"))
        with open(os.path.join(pack, "flashbench"), "w") as f:
            f.write(CALL_FAKE_FLASHBENCH.replace("@SCRIPTS@", repr(SCRIPTS)))
        with open(os.path.join(pack, "tests", "flashbench_gpu_tests"), "w") as f:
            f.write("#!/bin/sh\necho 'All tests passed (1 assertion in 1 test case)'\n")
        for exe in ("flashbench", os.path.join("tests", "flashbench_gpu_tests")):
            os.chmod(os.path.join(pack, exe), 0o755)
        subprocess.run(f"tar cf - build-dev | xz > {shlex_quote(os.path.join(self.repo, 'out', 'b.txz'))}",
                       shell=True, check=True, cwd=os.path.dirname(pack))
        # the build's source folder does not exist on the device: call_begin links it to the copy
        with open(os.path.join(self.repo, "out", "srcdir.txt"), "w") as f:
            f.write(os.path.join(self.tmp, "lead-src") + "\n")
        with open(os.path.join(self.repo, "out", "commit.txt"), "w") as f:
            f.write("abc123\n")

    def tearDown(self):
        self._tmp.cleanup()

    def call(self, body, deadline=120):
        script = os.path.join(self.repo, "call.sh")
        with open(script, "w") as f:
            f.write("set -uo pipefail\nsource scripts/call_step.sh\ncall_begin $OUT/X; mkdir -p $R/ab\n" + body +
                    "\ncall_end X\n")
        return subprocess.run(["bash", script], capture_output=True, text=True, cwd=self.repo, timeout=300,
                              env=dict(os.environ, OUT=self.out, DEADLINE=str(deadline)))

    def test_rounds_interleave_and_the_call_packs_what_the_rule_reads(self):
        r = self.call("step tests 20 $gt\n"
                      "bash -c 'echo git=$FLASHBENCH_GIT'\n"  # exported: peers.py's records name the commit built
                      "ab_rounds $R/ab specs 3 'r-a r-b' def=X=1 new=FAKE_FAST=1\n"
                      "python3 scripts/ab_rule.py $R/ab --spec-dir specs --kernel k --base def --variant new \\\n"
                      "  --rounds 3 --rows 'r-*' --min-geomean 1.1 --min-row 1.1 > $R/rule.txt\n"
                      "echo rule=$?")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("== tests rc=0", r.stdout)
        self.assertIn("rule=0", r.stdout)  # 1 ms / 0.9 ms on both rows in every round
        self.assertIn("git=abc123\n", r.stdout)
        with open(os.path.join(self.repo, "runs.txt")) as f:
            runs = f.read().split()
        self.assertEqual(runs, ["def-r-a-1.json", "new-r-a-1.json", "def-r-b-1.json", "new-r-b-1.json",
                                "new-r-a-2.json", "def-r-a-2.json", "new-r-b-2.json", "def-r-b-2.json",
                                "def-r-a-3.json", "new-r-a-3.json", "def-r-b-3.json", "new-r-b-3.json"])
        names = subprocess.run(["tar", "tzf", os.path.join(self.out, "X.tgz")], capture_output=True, text=True,
                               check=True).stdout.split()
        for name in ("X/commit.txt", "X/tests.log", "X/rule.txt", "X/ab/new-r-b-3.json"):
            self.assertIn(name, names)
        self.assertFalse(os.path.exists(os.path.join(self.out, "X")))  # packed, then removed

    def test_ab_variants_runs_both_orders_in_one_process_each_and_pairs_them(self):
        r = self.call("ab_variants $R/ab specs 'r-a r-b' k null=FB_SM90_FWD_PROBE=tailsplit "
                      "fastw=FB_SM90_FWD_PROBE=k0rec:FB_SM90_BWD64=direct\ncp $R/ab/paired.json .")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(self.repo, "runs.txt")) as f:
            self.assertEqual(f.read().split(), ["r-a-1.json", "r-b-1.json", "r-a-2.json", "r-b-2.json"])
        with open(os.path.join(self.repo, "variants.txt")) as f:  # named in the order given, then reversed
            self.assertEqual(f.read().splitlines(), ["null fastw", "null fastw", "fastw null", "fastw null"])
        with open(os.path.join(self.repo, "paired.json")) as f:
            pairs = json.load(f)["pairs"]
        self.assertEqual(set(pairs), {"null:k", "fastw:k"})
        for row in pairs["fastw:k"]["rows"].values():  # 1 ms / 0.8 ms, 16 pairs from the two runs
            self.assertAlmostEqual(row["median"], 1.25)
            self.assertEqual(row["n"], 16)
        for row in pairs["null:k"]["rows"].values():
            self.assertAlmostEqual(row["median"], 1.0)

    def test_list_beside_pairs_each_case_as_built_and_under_the_assignment(self):
        r = self.call("list_beside specs 'r-a r-b' ws FAKE_WS=1 $R/list.txt\ncp $R/list.txt .\nls -a $R > files.txt")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(self.repo, "list.txt")) as f:
            lines = f.read().splitlines()
        self.assertEqual(lines, ["r-a: built 1 b1-h2-kv2-n256-d64-bf16-full-bwd 1.5 MiB | ws: 1 "
                                 "b1-h2-kv2-n256-d64-bf16-full-bwd 2.5 MiB",
                                 "r-b: built 1 b1-h2-kv2-n512-d64-bf16-full-bwd 1.5 MiB | ws: 1 "
                                 "b1-h2-kv2-n512-d64-bf16-full-bwd 2.5 MiB"])
        with open(os.path.join(self.repo, "files.txt")) as f:
            self.assertNotIn(".list-a", f.read())  # its scratch files removed

    def test_spec_for_sets_the_kernel_and_the_pass_and_keeps_the_rest(self):
        with open(os.path.join(self.repo, "specs", "both.json"), "w") as f:
            json.dump({"name": "s", "seq": [256], "batch": [1], "heads": 2, "head_dim": [64], "dtype": ["bf16"],
                       "pass": ["fwd", "bwd"], "kernels": ["k", "other"], "seed": 7}, f)
        r = self.call("spec_for specs/both.json $R/one.json k bwd && spec_for specs/both.json $R/two.json other\n"
                      "cp $R/one.json $R/two.json specs/")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(self.repo, "specs", "one.json")) as f:
            one = json.load(f)
        with open(os.path.join(self.repo, "specs", "two.json")) as f:
            two = json.load(f)
        self.assertEqual((one["name"], one["pass"], one["kernels"], one["seed"]), ("s-bwd", ["bwd"], ["k"], 7))
        self.assertEqual((two["name"], two["pass"], two["kernels"], two["seed"]), ("s", ["fwd", "bwd"], ["other"], 7))

    def test_ncu_prof_keeps_the_two_pages_and_drops_the_report(self):
        # A stand-in ncu on PATH: profiling writes the report (and the command it profiled, to check the filter and
        # the kernel reached flashbench); -i prints a details page or a SASS page.
        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(bindir)
        with open(os.path.join(bindir, "ncu"), "w") as f:
            f.write("#!/bin/sh\n"
                    "if [ \"$1\" = -i ]; then\n"
                    "  case \"$*\" in *source*) echo 'Address,Source,Warp Stall Sampling';;\n"
                    "  *) printf '    Elapsed Cycles    cycle    302,854\\n    Duration    us    173.66\\n';; esac\n"
                    "  exit 0\nfi\n"
                    "while [ $# -gt 0 ]; do [ \"$1\" = -o ] && o=$2; [ \"$1\" = run ] && shift && break; shift; done\n"
                    "echo \"$*\" > \"$o.ncu-rep\"\ncp \"$o.ncu-rep\" \"$o.args\"\n")
        os.chmod(os.path.join(bindir, "ncu"), 0o755)
        script = os.path.join(self.repo, "call.sh")
        with open(script, "w") as f:
            f.write("set -uo pipefail\nsource scripts/call_step.sh\ncall_begin $OUT/X\n"
                    "ncu_prof ours 'b32-n512' flash-sm90 flash_sm90_fwd_kernel\ncall_end X\n")
        r = subprocess.run(["bash", script], capture_output=True, text=True, cwd=self.repo, timeout=120,
                           env=dict(os.environ, OUT=self.out, DEADLINE="120",
                                    PATH=bindir + os.pathsep + os.environ["PATH"]))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("== ncu-ours rc=0", r.stdout)
        self.assertIn("Duration    us    173.66", r.stdout)
        names = subprocess.run(["tar", "tzf", os.path.join(self.out, "X.tgz")], capture_output=True, text=True,
                               check=True).stdout.split()
        self.assertIn("X/ours/details.txt", names)
        self.assertIn("X/ours/source-sass.csv", names)
        self.assertNotIn("X/ours/rep.ncu-rep", names)  # the report itself does not come back
        args = subprocess.run(["tar", "xzOf", os.path.join(self.out, "X.tgz"), "X/ours/rep.args"],
                              capture_output=True, text=True, check=True).stdout
        self.assertIn("--kernels flash-sm90 --filter b32-n512", args)

    def test_ab_spec_writes_a_row_the_spec_loader_takes_and_refuses_a_causal_word(self):
        r = self.call("ab_spec specs g 3 12 4 777 64 fp16 true && ab_spec specs f 2 8 8 512 128 bf16 false fwd\n"
                      "ab_spec specs bad 1 2 2 256 64 bf16 yes; echo bad=$?")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("bad=1", r.stdout)
        self.assertIn("CAUSAL is true or false, not 'yes'", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.repo, "specs", "bad.json")))
        g = fbspec.load_spec(os.path.join(self.repo, "specs", "g.json"))
        f = fbspec.load_spec(os.path.join(self.repo, "specs", "f.json"))
        (gc,), (fc,) = g["cases"], f["cases"]
        self.assertEqual((gc["batch"], gc["heads"], gc["kv_heads"], gc["seq_q"], gc["head_dim"], gc["dtype"],
                          gc["causal"], gc["pass"]), (3, 12, 4, 777, 64, "fp16", True, "bwd"))
        self.assertEqual((fc["head_dim"], fc["causal"], fc["pass"]), (128, False, "fwd"))
        self.assertEqual((g["kernels"], g["spec"]["seed"], g["spec"]["verify"]), (["flash-sm90"], 42, True))

    def test_ab_probe_runs_the_rounds_and_reads_the_house_rule(self):
        # FAKE_FAST makes every case 1 ms -> 0.9 ms: the rows pass (1.11x), the control moves as much and fails the
        # control band, so the verdict is NOT MET and names the control; PEERS=0: no peers run.
        r = self.call("mkdir -p $R/specs && ab_spec $R/specs p-a 1 4 2 256 64 bf16 true && "
                      "ab_spec $R/specs p-b 1 4 2 512 64 bf16 true && ab_spec $R/specs c-a 1 4 4 256 64 bf16 false\n"
                      "PEERS=0 ab_probe $R/specs 2 fast FAKE_FAST=1 'p-*' 'c-*'\n"
                      "cp $R/list.txt $R/rule.txt . && ls $R/ab > ab.txt")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("rule-fast rc=1", r.stdout)
        with open(os.path.join(self.repo, "rule.txt")) as f:
            rule = f.read()
        self.assertIn("NOT MET", rule)
        self.assertIn("c-a", rule.split("verdict")[1])
        with open(os.path.join(self.repo, "runs.txt")) as f:
            runs = f.read().split()
        self.assertEqual(runs, ["def-c-a-1.json", "fast-c-a-1.json", "def-p-a-1.json", "fast-p-a-1.json",
                                "def-p-b-1.json", "fast-p-b-1.json", "fast-c-a-2.json", "def-c-a-2.json",
                                "fast-p-a-2.json", "def-p-a-2.json", "fast-p-b-2.json", "def-p-b-2.json"])
        with open(os.path.join(self.repo, "list.txt")) as f:
            self.assertEqual(len(f.read().splitlines()), 3)
        with open(os.path.join(self.repo, "ab.txt")) as f:
            self.assertNotIn("peers-", f.read())

    def lead_repo(self, extra_scripts=None):
        """A lead's checkout for call_pack.sh: a git repo (build-dev/ and out/ ignored) holding call_pack.sh and
        extra_scripts ({name: text} under scripts/), committed, and build-dev's packed files but flashbench as
        stand-ins. Returns (repo, its HEAD, the build folder)."""
        repo = os.path.join(self.tmp, "lead")
        os.makedirs(os.path.join(repo, "scripts"))
        shutil.copy(os.path.join(SCRIPTS, "call_pack.sh"), os.path.join(repo, "scripts"))
        for name, text in (extra_scripts or {}).items():
            with open(os.path.join(repo, "scripts", name), "w") as f:
                f.write(text)
        git = lambda *a: subprocess.run(["git", "-C", repo, *a], capture_output=True, text=True, check=True).stdout
        git("init", "-q")
        with open(os.path.join(repo, ".gitignore"), "w") as f:
            f.write("/build-dev/\n/out/\n")
        git("add", ".")
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
        build = os.path.join(repo, "build-dev")
        for f in ("tests/libfb_fixture_fault.so", "examples/plugin/libfb_example_cuda.so",
                  "tests/flashbench_gpu_tests", "libflashbench_capi.so"):
            os.makedirs(os.path.dirname(os.path.join(build, f)), exist_ok=True)
            shutil.copy("/bin/true", os.path.join(build, f))
        return repo, git("rev-parse", "HEAD").strip(), build

    def fake_flashbench(self, build, sha):
        """build's flashbench: an ELF binary (call_pack strips it) that prints a version naming sha."""
        src = os.path.join(self.tmp, "fb.c")
        with open(src, "w") as f:
            f.write(f'#include <stdio.h>\nint main(void) {{ puts("flashbench 0.1.0 (git {sha})"); return 0; }}\n')
        subprocess.run(["cc", "-o", os.path.join(build, "flashbench"), src], check=True)

    @unittest.skipUnless(shutil.which("git") and shutil.which("strip") and shutil.which("cc"),
                         "git, strip or cc is not installed")
    def test_pack_names_the_commit_the_build_came_from(self):
        repo, head, build = self.lead_repo()
        fake_version = lambda sha: self.fake_flashbench(build, sha)
        pack = ["bash", os.path.join(repo, "scripts", "call_pack.sh")]
        fake_version(head[:12])
        r = subprocess.run(pack, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(repo, "out", "commit.txt")) as f:
            self.assertEqual(f.read().strip(), head)
        with open(os.path.join(repo, "out", "srcdir.txt")) as f:
            self.assertEqual(os.path.realpath(f.read().strip()), os.path.realpath(repo))
        names = subprocess.run(["tar", "tJf", os.path.join(repo, "out", "b.txz")], capture_output=True, text=True,
                               check=True).stdout.split()
        self.assertIn("build-dev/tests/flashbench_gpu_tests", names)
        self.assertIn("build-dev/libflashbench_capi.so", names)  # the C API, for scripts/fb_torch.py
        # a build of another commit, or a tree with uncommitted changes: refused, nothing packed
        for sha, dirty, message in ((head[:12] + "-dirty", False, "was built from"),
                                    ("0123456789ab", False, "was built from"),
                                    (head[:12], True, "uncommitted changes")):
            with self.subTest(message=message, sha=sha):
                fake_version(sha)
                if dirty:
                    with open(os.path.join(repo, ".gitignore"), "a") as f:
                        f.write("# changed\n")
                r = subprocess.run(pack, capture_output=True, text=True)
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                self.assertIn(message, r.stderr)

    @unittest.skipUnless(shutil.which("git") and shutil.which("strip") and shutil.which("cc"),
                         "git, strip or cc is not installed")
    def test_pack_refuses_kernels_that_fail_the_spill_check(self):
        # A build with ptxas's reports (CMake's CUDA compiler file, the kernel library's folder): call_pack runs
        # scripts/ptxas_spills.py as CI does (here a stand-in exiting STAND_IN_RC): 1 refuses, 0 and 77 (nothing to
        # check) pack.
        stand_in = "import os, sys\nprint('  OVER: k spills 60 bytes', sys.argv[1:])\n" \
                   "sys.exit(int(os.environ['STAND_IN_RC']))\n"
        repo, head, build = self.lead_repo({"ptxas_spills.py": stand_in})
        os.makedirs(os.path.join(build, "CMakeFiles", "flashbench_kernels.dir"))
        os.makedirs(os.path.join(build, "CMakeFiles", "3.25.1"))
        with open(os.path.join(build, "CMakeFiles", "3.25.1", "CMakeCUDACompiler.cmake"), "w") as f:
            f.write('set(CMAKE_CUDA_COMPILER "/usr/bin/nvcc")\nset(CMAKE_CUDA_COMPILER_VERSION "13.0.88")\n')
        self.fake_flashbench(build, head[:12])
        pack = ["bash", os.path.join(repo, "scripts", "call_pack.sh")]
        for rc, packed in ((1, False), (0, True), (77, True)):
            with self.subTest(rc=rc):
                shutil.rmtree(os.path.join(repo, "out"), ignore_errors=True)
                r = subprocess.run(pack, capture_output=True, text=True, env=dict(os.environ, STAND_IN_RC=str(rc)))
                self.assertEqual(r.returncode, 0 if packed else 2, r.stdout + r.stderr)
                self.assertEqual(os.path.exists(os.path.join(repo, "out", "b.txz")), packed)
                if not packed:
                    self.assertIn("fail the ptxas spill check", r.stderr)
                    self.assertIn("OVER: k spills 60 bytes", r.stderr)
                    self.assertIn("--nvcc-version', '13.0.88'", r.stderr)

    def test_a_step_past_the_deadline_is_skipped_and_a_slow_one_stopped(self):
        r = self.call("step slow 3 sleep 30\nstep late 100 true\nstep quick 2 true", deadline=8)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"== slow rc=124 [34]s")
        self.assertIn("SKIP late (no time)", r.stdout)
        self.assertIn("== quick rc=0", r.stdout)


# ---------------------------------------------------------------------------------------------------
# peer_rounds.py: a sweep and its peers in interleaved rounds, with stand-ins for flashbench and peers.py


class VersionHeader(unittest.TestCase):
    """cmake/version.cmake: the commit a build names, from git or from the environment's FLASHBENCH_GIT."""

    def run_version(self, env_git=None):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "version.h")
            env = dict(os.environ)
            env.pop("FLASHBENCH_GIT", None)
            if env_git is not None:
                env["FLASHBENCH_GIT"] = env_git
            proc = subprocess.run(["cmake", f"-DSOURCE_DIR={ROOT}", "-DVERSION=9.8.7", f"-DOUT={out}", "-P",
                                   os.path.join(ROOT, "cmake", "version.cmake")],
                                  env=env, capture_output=True, text=True)
            text = None
            if os.path.exists(out):
                with open(out) as f:
                    text = f.read()
            return proc, text

    @unittest.skipIf(shutil.which("cmake") is None, "cmake not found")
    def test_environment_names_the_commit(self):
        proc, text = self.run_version("0123456789ab")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn('#define FLASHBENCH_GIT "0123456789ab"', text)
        self.assertIn('#define FLASHBENCH_VERSION "9.8.7"', text)

    @unittest.skipIf(shutil.which("cmake") is None, "cmake not found")
    def test_without_it_git_or_unknown(self):
        proc, text = self.run_version()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("0123456789ab", text)
        self.assertRegex(text, r'#define FLASHBENCH_GIT "[0-9a-z-]+"')
        proc, text = self.run_version("")  # empty: as unset
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertRegex(text, r'#define FLASHBENCH_GIT "[0-9a-z-]+"')

    def test_peers_name_the_same_commit(self):
        """scripts/peers.py's records name FLASHBENCH_GIT's commit where set, git's otherwise; a bad name is refused
        (exit 2, the variable named) before any timing."""
        saved = os.environ.pop("FLASHBENCH_GIT", None)
        try:
            self.assertNotEqual(peers.tool_info()["git"], "0123456789ab")
            os.environ["FLASHBENCH_GIT"] = "0123456789ab"
            self.assertEqual(peers.tool_info()["git"], "0123456789ab")
            os.environ["FLASHBENCH_GIT"] = "a b"
            with self.assertRaisesRegex(ValueError, "FLASHBENCH_GIT"):
                peers.tool_info()
        finally:
            os.environ.pop("FLASHBENCH_GIT", None)
            if saved is not None:
                os.environ["FLASHBENCH_GIT"] = saved
        env = dict(os.environ, FLASHBENCH_GIT='abc"def')
        proc = run_script("peers.py", os.path.join(ROOT, "configs", "quick.json"), env=env)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("FLASHBENCH_GIT", proc.stderr)

    @unittest.skipIf(shutil.which("cmake") is None, "cmake not found")
    def test_a_name_that_would_break_the_header_is_refused(self):
        for bad in ['abc"def', "a b", "x\\y"]:
            proc, text = self.run_version(bad)
            self.assertNotEqual(proc.returncode, 0, bad)
            self.assertIn("FLASHBENCH_GIT", proc.stderr)
            self.assertIsNone(text)


class PeerRounds(unittest.TestCase):
    CASE = {"batch": 1, "heads": 2, "kv_heads": 2, "seq": 64, "head_dim": 64, "dtype": "bf16", "causal": False,
            "pass": "fwd"}
    # Each stand-in appends its letter to calls.txt and copies fixtures/<name>-<its call count>.json to -o.
    STAND_IN = textwrap.dedent("""\
        #!{python}
        import os, shutil, sys
        here = os.path.dirname(os.path.abspath(__file__))
        log = os.path.join(here, "calls.txt")
        n = 1 + (open(log).read().count("{letter}") if os.path.exists(log) else 0)
        open(log, "a").write("{letter}%d " % n)
        open(os.path.join(here, "args-{letter}.txt"), "a").write(" ".join(sys.argv[1:]) + "\\n")
        rc = int(os.environ.get("STAND_IN_RC_{letter}", "0"))
        out = sys.argv[sys.argv.index("-o") + 1]
        if rc in (0, 1):
            shutil.copy(os.path.join(here, "fixtures", "{name}-%d.json" % n), out)
        sys.exit(rc)
        """)

    def rec(self, kernel, ms, verified=True, **case):
        r = peers.make_record(dict(self.CASE, **case), kernel, "ok", times_ms=[ms])
        r["verified"] = verified
        return r

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        fix = os.path.join(self.tmp, "fixtures")
        os.makedirs(fix)
        # n64: peer/ours 0.9 then 0.95 (behind in both rounds); n128: 1.2 then 0.9 (combined above 1.0)
        for i, (a, b) in enumerate([(0.9, 1.2), (0.95, 0.9)], 1):
            with open(os.path.join(fix, f"fb-{i}.json"), "w") as f:
                json.dump(results_doc([self.rec("k", 1.0), self.rec("k", 1.0, seq=128)]), f)
            with open(os.path.join(fix, f"peers-{i}.json"), "w") as f:
                json.dump(results_doc([self.rec("p", a, None), self.rec("p", b, None, seq=128)]), f)
        self.fb = os.path.join(self.tmp, "flashbench")
        self.peers = os.path.join(self.tmp, "peers.py")
        for path, letter, name in ((self.fb, "F", "fb"), (self.peers, "P", "peers")):
            with open(path, "w") as f:
                f.write(self.STAND_IN.format(python=sys.executable, letter=letter, name=name))
            os.chmod(path, stat.S_IRWXU)
        self.spec = os.path.join(self.tmp, "spec.json")
        with open(self.spec, "w") as f:
            json.dump({"seq": [64, 128], "batch": 1, "heads": 2, "head_dim": 64, "dtype": "bf16"}, f)

    def run_rounds(self, *extra, env=None, out="out"):
        return run_script("peer_rounds.py", self.spec, "-o", os.path.join(self.tmp, out), "--pair", "k:p",
                          "--flashbench", self.fb, "--peers", self.peers, *extra, env=env)

    def calls(self):
        with open(os.path.join(self.tmp, "calls.txt")) as f:
            return f.read().split()

    def test_rounds_interleave_and_the_ratios_cover_every_round(self):
        r = self.run_rounds("--run-arg=--kernels=k", "--peers-arg=--busy-hold", "--peers-arg=--fwd-training")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(self.tmp, "args-P.txt")) as f:  # every peers.py run got the extra arguments
            self.assertEqual([l.split()[-2:] for l in f.read().splitlines()], [["--busy-hold", "--fwd-training"]] * 2)
        with open(os.path.join(self.tmp, "args-F.txt")) as f:
            self.assertEqual([l.split()[-1] for l in f.read().splitlines()], ["--kernels=k"] * 2)
        self.assertEqual(self.calls(), ["F1", "P1", "F2", "P2"], "flashbench and the peers take turns, round by round")
        self.assertRegex(r.stdout, r"b1-h2-kv2-n64-d64-bf16-full-fwd\s+0\.900\s+0\.950\s+0\.925\s+"
                                   r"behind in every round")
        self.assertRegex(r.stdout, r"b1-h2-kv2-n128-d64-bf16-full-fwd\s+1\.200\s+0\.900\s+1\.039\n")
        self.assertIn("ahead in every round 0, behind in every round 1", r.stdout)
        with open(os.path.join(self.tmp, "out", "rounds.txt")) as f:
            self.assertEqual(f.read(), r.stdout)
        for name in ("fb-1.json", "peers-1.json", "fb-2.json", "peers-2.json", "fb-1.log", "peers-2.log"):
            self.assertTrue(os.path.isfile(os.path.join(self.tmp, "out", name)), name)

    def test_each_pair_stands_in_one_place_and_the_rounds_alternate_it(self):
        # --places both (the default): pairs k:torch-p and j:torch-q; round 1 times k and torch-p first, round 2 j and
        # torch-q first; the spec's other kernel (x) and the other backend (r) after them.
        fix = os.path.join(self.tmp, "fixtures")
        for i in (1, 2, 3):  # the third: --places given's one round
            fb = results_doc([self.rec("k", 1.0), self.rec("j", 1.0)])
            fb["backend"] = "cuda"
            fb["spec"] = {"kernels": ["j", "k"]}  # round 1's file as if run in the spec's order: k 2nd
            peer = results_doc([self.rec("torch-p", 2.0, None), self.rec("torch-q", 2.0, None)])
            peer["settings"].update(backends=["torch-p", "torch-q"], launch_hold=True, launch_hold_kind="busy")
            with open(os.path.join(fix, f"fb-{i}.json"), "w") as f:
                json.dump(fb, f)
            with open(os.path.join(fix, f"peers-{i}.json"), "w") as f:
                json.dump(peer, f)
        with open(self.spec, "w") as f:
            json.dump({"seq": [64], "batch": 1, "heads": 2, "head_dim": 64, "dtype": "bf16",
                       "kernels": ["j", "x", "k"]}, f)
        r = run_script("peer_rounds.py", self.spec, "-o", os.path.join(self.tmp, "out"), "--pair", "k:torch-p",
                       "--pair", "j:torch-q", "--backends", "q,p,r", "--flashbench", self.fb, "--peers", self.peers)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(self.tmp, "args-F.txt")) as f:
            self.assertEqual([l.split()[-1] for l in f.read().splitlines()], ["--kernels=k,j,x", "--kernels=j,k,x"])
        with open(os.path.join(self.tmp, "args-P.txt")) as f:
            got = [l.split() for l in f.read().splitlines()]
            self.assertEqual([a[a.index("--backends") + 1] for a in got], ["p,q,r", "q,p,r"])
        self.assertIn("round 1: k is timed 2nd in its cases (", r.stderr)  # the stand-ins' files say so
        self.assertIn("torch-p 1st", r.stderr)
        # --places given: the orders as given, --kernels the user's; under both, --kernels is peer_rounds' to set.
        given = run_script("peer_rounds.py", self.spec, "-o", os.path.join(self.tmp, "given"), "--pair", "k:torch-p",
                           "--backends", "q,p", "--places", "given", "--run-arg=--kernels=k,j", "--rounds", "1",
                           "--flashbench", self.fb, "--peers", self.peers)
        self.assertEqual(given.returncode, 0, given.stderr)
        with open(os.path.join(self.tmp, "args-F.txt")) as f:
            self.assertEqual(f.read().splitlines()[-1].split()[-1], "--kernels=k,j")
        with open(os.path.join(self.tmp, "args-P.txt")) as f:
            got = f.read().splitlines()[-1].split()
            self.assertEqual(got[got.index("--backends") + 1], "q,p")
        refused = run_script("peer_rounds.py", self.spec, "-o", os.path.join(self.tmp, "no"), "--pair", "k:torch-p",
                             "--backends", "p", "--run-arg=--kernels=k", "--flashbench", self.fb, "--peers", self.peers)
        self.assertEqual((refused.returncode, refused.stdout), (2, ""))
        self.assertIn("--places both sets the kernels' order", refused.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "no")))

    def test_a_failed_verification_still_counts_and_a_lost_run_stops(self):
        env = dict(os.environ, STAND_IN_RC_F="1")  # flashbench: a kernel failed verification, results written
        r = self.run_rounds("--rounds", "1", env=env, out="one")
        self.assertEqual(r.returncode, 0, r.stderr)
        os.remove(os.path.join(self.tmp, "calls.txt"))
        env = dict(os.environ, STAND_IN_RC_P="3")  # peers.py dies: no results
        r = self.run_rounds(env=env, out="two")
        self.assertEqual((r.returncode, r.stdout), (1, ""))
        self.assertIn("round 1: peers.py exited 3 without its results", r.stderr)
        self.assertEqual(self.calls(), ["F1", "P1"], "nothing runs after the failed step")

    def test_bad_input_exits_2_with_one_line_and_runs_nothing(self):
        os.makedirs(os.path.join(self.tmp, "full"))
        open(os.path.join(self.tmp, "full", "x"), "w").close()
        bad_spec = os.path.join(self.tmp, "bad.json")
        with open(bad_spec, "w") as f:
            json.dump({"seq": [64], "batch": 1, "heads": 2, "head_dim": 64, "dtype": "bf17"}, f)
        cases = [
            (["--rounds", "0"], "out", "--rounds: 0 is not a number of rounds"),
            (["--backends", "cudnn,"], "out", "--backends: 'cudnn,'"),
            ([], "full", "is not an empty folder"),
            (["--pair", "k-p"], "out", "--pair: 'k-p' is not OURS:PEER"),
            (["--flashbench", os.path.join(self.tmp, "nope")], "out", "--flashbench:"),
        ]
        for extra, out, message in cases:
            with self.subTest(args=extra):
                r = self.run_rounds(*extra, out=out)
                self.assertEqual((r.returncode, r.stdout), (2, ""))
                self.assertIn(message, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1)
        r = run_script("peer_rounds.py", bad_spec, "-o", os.path.join(self.tmp, "out"), "--pair", "k:p",
                       "--flashbench", self.fb, "--peers", self.peers)
        self.assertEqual(r.returncode, 2)
        self.assertIn("bad.json", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "calls.txt")), "bad input must run nothing")
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "out")), "bad input must create nothing")


# ---------------------------------------------------------------------------------------------------
# The spec mirror (scripts/fbspec.py vs src/spec.cpp)


class Spec(unittest.TestCase):
    BASE = {"seq": [512, 1024], "heads": 4, "head_dim": 64, "dtype": "bf16"}

    def expand(self, **kw):
        return fbspec.expand_spec(dict(self.BASE, **kw))

    def test_tokens_give_batch_per_seq(self):
        cases = self.expand(tokens=4096)["cases"]
        self.assertEqual([(c["batch"], c["seq"]) for c in cases], [(8, 512), (4, 1024)])

    def test_model_dim_gives_heads_per_head_dim(self):
        spec = {k: v for k, v in self.BASE.items() if k != "heads"}
        cases = fbspec.expand_spec(dict(spec, batch=1, model_dim=2048, head_dim=[64, 128], seq=1024))["cases"]
        self.assertEqual([(c["head_dim"], c["heads"], c["kv_heads"]) for c in cases], [(64, 32, 32), (128, 16, 16)])
        with self.assertRaises(fbspec.SpecError) as cm:
            fbspec.expand_spec(dict(spec, batch=1, model_dim=2048, head_dim=[96]))
        self.assertIn("spec.model_dim: 2048 is not a whole number of heads of 96", str(cm.exception))
        with self.assertRaises(fbspec.SpecError) as cm:
            self.expand(batch=1, model_dim=2048)
        self.assertIn("give heads or model_dim, not both", str(cm.exception))

    def test_product_order_and_defaults(self):
        s = self.expand(batch=[1, 2], kv_heads=[4, 2], dtype=["fp16", "bf16"], causal=[False, True])
        cases = s["cases"]
        self.assertEqual(len(cases), 2 * 2 * 2 * 2 * 2)
        # dtype outermost, then head_dim, causal, pass, batch, heads, kv_heads, seq innermost.
        self.assertEqual([c["dtype"] for c in cases[:16]], ["fp16"] * 16)
        self.assertEqual([c["seq"] for c in cases[:4]], [512, 1024, 512, 1024])
        self.assertEqual([c["kv_heads"] for c in cases[:4]], [4, 4, 2, 2])
        self.assertEqual([c["batch"] for c in cases[:8]], [1] * 4 + [2] * 4)
        self.assertEqual((s["warmup"], s["reps"], s["seed"], s["verify"], s["kernels"]), (3, 10, 42, True, None))
        self.assertTrue(all(c["pass"] == "fwd" for c in cases))
        self.assertEqual(s["rep_order"], "blocked")
        self.assertEqual(self.expand(batch=1, rep_order="interleaved")["rep_order"], "interleaved")
        default = self.expand(batch=1)["cases"][0]
        self.assertEqual((default["kv_heads"], default["causal"]), (4, False), "kv_heads defaults to heads")

    def test_refusals_name_the_field(self):
        bad = [
            (dict(tokens=1000), "spec.tokens: 1000 tokens is not a whole number of sequences of 512"),
            (dict(tokens=4096, batch=1), "give batch or tokens, not both"),
            (dict(), "missing batch"),
            (dict(batch=1, kv_heads=3), "spec.kv_heads: 3 does not divide"),
            (dict(batch=1, haeds=2), "unknown key 'haeds'"),
            (dict(batch=[]), "spec.batch: must list at least one value"),
            (dict(batch=[1, 1]), "spec.batch[1]: duplicate value 1 (also at spec.batch[0])"),
            (dict(batch=1, dtype=["bf16", "e5m2"]), "spec.dtype[1]: unknown dtype 'e5m2'"),
            (dict(batch=1, reps=0), "spec.reps: must be a positive integer"),
            (dict(batch=1, seq=[2 ** 40]), "is more than the cap"),
            (dict(batch=1, seq=[1.5]), "spec.seq[0]: must be a positive integer"),
            (dict(batch=True), "spec.batch: must be a positive integer, got true"),
            (dict(batch=1, causal=["yes"]), "spec.causal[0]: must be true or false"),
            (dict(batch=1, rep_order="interleave"), "spec.rep_order: must be one of blocked, interleaved"),
            (dict(batch=1, seq=list(range(1, 2000)), heads=list(range(1, 100))), "more than the cap 100000"),
        ]
        for kw, message in bad:
            with self.subTest(message=message):
                with self.assertRaises(fbspec.SpecError) as cm:
                    self.expand(**kw)
                self.assertIn(message, str(cm.exception))
        with self.assertRaises(fbspec.SpecError) as cm:
            fbspec.expand_spec({k: v for k, v in dict(self.BASE, batch=1).items() if k != "head_dim"})
        self.assertIn("spec.head_dim: missing (required)", str(cm.exception))

    def test_seq_q_and_seq_k(self):
        base = {k: v for k, v in self.BASE.items() if k != "seq"}
        s = fbspec.expand_spec(dict(base, batch=1, seq_q=[1, 16], seq_k=[4096, 8192], kv_heads=2))
        # seq_q outer, seq_k innermost; seq only when the lengths are equal.
        self.assertEqual([(c["seq_q"], c["seq_k"], c["seq"]) for c in s["cases"]],
                         [(1, 4096, None), (1, 8192, None), (16, 4096, None), (16, 8192, None)])
        self.assertEqual(fbresults.case_key(s["cases"][0]), "b1-h4-kv2-q1-k4096-d64-bf16-full-fwd")
        same = fbspec.expand_spec(dict(base, batch=1, seq_q=64, seq_k=64))["cases"][0]
        self.assertEqual(fbresults.case_key(same), "b1-h4-kv4-n64-d64-bf16-full-fwd")
        # tokens divide by seq_q (query tokens).
        self.assertEqual([c["batch"] for c in fbspec.expand_spec(dict(base, tokens=64, seq_q=[1, 16], seq_k=32))["cases"]],
                         [64, 4])
        bad = [
            (dict(self.BASE, batch=1, seq_q=1, seq_k=2), "spec: give seq (seq_q = seq_k), or seq_q and seq_k, not both"),
            (dict(base, batch=1, seq_q=1), "spec.seq_k: missing"),
            (dict(base, batch=1, seq_k=1), "spec.seq_q: missing"),
            (dict(base, batch=1), "spec.seq: missing (required), or give seq_q and seq_k"),
            (dict(base, batch=1, seq_q=[1, 0], seq_k=8), "spec.seq_q[1]: must be a positive integer"),
            (dict(base, batch=1, seq_q=1, seq_k=[8, 8]), "spec.seq_k[1]: duplicate value 8"),
            (dict(base, tokens=10, seq_q=4, seq_k=8), "batch = tokens / seq_q must divide exactly"),
        ]
        for spec, message in bad:
            with self.subTest(message=message):
                with self.assertRaises(fbspec.SpecError) as cm:
                    fbspec.expand_spec(spec)
                self.assertIn(message, str(cm.exception))
        # FLOPs: causal counts visible pairs exactly unless square (FlashAttention's halving).
        c = dict(same, causal=True)
        self.assertEqual(fbresults.case_flops(c), 4.0 * 4 * 64 * 64 * 64 / 2)
        self.assertEqual(fbresults.case_flops(dict(c, seq=None, seq_q=5, seq_k=2)), 4.0 * 4 * 3 * 64)
        self.assertEqual(fbresults.case_flops(dict(c, seq=None, seq_q=2, seq_k=5)), 4.0 * 4 * 9 * 64)

    def test_committed_configs_expand(self):
        folder = os.path.join(ROOT, "configs")
        for name in sorted(os.listdir(folder)):
            if name.endswith(".json") and name != "spec.schema.json":
                with self.subTest(config=name):
                    self.assertTrue(fbspec.load_spec(os.path.join(folder, name))["cases"])
        san = fbspec.load_spec(os.path.join(folder, "sanitize.json"))
        # fp8 has no CUDA kernel yet (every one refuses it): nothing for the sanitizer to run.
        self.assertEqual({c["dtype"] for c in san["cases"]}, set(fbspec.DTYPES) - {"fp8"})
        self.assertEqual({c["pass"] for c in san["cases"]}, {"fwd", "bwd"})
        self.assertEqual({c["causal"] for c in san["cases"]}, {False, True})
        self.assertEqual((san["warmup"], san["reps"]), (0, 1))


class PeersCallable(unittest.TestCase):
    """peers.py --callable MODULE:FUNCTION, up to where torch is needed: argument handling, importing the
    user's function, naming, the verification rule mirrored from src/judge.h, and the record it makes."""

    CASE = {"batch": 1, "heads": 2, "kv_heads": 1, "seq": 256, "head_dim": 64, "dtype": "bf16", "causal": False,
            "pass": "fwd"}

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="fb-callable-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.spec = os.path.join(self.tmp, "spec.json")
        with open(self.spec, "w") as f:
            json.dump({"seq": [128], "batch": 1, "heads": 2, "head_dim": 64, "dtype": "bf16"}, f)
        self.module = os.path.join(self.tmp, "mykernels.py")
        with open(self.module, "w") as f:
            f.write("VALUE = 3\n\nclass Ops:\n    @staticmethod\n    def attn(q, k, v, is_causal=False, scale=None):\n"
                    "        return q\n\ndef attention(q, k, v, is_causal=False, scale=None):\n    return q\n")
        self.broken = os.path.join(self.tmp, "broken.py")
        with open(self.broken, "w") as f:
            f.write("import no_such_module_for_flashbench_tests\n")

    def test_parse_callable(self):
        self.assertEqual(peers.parse_callable("mykernels:attention"), ("mykernels", "attention"))
        self.assertEqual(peers.parse_callable("a/b.py:Ops.attn"), ("a/b.py", "Ops.attn"))
        self.assertEqual(peers.parse_callable("C:/x.py:f"), ("C:/x.py", "f"), "the last colon splits")
        for bad, says in [("attention", "expected MODULE:FUNCTION"), (":f", "expected MODULE:FUNCTION"),
                          ("m:", "expected MODULE:FUNCTION"), ("m:not-a-name", "'not-a-name' is not a Python name")]:
            with self.subTest(arg=bad):
                with self.assertRaises(ValueError) as cm:
                    peers.parse_callable(bad)
                self.assertIn(says, str(cm.exception))
                self.assertIn(f"--callable {bad}", str(cm.exception))

    def test_kernel_names(self):
        self.assertEqual(peers.callable_kernel_names([("m", "attention"), ("n", "Ops.attn")]), ["attention", "attn"])
        self.assertEqual(peers.callable_kernel_names([("m", "attention")], "triton-v2"), ["triton-v2"])
        for specs, name, says in [
                ([("m", "f"), ("n", "f")], None, "two callables named 'f'"),
                ([("m", "f"), ("n", "g")], "x", "exactly one --callable"),
                ([("m", "f")], "torch-flash", "is an SDPA backend's"),
                ([("m", "f")], "my kernel", "may hold only")]:
            with self.subTest(says=says):
                with self.assertRaises(ValueError) as cm:
                    peers.callable_kernel_names(specs, name)
                self.assertIn(says, str(cm.exception))

    def test_load_callable(self):
        fn = peers.load_callable(self.module, "attention")
        self.assertEqual(fn(1, 2, 3, is_causal=True, scale=0.5), 1)
        self.assertEqual(peers.load_callable(self.module, "Ops.attn")(4, 5, 6), 4)
        sys.path.insert(0, self.tmp)
        self.addCleanup(sys.path.remove, self.tmp)
        self.assertEqual(peers.load_callable("mykernels", "attention")(7, 8, 9), 7, "by module name")
        for module, function, says in [
                (os.path.join(self.tmp, "none.py"), "f", "no such file"),
                (self.module, "missing", "has no 'missing'"),
                (self.module, "VALUE", "is a int, not a function"),
                (self.broken, "f", "importing it failed (ModuleNotFoundError"),
                ("no_such_module_for_flashbench_tests", "f", "importing it failed")]:
            with self.subTest(says=says):
                with self.assertRaises(ValueError) as cm:
                    peers.load_callable(module, function)
                self.assertIn(says, str(cm.exception))
                self.assertIn(f"--callable {module}:{function}", str(cm.exception))

    def test_judge_mirrors_flashbench_relative_rule(self):
        m = 2.0  # max |O_ref|; bf16 ulp at 2 is 2^-7 * 2
        plain = 3e-3
        floor = 2 * 2.0 ** -6 + 2.0 ** -23 * math.sqrt(256) * m
        ok, bounds, rule, _ = peers.judge_callable(self.CASE, {"O": 2 * plain + floor * 0.99}, {"O": m}, {"O": plain})
        self.assertEqual(rule, "2x-baseline")
        self.assertAlmostEqual(bounds["O"], 2 * plain + floor)
        self.assertTrue(ok)
        self.assertFalse(peers.judge_callable(self.CASE, {"O": 2 * plain + floor * 1.01}, {"O": m}, {"O": plain})[0])
        self.assertFalse(peers.judge_callable(self.CASE, {"O": math.nan}, {"O": m}, {"O": plain})[0], "NaN fails")
        self.assertFalse(peers.judge_callable(self.CASE, {"O": math.inf}, {"O": m}, {"O": plain})[0])
        # Gradients: factor 3; dQ judged at no less than dV's scale / 16.
        bwd = dict(self.CASE, **{"pass": "bwd"})
        errs, mags = {"dQ": 0.0, "dK": 0.0, "dV": 0.0}, {"dQ": 1e-9, "dK": 1.0, "dV": 32.0}
        _, b, rule, details = peers.judge_callable(bwd, errs, mags, {"dQ": 1e-3, "dK": 1e-3, "dV": 1e-3})
        # dQ cancelled (1e-9 < 32 / 16): the dtype's own bound at dV's / 16, even beside the baseline;
        # dK (1 < 2) too; dV by the relative rule.
        self.assertEqual(rule, "2x-baseline")
        self.assertEqual(details["dQ"], (2.0, "dtype-bound (cancelled)"))
        self.assertEqual(b["dQ"], 2.0 ** -5 * 2.0)
        self.assertEqual(details["dV"], (32.0, None))
        self.assertAlmostEqual(b["dV"], 3e-3 + 2 * peers.ulp_at(32.0, "bf16") + 2.0 ** -23 * 16 * 32.0)
        # No plain baseline (out of memory): the dtype's own bound at M.
        ok, bounds, rule, _ = peers.judge_callable(self.CASE, {"O": 1e-3}, {"O": m}, None)
        self.assertEqual((rule, bounds["O"]), ("dtype-bound", 2.0 ** -5 * m))
        self.assertTrue(ok)

    def test_judged_record_reads_back_with_its_bound_and_rule(self):
        verdict = peers.judge_callable(self.CASE, {"O": 1e-3}, {"O": 2.0}, {"O": 1e-3})
        rec = peers.make_record(self.CASE, "triton-example", "ok", times_ms=[1.0, 1.1], errors={"O": 1e-3},
                                verdict=verdict)
        self.assertIs(rec["verified"], True)
        self.assertEqual(rec["errors"]["rule"], "2x-baseline")
        self.assertAlmostEqual(rec["errors"]["O"]["bound"], verdict[1]["O"])
        self.assertEqual(rec["errors"]["O"]["scale"], 2.0)
        doc = fbresults.results_from_json(json.loads(json.dumps(results_doc([rec]), allow_nan=False)))
        self.assertIs(doc["results"][0]["verified"], True)
        failed = peers.make_record(self.CASE, "triton-example", "ok", times_ms=[1.0], errors={"O": 1.0},
                                   verdict=peers.judge_callable(self.CASE, {"O": 1.0}, {"O": 2.0}, {"O": 1e-3}))
        self.assertIs(failed["verified"], False)

    def test_cli_refuses_bad_callables_before_needing_torch(self):
        env = fake_torch(self.tmp, "raise ImportError('No module named torch (hidden by the test)')\n")
        for args, says in [(["--callable", "attention"], "expected MODULE:FUNCTION"),
                           (["--name", "x"], "--name: names a --callable"),
                           (["--callable", "a:f", "--callable", "b:f"], "two callables named 'f'")]:
            with self.subTest(args=args):
                r = run_script("peers.py", self.spec, *args, env=env)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(says, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        # A well-formed callable gets as far as torch.
        r = run_script("peers.py", self.spec, "--callable", f"{self.module}:attention", env=env)
        self.assertEqual(r.returncode, 2)
        self.assertIn("PyTorch is not installed", r.stderr)

    def test_triton_example_is_valid_python_and_imports_where_triton_is(self):
        path = os.path.join(ROOT, "examples", "python", "triton_attention.py")
        with open(path) as f:
            compile(f.read(), path, "exec")
        if importlib.util.find_spec("torch") is None or importlib.util.find_spec("triton") is None:
            self.skipTest("torch or triton not installed: the example is checked on the GPU machine")
        fn = peers.load_callable(path, "attention")
        self.assertTrue(callable(fn))


@unittest.skipUnless(FLASHBENCH_EXE and os.access(FLASHBENCH_EXE, os.X_OK), "FLASHBENCH_EXE not set")
class AgainstFlashbench(unittest.TestCase):
    """A tiny sweep on flashbench's CPU backend: its cases are the ones fbspec expands to, in the same
    order, and plot.py reads its results file."""

    def test_cpu_sweep(self):
        spec = {"seq": [8, 16], "tokens": 32, "heads": 2, "kv_heads": [2, 1], "head_dim": 32, "dtype": "fp32",
                "causal": [False, True], "kernels": ["naive", "flash"], "warmup": 0, "reps": 2}
        with tempfile.TemporaryDirectory() as tmp:
            spec_path, out = os.path.join(tmp, "spec.json"), os.path.join(tmp, "cpu.json")
            with open(spec_path, "w") as f:
                json.dump(spec, f)
            r = subprocess.run([FLASHBENCH_EXE, "run", spec_path, "--backend", "cpu", "-q", "-o", out],
                               capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr)
            doc = fbresults.load_results(out)
            expected = [fbresults.case_key(c) for c in fbspec.expand_spec(spec)["cases"]]
            got = list(dict.fromkeys(rec["key"] for rec in doc["results"]))
            self.assertEqual(got, expected)

            # What peers.py writes, flashbench's own reader takes: merge it with the CPU run.
            recs = [peers.make_record(c, "torch-flash", "ok", times_ms=[1.0, 1.5], peak_bytes=4096,
                                      errors={"O": 1e-6}) for c in fbspec.expand_spec(spec)["cases"]]
            recs.append(peers.make_record(fbspec.expand_spec(spec)["cases"][0], "torch-cudnn", "skipped",
                                          "No available kernel. Aborting execution."))
            peer_path, merged = os.path.join(tmp, "peers.json"), os.path.join(tmp, "merged.json")
            with open(peer_path, "w") as f:
                json.dump(results_doc(recs), f, allow_nan=False)
            r = subprocess.run([FLASHBENCH_EXE, "merge", out, peer_path, "--force", "-o", merged],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            kernels = {rec["kernel"] for rec in fbresults.load_results(merged)["results"]}
            self.assertEqual(kernels, {"naive", "flash", "torch-flash", "torch-cudnn"})
            if HAVE_MATPLOTLIB:
                p = run_script("plot.py", merged, "-o", os.path.join(tmp, "plots"))
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("time_vs_n.png", os.listdir(os.path.join(tmp, "plots")))


    def test_cpu_sweep_seq_q_seq_k(self):
        # Decode (seq_q 1), seq_q < seq_k and seq_q > seq_k (causal: rows with no visible key), GQA.
        spec = {"seq_q": [1, 5, 40], "seq_k": [17, 33], "batch": 2, "heads": 4, "kv_heads": 2, "head_dim": 32,
                "dtype": "fp32", "causal": [False, True], "pass": ["fwd", "bwd"], "kernels": ["naive", "flash"],
                "warmup": 0, "reps": 1}
        with tempfile.TemporaryDirectory() as tmp:
            spec_path, out = os.path.join(tmp, "spec.json"), os.path.join(tmp, "cpu.json")
            with open(spec_path, "w") as f:
                json.dump(spec, f)
            r = subprocess.run([FLASHBENCH_EXE, "run", spec_path, "--backend", "cpu", "-q", "-o", out],
                               capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr)
            doc = fbresults.load_results(out)
            cases = fbspec.expand_spec(spec)["cases"]
            self.assertEqual(len(cases), 3 * 2 * 2 * 2)
            expected = [fbresults.case_key(c) for c in cases]
            got = list(dict.fromkeys(rec["key"] for rec in doc["results"]))
            self.assertEqual(got, expected)
            self.assertIn("b2-h4-kv2-q40-k17-d32-fp32-causal-bwd", got)
            for rec in doc["results"]:
                self.assertEqual(rec["status"], "ok", rec["reason"])
                self.assertTrue(rec["verified"], rec["errors"])
                self.assertEqual(rec["flops"], fbresults.case_flops(rec["case"]))
            if HAVE_MATPLOTLIB:
                p = run_script("plot.py", out, "-o", os.path.join(tmp, "plots"))
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("time_vs_n.png", os.listdir(os.path.join(tmp, "plots")))

    def test_ncu_bytes_end_to_end_with_a_stand_in_ncu(self):
        """ncu_bytes.py's plumbing: its one-case specs run in flashbench, the modelled bytes come from the
        results file, and the stand-in's CSV (the fixtures) is summed per case and kernel. The stand-in
        runs flashbench on the CPU backend (without --device), since this machine has no GPU."""
        with tempfile.TemporaryDirectory() as tmp:
            fake = os.path.join(tmp, "ncu")
            with open(fake, "w") as f:
                f.write(textwrap.dedent(f"""\
                    #!{sys.executable}
                    import json, subprocess, sys
                    if sys.argv[1:] == ["--version"]:
                        print("Version 9999.0 (stand-in)"); sys.exit(0)
                    cmd = sys.argv[sys.argv.index("--metrics") + 2:]
                    cmd[cmd.index("--backend") + 1] = "cpu"
                    at = cmd.index("--device")  # the CPU backend refuses a device index
                    del cmd[at:at + 2]
                    r = subprocess.run(cmd)
                    kernel = json.load(open(cmd[2]))["kernels"][0]
                    sys.stdout.write(open({PLOT_FIXTURES!r} + f"/ncu_{{kernel}}_fwd.csv").read())
                    sys.exit(r.returncode)
                    """))
            os.chmod(fake, stat.S_IRWXU)
            spec = os.path.join(tmp, "spec.json")
            with open(spec, "w") as f:
                json.dump({"seq": [64, 128], "batch": 1, "heads": 2, "head_dim": 64, "dtype": "bf16"}, f)
            out = os.path.join(tmp, "ncu.json")
            r = run_script("ncu_bytes.py", spec, "-o", out, "--ncu", fake, "--flashbench", FLASHBENCH_EXE)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                doc = json.load(f)
            got = [(m["key"], m["kernel"], m["status"]) for m in doc["measurements"]]
            self.assertEqual(got, [(k, kern, "ok") for k in ("b1-h2-kv2-n64-d64-bf16-full-fwd",
                                                             "b1-h2-kv2-n128-d64-bf16-full-fwd")
                                   for kern in ("naive", "flash")])
            cpu = {(rec["key"], rec["kernel"]): rec["bytes_moved"] for rec in fbresults.load_results(
                self.run_cpu(tmp, spec))["results"]}
            for m in doc["measurements"]:
                self.assertEqual(m["modelled_bytes"], cpu[(m["key"], m["kernel"])])
                self.assertAlmostEqual(m["measured_over_modelled"], m["dram_bytes"] / m["modelled_bytes"])
            self.assertEqual(doc["measurements"][1]["dram_bytes"], 1574912 + 540672, "the flash fixture's sum")
            self.assertIn("--clock-control none", doc["measurements"][0]["command"])
            self.assertNotIn(tmp, json.dumps(doc["measurements"]), "no temporary paths in the output")

    def run_cpu(self, tmp, spec):
        out = os.path.join(tmp, "cpu-bytes.json")
        subprocess.run([FLASHBENCH_EXE, "run", spec, "--backend", "cpu", "-q", "-o", out], check=True,
                       capture_output=True, timeout=600)
        return out


class NcuAB(unittest.TestCase):
    """ncu_ab.py's plumbing with stand-ins: two "builds" (wrappers that run flashbench on the CPU) under a
    stand-in ncu that answers each launch flashbench times with a CSV row, B 10% slower than A."""

    SPEC = {"seq": [64, 96], "batch": 1, "heads": 2, "head_dim": 32, "dtype": "fp32", "kernels": ["flash"],
            "warmup": 2, "reps": 3, "verify": False}

    def setUp(self):
        if not FLASHBENCH_EXE:
            self.skipTest("FLASHBENCH_EXE not set")
        self.tmp = tempfile.mkdtemp(prefix="fb-ncuab-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.spec = os.path.join(self.tmp, "spec.json")
        with open(self.spec, "w") as f:
            json.dump(self.SPEC, f)
        self.exes = {}
        for side in ("a", "b"):
            exe = os.path.join(self.tmp, f"fb-{side}")
            with open(exe, "w") as f:
                f.write(f"#!/bin/sh\nexec {shlex_quote(FLASHBENCH_EXE)} \"$@\" $( [ \"$1\" = run ] && [ \"$2\" != --help ] && echo --backend cpu )\n")
            os.chmod(exe, stat.S_IRWXU)
            self.exes[side] = exe

    def fake_ncu(self, grids_per_launch=None):
        fake = os.path.join(self.tmp, "ncu")
        with open(fake, "w") as f:
            f.write(textwrap.dedent(f"""\
                #!{sys.executable}
                import json, subprocess, sys
                cmd = sys.argv[sys.argv.index("--csv") + 1:]
                r = subprocess.run(cmd)
                out = cmd[cmd.index("-o") + 1]
                slow = 1.1 if cmd[0].endswith("fb-b") else 1.0
                launches = {self.SPEC["warmup"] + self.SPEC["reps"]}
                print('"ID","Kernel Name","Grid Size","Metric Name","Metric Unit","Metric Value"')
                n = 0
                for i, rec in enumerate(json.load(open(out))["results"]):
                    for j in range(launches):
                        grid = {grids_per_launch!r} or f"({{i + 1}}, 1, 1)"
                        if isinstance(grid, list): grid = grid[n % len(grid)]
                        ns = (1000 * (i + 1) + (5000 if j < {self.SPEC["warmup"]} else j)) * slow
                        print(f'"{{n}}","flash_fwd_kernel<{{i}}>","{{grid}}","gpu__time_duration.sum","ns","{{ns:,.0f}}"')
                        n += 1
                sys.exit(r.returncode)
                """))
        os.chmod(fake, stat.S_IRWXU)
        return fake

    def test_cases_medians_and_ratio(self):
        out = os.path.join(self.tmp, "ab.json")
        r = run_script("ncu_ab.py", self.exes["a"], self.exes["b"], self.spec, "--kernel", "flash",
                       "--kernel-regex", "flash_fwd", "-o", out, "--ncu", self.fake_ncu())
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual([c["key"] for c in doc["cases"]], ["b1-h2-kv2-n64-d32-fp32-full-fwd",
                                                             "b1-h2-kv2-n96-d32-fp32-full-fwd"])
        # The warm-up launches (5000 ns more) are left out: medians of reps j = 2, 3, 4 are 1003 and 2003 ns.
        self.assertAlmostEqual(doc["cases"][0]["a_us"], 1.003)
        self.assertAlmostEqual(doc["cases"][1]["a_us"], 2.003)
        for c in doc["cases"]:
            self.assertAlmostEqual(c["ratio"], 1.1, places=3)
        self.assertAlmostEqual(doc["geomean_ratio"], 1.1, places=3)
        self.assertIn("--warmup-time", doc["commands"]["a"], "both sides launch warmup + reps times")

    def test_mixed_launches_in_a_case_stop_the_comparison(self):
        out = os.path.join(self.tmp, "ab.json")
        r = run_script("ncu_ab.py", self.exes["a"], self.exes["b"], self.spec, "--kernel", "flash",
                       "--kernel-regex", "flash_fwd", "-o", out,
                       "--ncu", self.fake_ncu(grids_per_launch=["(1, 1, 1)", "(2, 1, 1)"]))
        self.assertEqual(r.returncode, 1)
        self.assertIn("mix kernels or grids", r.stderr)
        self.assertFalse(os.path.exists(out), "nothing written when the chunking fails")

    def test_bad_spec_exits_2(self):
        r = run_script("ncu_ab.py", self.exes["a"], self.exes["b"], os.path.join(self.tmp, "none.json"),
                       "--kernel", "flash", "--kernel-regex", "x", "-o", os.path.join(self.tmp, "o.json"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("spec", r.stderr)


def shlex_quote(s):
    import shlex
    return shlex.quote(s)


# ---------------------------------------------------------------------------------------------------
# peers.py, without torch


def fake_torch(folder, body):
    pkg = os.path.join(folder, "torch")
    os.makedirs(pkg)
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write(textwrap.dedent(body))
    env = dict(os.environ)
    env["PYTHONPATH"] = folder + os.pathsep + env.get("PYTHONPATH", "")
    return env


class Peers(unittest.TestCase):
    SPEC = {"seq": [128, 256], "tokens": 1024, "heads": 4, "kv_heads": [4, 2], "head_dim": 64,
            "dtype": ["bf16", "fp64"], "pass": ["fwd", "bwd"], "reps": 3}

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="fb-peers-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.spec = os.path.join(self.tmp, "spec.json")
        with open(self.spec, "w") as f:
            json.dump(self.SPEC, f)

    def test_list_expands_the_spec_without_torch(self):
        env = fake_torch(self.tmp, "raise ImportError('torch hidden by the test')\n")
        r = run_script("peers.py", self.spec, "--list", env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        expected = [fbresults.case_key(c) for c in fbspec.expand_spec(self.SPEC)["cases"]]
        self.assertEqual(r.stdout.split(), expected)
        self.assertEqual(len(expected), 2 * 2 * 2 * 2)
        self.assertIn("b8-h4-kv2-n128-d64-bf16-full-bwd", expected)
        self.assertIn("b4-h4-kv4-n256-d64-fp64-full-fwd", expected)

    def test_without_torch_exits_2_with_a_message(self):
        env = fake_torch(self.tmp, "raise ImportError('No module named torch (hidden by the test)')\n")
        r = run_script("peers.py", self.spec, "-o", os.path.join(self.tmp, "out.json"), env=env)
        self.assertEqual(r.returncode, 2)
        self.assertIn("PyTorch is not installed", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "out.json")))

    def test_without_cuda_exits_2_with_a_message(self):
        env = fake_torch(self.tmp, """
            __version__ = "0.0-fake"
            class cuda:
                @staticmethod
                def is_available():
                    return False
            """)
        r = run_script("peers.py", self.spec, env=env)
        self.assertEqual(r.returncode, 2)
        self.assertIn("sees no CUDA device", r.stderr)

    def test_bad_spec_and_arguments_exit_2(self):
        bad = os.path.join(self.tmp, "bad.json")
        with open(bad, "w") as f:
            json.dump(dict(self.SPEC, tokens=1000), f)
        r = run_script("peers.py", bad, "--list")
        self.assertEqual(r.returncode, 2)
        self.assertIn("spec.tokens", r.stderr)
        r = run_script("peers.py", self.spec, "--backends", "flash,xformers", "--list")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown backend 'xformers'", r.stderr)
        r = run_script("peers.py", self.spec, "-o", os.path.join(self.tmp, "no-such-folder", "x.json"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("does not exist", r.stderr)

    def test_importing_peers_does_not_import_torch(self):
        env = fake_torch(self.tmp, "raise RuntimeError('peers.py imported torch at module level')\n")
        r = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import peers",
                            SCRIPTS], capture_output=True, text=True, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_backend_names(self):
        self.assertEqual(peers.backend_names(None), list(peers.BACKENDS))
        self.assertEqual(peers.backend_names("math, flash"), ["torch-math", "torch-flash"], "the order named")
        self.assertEqual(peers.backend_names("cudnn,flash,cudnn"), ["torch-cudnn", "torch-flash"], "each once")
        self.assertEqual(peers.backend_names("torch-cudnn"), ["torch-cudnn"])
        with self.assertRaises(ValueError):
            peers.backend_names(",")

    def test_summarize_matches_record_cpp(self):
        s = peers.summarize([4.0, 1.0, 3.0, 2.0])
        self.assertEqual((s["median"], s["min"], s["max"], s["mean"], s["reps"]), (2.5, 1.0, 4.0, 2.5, 4))
        self.assertAlmostEqual(s["stddev"], math.sqrt(5.0 / 3.0), places=12)  # sample (n - 1) stddev
        self.assertEqual(peers.summarize([2.0])["stddev"], 0.0)
        self.assertEqual(peers.summarize([3.0, 1.0, 2.0])["median"], 2.0)

    def test_record_follows_the_schema_and_flop_model(self):
        case = {"batch": 2, "heads": 8, "kv_heads": 2, "seq": 1024, "head_dim": 128, "dtype": "bf16",
                "causal": True, "pass": "fwd+bwd"}
        rec = peers.make_record(case, "torch-cudnn", "ok", times_ms=[2.0, 2.0, 2.0], peak_bytes=1 << 20,
                                errors={"O": 1e-3, "dQ": 4e-3, "dK": 2e-3, "dV": 3e-3})
        expected_flops = 4.0 * 2 * 8 * 1024 * 1024 * 128 / 2 * 3.5
        self.assertEqual(rec["flops"], expected_flops)
        self.assertAlmostEqual(rec["tflops"], expected_flops / 2e-3 / 1e12)
        self.assertEqual(rec["ref_max_abs_err"], 4e-3)
        self.assertEqual(rec["errors"]["dQ"], {"ref": 4e-3})
        self.assertEqual(rec["key"], "b2-h8-kv2-n1024-d128-bf16-causal-fwd+bwd")
        skipped = peers.make_record(case, "torch-flash", "skipped", "No available kernel")
        self.assertEqual((skipped["tflops"], skipped["time_ms"]["reps"], skipped["ref_max_abs_err"]), (0.0, 0, None))
        doc = results_doc([rec, skipped])
        fbresults.results_from_json(json.loads(json.dumps(doc, allow_nan=False)))

    def test_math_estimate_and_reference_policy(self):
        case = {"batch": 1, "heads": 16, "kv_heads": 16, "seq": 4096, "head_dim": 128, "dtype": "bf16",
                "causal": False, "pass": "fwd"}
        small, big = peers.math_bytes_estimate(case), peers.math_bytes_estimate(dict(case, seq=8192))
        self.assertEqual(big, 4 * small, "N x N: doubling N quadruples it")
        self.assertGreater(peers.math_bytes_estimate(dict(case, **{"pass": "bwd"})), small)
        self.assertTrue(peers.wants_reference(case, 8192, True))
        self.assertFalse(peers.wants_reference(dict(case, seq=16384), 8192, True))
        self.assertFalse(peers.wants_reference(case, 8192, False))
        self.assertEqual(peers.output_names("bwd"), ["dQ", "dK", "dV"])

    def test_seq_q_seq_k_records_masks_and_estimates(self):
        decode = {"batch": 1, "heads": 32, "kv_heads": 8, "seq": None, "seq_q": 1, "seq_k": 4096, "head_dim": 128,
                  "dtype": "bf16", "causal": True, "pass": "fwd"}
        rec = peers.make_record(decode, "torch-flash", "ok", times_ms=[1.0], errors={"O": 1e-3})
        self.assertEqual(rec["key"], "b1-h32-kv8-q1-k4096-d128-bf16-causal-fwd")
        self.assertEqual(rec["flops"], 4.0 * 32 * 4096 * 128)  # one row sees every key: no halving
        self.assertEqual((rec["case"]["seq_q"], rec["case"]["seq_k"]), (1, 4096))
        self.assertNotIn("seq", rec["case"])  # seq only when the lengths are equal
        back = fbresults.results_from_json(json.loads(json.dumps(results_doc([rec]), allow_nan=False)))
        self.assertEqual(back["results"][0]["case"]["seq_q"], 1)
        # The peers run seq_q <= seq_k causal (bottom-right bias) and refuse rows with no visible key.
        self.assertIsNone(peers.mask_refusal(decode))
        self.assertIsNone(peers.mask_refusal(dict(decode, seq_q=100, causal=True)))
        self.assertIsNone(peers.mask_refusal(dict(decode, seq_q=9000, causal=False)))
        why = peers.mask_refusal(dict(decode, seq_q=5000))
        self.assertIn("seq_q 5000 > seq_k 4096", why)
        self.assertIn("O = 0", why)
        # The math estimate scales with seq_q * seq_k; the reference policy looks at the longer one.
        square = dict(decode, seq=4096, seq_q=4096, seq_k=4096)
        self.assertEqual(peers.math_bytes_estimate(square) - peers.math_bytes_estimate(decode),
                         32 * (4096 * 4096 - 4096) * 4 * 3)
        self.assertFalse(peers.wants_reference(dict(decode, seq_k=16384), 8192, True))
        self.assertTrue(peers.wants_reference(decode, 8192, True))

    def test_one_line_reasons(self):
        self.assertEqual(peers.one_line("No available kernel.\n  Aborting   execution."),
                         "No available kernel. Aborting execution.")
        self.assertLessEqual(len(peers.one_line("x" * 10000)), peers.MAX_REASON)


class SimGpu:
    """One stream in simulated time (ms): the host's clock advances by what the host does; a queued operation
    starts once the host has queued it and the GPU is done with the one before."""

    def __init__(self, cycles_per_ms):
        self.host, self.gpu, self.cycles_per_ms, self.sleeps = 0.0, 0.0, cycles_per_ms, []

    def launch(self, ms, host_ms=0.005):
        self.host += host_ms
        self.gpu = max(self.gpu, self.host) + ms
        return self.gpu

    def torch(self):
        sim = self

        class Event:
            def __init__(self, enable_timing=False):
                self.at = None

            def record(self):
                self.at = sim.launch(0.0, host_ms=0.001)

            def query(self):
                return self.at <= sim.host

            def elapsed_time(self, end):
                return end.at - self.at

        class cuda:
            @staticmethod
            def _sleep(cycles):
                sim.sleeps.append(cycles / sim.cycles_per_ms)
                sim.launch(cycles / sim.cycles_per_ms)

            @staticmethod
            def synchronize(device=None):
                sim.host = max(sim.host, sim.gpu)

            @staticmethod
            def empty_cache():
                pass

            class OutOfMemoryError(RuntimeError):
                pass

        cuda.Event = Event
        return type("FakeTorch", (), {"cuda": cuda})


class PeersFwdMode(unittest.TestCase):
    """How a fwd case is timed: as inference (default: under torch.no_grad, inputs without gradients, so PyTorch's
    cuDNN plans its graph without the log-sum-exp) or, with --fwd-training, as a training forward (inputs that
    require grad, autograd on: every backend computes the log-sum-exp, as flashbench's forwards do). A fake torch
    records, per forward call, whether autograd was on and whether the inputs required grad."""

    class FakeTensor:
        def __init__(self):
            self.requires_grad = False

        def __mul__(self, _):
            return self

        def to(self, _):
            return self

        def requires_grad_(self, flag=True):
            self.requires_grad = flag
            return self

    def fake_torch(self):
        test = self
        state = {"grad": True}  # torch's default: autograd on

        class Mode:
            def __init__(self, on):
                self.on = on

            def __enter__(self):
                self.before, state["grad"] = state["grad"], self.on

            def __exit__(self, *exc):
                state["grad"] = self.before

        class Generator:
            def __init__(self, device=None):
                pass

            def manual_seed(self, _):
                pass

        class T:
            float32 = bfloat16 = "dtype"

            @staticmethod
            def randn(*shape, **kw):
                return test.FakeTensor()

            @staticmethod
            def no_grad():
                return Mode(False)

            @staticmethod
            def enable_grad():
                return Mode(True)
        T.Generator = Generator
        return T, state

    def run_fwd(self, training, pass_="fwd"):
        t, state = self.fake_torch()
        p = object.__new__(peers.Peers)
        p.torch, p.dev, p.fwd_training = t, "cuda:0", training
        case = {"batch": 1, "heads": 2, "kv_heads": 2, "seq": 64, "head_dim": 64, "dtype": "bf16", "causal": False,
                "pass": pass_}
        q, k, v, do = p.inputs(case, 42)
        calls = []

        def forward(case_, q_, k_, v_):
            calls.append((state["grad"], q_.requires_grad, k_.requires_grad, v_.requires_grad))
            return "O"
        prepare, timed = p.runner(case, q, k, v, do, forward)
        prepare()
        self.assertEqual(timed(), {"O": "O"})
        return calls, do

    def test_inference_by_default(self):
        calls, do = self.run_fwd(False)
        self.assertEqual(calls, [(False, False, False, False)])  # under no_grad, inputs without gradients
        self.assertIsNone(do)

    def test_training_forward(self):
        calls, do = self.run_fwd(True)
        self.assertEqual(calls, [(True, True, True, True)])  # autograd on, inputs that require grad
        self.assertIsNone(do)  # no backward: no dO
        self.assertEqual((peers.fwd_mode(True), peers.fwd_mode(False)), ("training", "inference"))

    def test_flag(self):
        self.assertTrue(peers.parse_args(["s.json", "--fwd-training"]).fwd_training)
        self.assertFalse(peers.parse_args(["s.json"]).fwd_training)


def sim_peers(sim, reps, flush_ms, hold, busy):
    """A Peers on the simulated stream sim, without torch: reps timed reps, an L2 flush of flush_ms, the launch hold on
    or off, busy (products) or the spin."""
    p = object.__new__(peers.Peers)
    p.torch, p.dev, p.reps, p.launch_hold, p.hold_short = sim.torch(), None, reps, hold, []
    p.busy_hold, p.busy_bufs, p.busy_ms = busy, None, None
    p.self_hold, p.hold_fallback = False, []
    p.flush_buf = type("Buf", (), {"zero_": lambda _self: sim.launch(flush_ms)})()
    p.clean_buf = None
    return p


class DriftGpu(SimGpu):
    """A SimGpu whose operations slow as the GPU's clock runs (a power cap biting, heat): an operation of ms at full
    speed takes ms * (1 + slope * the GPU time when it starts)."""

    def __init__(self, cycles_per_ms, slope):
        super().__init__(cycles_per_ms)
        self.slope = slope

    def launch(self, ms, host_ms=0.005):
        self.host += host_ms
        start = max(self.gpu, self.host)
        self.gpu = start + ms * (1.0 + self.slope * start)
        return self.gpu


class PeersInterleave(unittest.TestCase):
    """--interleave: the case's kernels take their reps in turn (Peers.timed_rounds, a Williams design of orders), so
    that a drift of the GPU's speed over the case falls on every kernel alike. On a simulated stream that slows as it
    runs, two identical kernels must read level interleaved; their reps back to back (measure's timed_reps, one kernel
    after the other) read the second one slower, which is what the flag is for."""

    KERNEL_MS, FLUSH_MS, HOST_MS, REPS = 0.2, 0.04, 0.3, 12

    def peers_on(self, sim):
        p = sim_peers(sim, self.REPS, self.FLUSH_MS, hold=True, busy=True)
        p.busy_product = lambda: sim.launch(0.15)
        return p

    def ready(self, sim, name, calls, fail_at=None):
        def timed():
            calls.append(name)
            if fail_at is not None and calls.count(name) == fail_at:
                raise RuntimeError(f"{name} broke on call {fail_at}")
            sim.launch(self.KERNEL_MS, host_ms=self.HOST_MS)
            return {"O": name}
        return peers.Ready(name, None, timed, contextlib.nullcontext, self.HOST_MS + 0.01, math.inf, 0)

    @staticmethod
    def median(xs):
        return peers.summarize(list(xs))["median"]

    def test_a_drift_falls_on_every_kernel_alike(self):
        slope = 0.04  # per ms of GPU time: 20-30% slower by the end of the case
        sim = DriftGpu(1.98e6, slope)
        p, calls = self.peers_on(sim), []
        out = p.timed_rounds([self.ready(sim, "a", calls), self.ready(sim, "b", calls)], "k")
        ta, tb = out["a"][0], out["b"][0]
        self.assertEqual((len(ta), len(tb)), (self.REPS, self.REPS))
        self.assertEqual((out["a"][1], out["b"][1]), ({"O": "a"}, {"O": "b"}))
        self.assertGreater(max(ta) / min(ta), 1.05, "the drift is there")
        interleaved = self.median(tb) / self.median(ta)
        # 1.0001 with the design's orders; a fixed order (a before b in every round) reads 1.0096: b always one rep
        # further into the drift.
        self.assertLess(abs(interleaved - 1.0), 0.003, interleaved)
        self.assertEqual(p.hold_short, [])
        # The same two kernels back to back, as measure() times them: the second reads slower by the drift.
        sim = DriftGpu(1.98e6, slope)
        p, calls = self.peers_on(sim), []
        a, b = self.ready(sim, "a", calls), self.ready(sim, "b", calls)
        blocked = (self.median(p.timed_reps(b.timed, b.host_ms, "k", "b")[0]) /
                   self.median(p.timed_reps(a.timed, a.host_ms, "k", "a")[0]))
        self.assertLess(blocked, 0.9, blocked)  # b first, a after: a reads >10% slower for coming second

    def test_the_hold_covers_every_kernels_queueing(self):
        # Host work per rep (0.3 ms) outlasts each kernel (0.2 ms): behind the one hold every rep of the three
        # kernels still reads the kernel's time.
        sim = SimGpu(1.98e6)
        p, calls = self.peers_on(sim), []
        out = p.timed_rounds([self.ready(sim, n, calls) for n in "abc"], "k")
        for name in "abc":
            for t in out[name][0]:
                self.assertAlmostEqual(t, self.KERNEL_MS, places=9)
        self.assertEqual(p.hold_short, [])
        # The calls follow the design: rep r of the three in round_order(3, r).
        want = [("abc")[i] for r in range(self.REPS) for i in peers.round_order(3, r)]
        self.assertEqual(calls, want)

    def test_the_orders_are_a_williams_design(self):
        for n in range(1, 8):
            rows = peers.round_orders(n)
            self.assertEqual(len(rows), n if n % 2 == 0 else 2 * n, n)
            for row in rows:
                self.assertEqual(sorted(row), list(range(n)))
            for place in range(n):  # each kernel in each place equally often
                counts = [sum(row[place] == k for row in rows) for k in range(n)]
                self.assertEqual(len(set(counts)), 1, (n, place, counts))
            pairs = {}
            for row in rows:  # each kernel after each other equally often
                for a, b in zip(row, row[1:]):
                    pairs[(a, b)] = pairs.get((a, b), 0) + 1
            if n > 1:
                self.assertEqual(len(pairs), n * (n - 1), n)
                self.assertEqual(len(set(pairs.values())), 1, (n, pairs))
        self.assertEqual(peers.round_order(2, 0), [0, 1])
        self.assertEqual(peers.round_order(2, 3), [1, 0])

    def test_a_kernel_that_breaks_is_recorded_and_the_rest_timed(self):
        # A kernel that raises in the rounds is recorded failed; the rounds run again without it; a kernel refused
        # before the rounds keeps its record; the records come in the kernels' order.
        sim = SimGpu(1.98e6)
        p, calls = self.peers_on(sim), []
        readies = {"a": self.ready(sim, "a", calls), "b": self.ready(sim, "b", calls, fail_at=3),
                   "c": self.ready(sim, "c", calls)}
        case = {"batch": 1, "heads": 2, "kv_heads": 2, "seq": 64, "head_dim": 64, "dtype": "bf16", "causal": False,
                "pass": "fwd"}
        p.ready = lambda case_, k, tensors: (readies[k] if k in readies
                                             else peers.make_record(case_, k, "skipped", "refused"))
        p.finish = lambda case_, r, times, outputs, tensors, ref_cache: peers.make_record(case_, r.kernel, "ok",
                                                                                          times_ms=times)
        recs = p.measure_interleaved(case, ["a", "z", "b", "c"], None, {})
        self.assertEqual([(r["kernel"], r["status"]) for r in recs],
                         [("a", "ok"), ("z", "skipped"), ("b", "failed"), ("c", "ok")])
        self.assertIn("b broke on call 3", recs[2]["reason"])
        for r in (recs[0], recs[3]):
            self.assertEqual(len(r["time_ms"]["samples"]), self.REPS)
            self.assertAlmostEqual(r["time_ms"]["median"], self.KERNEL_MS, places=9)

    def test_flag(self):
        self.assertTrue(peers.parse_args(["s.json", "--interleave"]).interleave)
        self.assertFalse(peers.parse_args(["s.json"]).interleave)
        r = run_script("peers.py", "s.json", "--interleave", "--self-hold")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--interleave: not with --self-hold", r.stderr)


class PeersLaunchHold(unittest.TestCase):
    """Peers.timed_reps on a simulated stream: a peer whose host work per rep (0.3 ms) outlasts its kernel
    (0.2 ms) must still be timed at the kernel's time."""

    KERNEL_MS, FLUSH_MS, HOST_MS, REPS = 0.2, 0.04, 0.3, 10

    def peers_on(self, sim, hold=True, host_ms=None):
        p = sim_peers(sim, self.REPS, self.FLUSH_MS, hold=hold, busy=False)
        host_ms = self.HOST_MS if host_ms is None else host_ms

        def timed():
            sim.launch(self.KERNEL_MS, host_ms=host_ms)
            return {"O": None}
        return p, timed

    def test_the_hold_times_the_kernel_not_the_host(self):
        sim = SimGpu(cycles_per_ms=1.98e6)
        p, timed = self.peers_on(sim)
        times, out = p.timed_reps(timed, host_ms=self.HOST_MS + 0.01, key="k", kernel="torch-cudnn")
        self.assertEqual(out, {"O": None})
        self.assertEqual(len(times), self.REPS)
        for t in times:
            self.assertAlmostEqual(t, self.KERNEL_MS, places=9)
        self.assertEqual(p.hold_short, [])
        self.assertEqual(len(sim.sleeps), 3, "two calibration spins, one hold")
        self.assertGreaterEqual(sim.sleeps[2], self.REPS * (self.HOST_MS + 0.01))

    def test_without_the_hold_host_time_is_timed(self):
        sim = SimGpu(cycles_per_ms=1.98e6)
        p, timed = self.peers_on(sim, hold=False)
        times, _ = p.timed_reps(timed, host_ms=self.HOST_MS, key="k", kernel="torch-cudnn")
        self.assertEqual(sim.sleeps, [])
        self.assertGreater(min(times[1:]), self.KERNEL_MS + 0.05, "the GPU waited for the host inside the windows")

    def test_a_short_hold_is_retried_longer(self):
        sim = SimGpu(cycles_per_ms=1.5e6)
        p, timed = self.peers_on(sim)
        times, _ = p.timed_reps(timed, host_ms=0.01, key="k", kernel="torch-cudnn")  # the warm-up underestimated
        holds = sim.sleeps[2:]
        self.assertGreater(len(holds), 1, "the first hold ended too soon and was retried")
        for a, b in zip(holds, holds[1:]):
            self.assertAlmostEqual(b / a, peers.HOLD_GROWTH, delta=1e-5)
        for t in times:
            self.assertAlmostEqual(t, self.KERNEL_MS, places=9)
        self.assertEqual(p.hold_short, [])

    def test_a_hold_still_short_is_reported(self):
        sim = SimGpu(cycles_per_ms=1.98e6)
        p, timed = self.peers_on(sim, host_ms=peers.HOLD_CAP_MS / 2)  # no hold under the cap covers 10 reps
        with contextlib.redirect_stderr(io.StringIO()) as err:
            p.timed_reps(timed, host_ms=1.0, key="b1-h8-kv8-n512-d64-bf16-full-bwd", kernel="torch-flash")
        self.assertEqual(p.hold_short, ["b1-h8-kv8-n512-d64-bf16-full-bwd torch-flash"])
        self.assertIn("the launch hold", err.getvalue())
        self.assertLessEqual(max(sim.sleeps[2:]), peers.HOLD_CAP_MS * (1 + 1e-6))

    def test_the_busy_hold_is_matrix_products(self):
        # --busy-hold: the hold is products that keep the GPU at work (timed once), not a spin; the reps are still
        # timed at the kernel's time, the host's queueing hidden behind the products.
        sim = SimGpu(cycles_per_ms=1.98e6)
        p, timed = self.peers_on(sim)
        p.busy_hold = True
        products = []

        def product():
            products.append(sim.launch(0.15))
        p.busy_product = product
        times, _ = p.timed_reps(timed, host_ms=self.HOST_MS + 0.01, key="k", kernel="torch-cudnn")
        self.assertEqual(sim.sleeps, [], "no spin: neither a calibration spin nor the hold")
        self.assertAlmostEqual(p.busy_ms, 0.15, places=9)
        hold_ms = peers.HOLD_MARGIN * (self.HOST_MS + 0.01) * self.REPS + peers.HOLD_PAD_MS
        self.assertEqual(len(products), 2 + peers.BUSY_CALIBRATION + math.ceil(hold_ms / 0.15))
        for t in times:
            self.assertAlmostEqual(t, self.KERNEL_MS, places=9)
        self.assertEqual(p.hold_short, [])
        self.assertEqual(peers.hold_kind(True, True), "busy")
        self.assertEqual(peers.hold_kind(True, False), "spin")
        self.assertIsNone(peers.hold_kind(False, True))
        self.assertTrue(peers.parse_args(["s.json", "--busy-hold"]).busy_hold)
        r = run_script("peers.py", "s.json", "--busy-hold", "--no-launch-hold")  # no hold and a busy one: refused
        self.assertEqual(r.returncode, 2)
        self.assertIn("not allowed with argument", r.stderr)

    def test_the_self_hold_is_the_peers_own_reps(self):
        # --self-hold: the hold is the rep itself (flush and timed(), untimed) queued again and again, enough of them
        # that the queue they build (each adds its GPU time less the host's) covers the timed reps' queueing: no
        # spin, no products, and the reps timed at the kernel's time.
        sim = SimGpu(cycles_per_ms=1.98e6)
        host_ms = 0.05
        p, timed = self.peers_on(sim, host_ms=host_ms)
        p.self_hold = True
        calls = []

        def counted():
            calls.append(sim.host)
            return timed()
        p.busy_product = lambda: self.fail("the self hold ran a busy product")
        rep_ms = self.FLUSH_MS + self.KERNEL_MS
        host_rep = host_ms + 0.005  # timed()'s host time and the flush's
        times, _ = p.timed_reps(counted, host_ms=host_rep, key="k", kernel="torch-cudnn", rep_ms=rep_ms)
        self.assertEqual(sim.sleeps, [], "no spin: neither a calibration spin nor the hold")
        hold_ms = peers.HOLD_MARGIN * host_rep * self.REPS + peers.HOLD_PAD_MS
        self.assertEqual(len(calls), math.ceil(hold_ms / (rep_ms - host_rep)) + self.REPS)
        for t in times:
            self.assertAlmostEqual(t, self.KERNEL_MS, places=9)
        self.assertEqual((p.hold_short, p.hold_fallback), ([], []))
        self.assertEqual(peers.hold_kind(True, False, True), "self")
        a = peers.parse_args(["s.json", "--self-hold"])
        self.assertEqual(peers.hold_kind(a.launch_hold, a.busy_hold, a.self_hold), "self")
        r = run_script("peers.py", "s.json", "--self-hold", "--busy-hold")
        self.assertEqual(r.returncode, 2)
        self.assertIn("not allowed with argument", r.stderr)

    def test_a_host_bound_self_hold_falls_back_to_busy(self):
        # Where PyTorch's host time per rep outlasts the rep on the GPU, the peer's own reps build no queue: the case
        # is timed behind the busy hold instead, named on stderr and in hold_fallback, still at the kernel's time.
        sim = SimGpu(cycles_per_ms=1.98e6)
        p, timed = self.peers_on(sim)  # host 0.3 ms a rep, the GPU 0.24
        p.self_hold = True
        products = []
        p.busy_product = lambda: products.append(sim.launch(0.15))
        with contextlib.redirect_stderr(io.StringIO()) as err:
            times, _ = p.timed_reps(timed, host_ms=self.HOST_MS + 0.01, key="k", kernel="torch-cudnn",
                                    rep_ms=self.FLUSH_MS + self.KERNEL_MS)
        self.assertEqual(p.hold_fallback, ["k torch-cudnn"])
        self.assertIn("the busy hold instead", err.getvalue())
        self.assertGreater(len(products), peers.BUSY_CALIBRATION + 2)
        for t in times:
            self.assertAlmostEqual(t, self.KERNEL_MS, places=9)
        self.assertEqual(p.hold_short, [])
        # The rule itself: a margin over the host's time, and the reps it takes within the cap.
        self.assertFalse(peers.self_hold_builds(0.24, 0.2, 10.0))  # 1.2x the host's: under the margin
        self.assertTrue(peers.self_hold_builds(0.26, 0.2, 10.0))
        self.assertFalse(peers.self_hold_builds(float("inf"), 0.2, 10.0))  # no warm-up reading
        self.assertFalse(peers.self_hold_builds(0.26, 0.2, peers.HOLD_CAP_MS))  # ~8.7 s of reps: over the cap
        self.assertEqual(peers.self_hold_reps(0.3, 0.1, 1.0), 5)

    def test_the_l2_flush_mode_comes_from_fb_l2_flush(self):
        # FB_L2_FLUSH, the variable flashbench's CUDA backend reads too: write (unset, empty or named) or clean;
        # anything else refused before any timing (exit 2, the variable named).
        self.assertEqual(peers.l2_flush_mode({}), "write")
        self.assertEqual(peers.l2_flush_mode({"FB_L2_FLUSH": ""}), "write")
        self.assertEqual(peers.l2_flush_mode({"FB_L2_FLUSH": "write"}), "write")
        self.assertEqual(peers.l2_flush_mode({"FB_L2_FLUSH": "clean"}), "clean")
        for bad in ("Clean", "read", "1"):
            with self.assertRaisesRegex(ValueError, "FB_L2_FLUSH=" + bad):
                peers.l2_flush_mode({"FB_L2_FLUSH": bad})
        with tempfile.TemporaryDirectory() as d:
            spec = os.path.join(d, "s.json")
            with open(spec, "w") as f:
                json.dump({"seq": [128], "batch": [1], "heads": [2], "head_dim": [64], "dtype": ["bf16"],
                           "kernels": ["flash"]}, f)
            r = run_script("peers.py", spec, "--list", env={**os.environ, "FB_L2_FLUSH": "bogus"})
        self.assertEqual(r.returncode, 2)
        self.assertIn("FB_L2_FLUSH=bogus", r.stderr)

    def test_the_default_hold_is_busy(self):
        # Session 54's call P: the busy hold times cuDNN's kernels nearer flashbench's timing of them than the spin
        # does, so it is the default; --spin-hold and --no-launch-hold name the others, one at a time.
        for argv, kind in ((["s.json"], "busy"), (["s.json", "--busy-hold"], "busy"),
                           (["s.json", "--spin-hold"], "spin"), (["s.json", "--no-launch-hold"], None)):
            a = peers.parse_args(argv)
            self.assertEqual(peers.hold_kind(a.launch_hold, a.busy_hold), kind, argv)
        r = run_script("peers.py", "s.json", "--spin-hold", "--busy-hold")
        self.assertEqual(r.returncode, 2)
        self.assertIn("not allowed with argument", r.stderr)

    def test_the_spin_is_calibrated_in_cycles_per_ms(self):
        sim = SimGpu(cycles_per_ms=1.755e6)
        p, _ = self.peers_on(sim)
        self.assertAlmostEqual(p.spin_cycles_per_ms(), 1.755e6, delta=1.755e6 * 1e-6)


# ---------------------------------------------------------------------------------------------------
# ncu_bytes.py


class NcuCsv(unittest.TestCase):
    def parse(self, name):
        with open(fixture(PLOT_FIXTURES, name)) as f:
            return ncu_bytes.parse_ncu_csv(f.read())

    def test_naive_fixture(self):
        launches = self.parse("ncu_naive_fwd.csv")
        self.assertEqual([l["id"] for l in launches], list(range(6)))
        self.assertEqual([ncu_bytes.family_of(l["kernel"]) for l in launches],
                         ["setup"] * 3 + ["gemm", "softmax", "gemm"])
        s = ncu_bytes.summarize_launches(launches)
        # The fixture's counted launches: QK^T GEMM, softmax, PV GEMM (grouped thousands in the CSV).
        self.assertEqual(s["dram_read_bytes"], 1050624 + 8389632 + 8913920)
        self.assertEqual(s["dram_write_bytes"], 8388608 + 8404992 + 524288)
        self.assertEqual(s["families"]["gemm"]["launches"], 2)
        self.assertEqual(s["families"]["setup"]["write_bytes"], 3 * 524288, "listed, not counted")

    def test_flash_fixture(self):
        s = ncu_bytes.summarize_launches(self.parse("ncu_flash_fwd.csv"))
        self.assertEqual(list(k for k in s["families"] if k not in ncu_bytes.NOT_COUNTED), ["flash"])
        self.assertEqual(s["dram_bytes"], 1574912 + 540672)
        flash = [k for k in s["kernels"] if k["family"] == "flash"]
        self.assertEqual(len(flash), 1)
        self.assertIn("FwdTraits<__nv_bfloat16, 64, 128, 64, 4>", flash[0]["name"], "commas inside quotes kept")

    def test_units_and_values(self):
        self.assertEqual(ncu_bytes.parse_value("1.5", "Mbyte", "x"), 1.5e6)
        self.assertEqual(ncu_bytes.parse_value("2", "KiB", "x"), 2048)
        self.assertEqual(ncu_bytes.parse_value("12,582,912", "byte", "x"), 12582912)
        for value, unit in (("n/a", "byte"), ("1,5", "byte"), ("3", "cycle")):
            with self.subTest(value=value, unit=unit), self.assertRaises(ncu_bytes.NcuCsvError):
                ncu_bytes.parse_value(value, unit, "x")

    def test_malformed_output(self):
        with self.assertRaises(ncu_bytes.NcuCsvError) as cm:
            ncu_bytes.parse_ncu_csv("==PROF== Connected to process 1\n==PROF== Disconnected from process 1\n")
        self.assertIn("no CSV table", str(cm.exception))
        header = '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
        only_read = header + '"0","k","dram__bytes_read.sum","byte","10"\n'
        with self.assertRaises(ncu_bytes.NcuCsvError) as cm:
            ncu_bytes.parse_ncu_csv(only_read)
        self.assertIn("dram__bytes_write.sum", str(cm.exception))
        with self.assertRaises(ncu_bytes.NcuCsvError) as cm:
            ncu_bytes.parse_ncu_csv('"ID","Kernel Name","Metric Value"\n"0","k","1"\n')
        self.assertIn("Metric Name", str(cm.exception))
        minimal = only_read + '"0","k","dram__bytes_write.sum","byte","5"\n"0","k","other__metric","x","9"\n'
        self.assertEqual(ncu_bytes.parse_ncu_csv(minimal)[0]["metrics"],
                         {"dram__bytes_read.sum": 10.0, "dram__bytes_write.sum": 5.0})

    def test_one_case_spec_runs_exactly_that_case(self):
        case = {"batch": 3, "heads": 8, "kv_heads": 2, "seq": 130, "head_dim": 64, "dtype": "fp16", "causal": True,
                "pass": "fwd"}
        s = fbspec.expand_spec(ncu_bytes.one_case_spec(case, "flash"))
        self.assertEqual(s["cases"], [dict(case, seq_q=130, seq_k=130)])
        self.assertEqual((s["kernels"], s["warmup"], s["reps"], s["verify"]), (["flash"], 0, 1, False))
        decode = dict(case, seq=None, seq_q=1, seq_k=4097)
        s = fbspec.expand_spec(ncu_bytes.one_case_spec(decode, "flash"))
        self.assertEqual(s["cases"], [decode])

    def test_backward_specs_are_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            spec = os.path.join(tmp, "s.json")
            with open(spec, "w") as f:
                json.dump({"seq": 64, "batch": 1, "heads": 1, "head_dim": 64, "dtype": "bf16", "pass": "bwd"}, f)
            r = run_script("ncu_bytes.py", spec, "-o", os.path.join(tmp, "o.json"))
            self.assertEqual(r.returncode, 2)
            self.assertIn("only fwd", r.stderr)


# ---------------------------------------------------------------------------------------------------
# sanitize.sh, with a stand-in compute-sanitizer


FAKE_SANITIZER = """#!/bin/sh
# Stand-in: prints what compute-sanitizer prints at the end of a run; the error count per tool comes from
# FAKE_<tool>, "none" for no summary line at all. Runs the program so that its exit status counts.
[ "$1" = "--version" ] && { echo "Version 9999.0 (stand-in)"; exit 0; }
tool=""; code=1
while [ $# -gt 0 ]; do
  case "$1" in
    --tool) tool=$2; shift 2 ;;
    --error-exitcode) code=$2; shift 2 ;;
    --*) shift 2 ;;
    *) break ;;
  esac
done
n=$(eval echo \\${FAKE_$tool:-0})
echo "========= COMPUTE-SANITIZER"
"$@" >/dev/null 2>&1; rc=$?
[ "$n" = none ] && exit $rc
if [ "$tool" = racecheck ]; then
  echo "========= RACECHECK SUMMARY: $n hazards displayed ($n errors, 0 warnings)"
else
  echo "========= ERROR SUMMARY: $n errors"
fi
[ "$n" -gt 0 ] && exit $code
exit $rc
"""


# Stand-in flashbench: writes a results file with two ok runs to the path after -o.
FAKE_FLASHBENCH = """#!/bin/sh
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then
    printf '{"results": [{"kernel": "naive", "status": "ok"}, {"kernel": "flash", "status": "ok"}]}' > "$2"
  fi
  shift
done
exit 0
"""


@unittest.skipUnless(shutil.which("bash"), "bash not installed")
class Sanitize(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="fb-san-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.fake = os.path.join(self.tmp, "compute-sanitizer")
        with open(self.fake, "w") as f:
            f.write(FAKE_SANITIZER)
        os.chmod(self.fake, stat.S_IRWXU)
        self.fake_fb = os.path.join(self.tmp, "flashbench")
        with open(self.fake_fb, "w") as f:
            f.write(FAKE_FLASHBENCH)
        os.chmod(self.fake_fb, stat.S_IRWXU)

    def run_sanitize(self, exe=None, tools=None, **fake_env):
        exe = exe or self.fake_fb
        env = dict(os.environ, **{f"FAKE_{k}": v for k, v in fake_env.items()})
        summary = os.path.join(self.tmp, "sanitize.json")
        args = ["bash", os.path.join(SCRIPTS, "sanitize.sh"), "-e", exe, "-c", self.fake]
        if tools:
            args += ["-t", tools]
        r = subprocess.run(args + [summary], capture_output=True, text=True, env=env, timeout=120)
        doc = None
        if os.path.exists(summary):
            with open(summary) as f:
                doc = json.load(f)
        return r, doc

    def test_clean(self):
        r, doc = self.run_sanitize()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(doc["clean"])
        self.assertEqual(list(doc["tools"]), ["memcheck", "racecheck", "synccheck", "initcheck"])
        for t in doc["tools"].values():
            self.assertEqual((t["status"], t["errors"], t["exit_code"]), ("clean", 0, 0))
            self.assertEqual(t["ok_runs"], {"flash": 1, "naive": 1})
            self.assertTrue(os.path.exists(os.path.join(self.tmp, t["log"])))
        self.assertIn("--racecheck-report all", doc["tools"]["racecheck"]["command"])

    def test_errors_found(self):
        r, doc = self.run_sanitize(racecheck="3")
        self.assertEqual(r.returncode, 1)
        self.assertFalse(doc["clean"])
        self.assertEqual((doc["tools"]["racecheck"]["status"], doc["tools"]["racecheck"]["errors"]), ("errors", 3))
        self.assertEqual(doc["tools"]["memcheck"]["status"], "clean")

    def test_missing_summary_and_failing_program_are_not_clean(self):
        r, doc = self.run_sanitize(tools="memcheck", memcheck="none")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(doc["tools"]["memcheck"]["status"], "no-summary")
        self.assertIsNone(doc["tools"]["memcheck"]["errors"])
        r, doc = self.run_sanitize(exe="/bin/false", tools="synccheck")
        self.assertEqual(r.returncode, 1)
        self.assertEqual((doc["tools"]["synccheck"]["status"], doc["tools"]["synccheck"]["exit_code"]),
                         ("program-failed", 1))

    def test_clean_over_nothing_is_not_clean(self):
        # A program that ran no kernel (wrote no results) proves nothing, whatever the summary says.
        r, doc = self.run_sanitize(exe="/bin/true", tools="memcheck")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(doc["tools"]["memcheck"]["status"], "nothing-ran")

    def test_bad_arguments(self):
        r, doc = self.run_sanitize(tools="memcheck leakcheck")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown tool 'leakcheck'", r.stderr)
        self.assertIsNone(doc)
        r, doc = self.run_sanitize(exe=os.path.join(self.tmp, "no-such-flashbench"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("not found", r.stderr)


# ---------------------------------------------------------------------------------------------------
# fb_torch.py and the C API (include/flashbench/capi.h): what runs without a GPU


class PeersCallablesFirst(unittest.TestCase):
    def test_order(self):
        self.assertEqual(peers.timing_order(["torch-cudnn"], ["mine"]), ["torch-cudnn", "mine"])
        self.assertEqual(peers.timing_order(["torch-cudnn"], ["mine"], True), ["mine", "torch-cudnn"])
        self.assertTrue(peers.parse_args(["s.json", "--callables-first"]).callables_first)
        self.assertFalse(peers.parse_args(["s.json"]).callables_first)


@unittest.skipUnless(os.environ.get("FB_CAPI_LIB"), "FB_CAPI_LIB unset (a build without CUDA has no C API)")
class CApi(unittest.TestCase):
    """libflashbench_capi.so through fb_torch's loader: its layout, its kernel list and its refusals, each naming
    the field or kernel (no GPU needed: they come before any launch)."""

    def setUp(self):
        import ctypes
        import fb_torch
        self.ct, self.fb = ctypes, fb_torch
        self.lib = fb_torch.library()
        self.err = ctypes.create_string_buffer(512)

    def call(self, **fields):
        c = self.fb.Call()
        c.struct_size = self.ct.sizeof(self.fb.Call)
        c.dtype, c.batch, c.heads, c.kv_heads, c.seq_q, c.seq_k, c.head_dim = 3, 2, 4, 2, 128, 256, 64
        for k, v in fields.items():
            setattr(c, k, v)
        return c

    def workspace(self, kernel, c, passes=1):
        n = self.ct.c_uint64(7)
        rc = self.lib.fb_capi_workspace_bytes(kernel.encode(), passes, self.ct.byref(c), self.ct.byref(n), self.err,
                                              len(self.err))
        return rc, self.err.value.decode(), n.value

    def test_layout_and_kernels(self):
        self.assertEqual(self.lib.fb_capi_call_size(), self.ct.sizeof(self.fb.Call))
        self.assertEqual(self.lib.fb_capi_version(), self.fb.CAPI_VERSION)
        names = self.fb.kernels()
        for k in ("naive", "flash", "flash-sm90"):
            self.assertIn(k, names)

    def test_refusals_name_what_is_wrong(self):
        cases = [("nope", {}, 1, "kernel 'nope': not one of"),
                 ("flash", {"kv_heads": 3}, 1, "call.kv_heads 3 does not divide call.heads 4"),
                 ("flash", {"head_dim": 100}, 1, "supports head_dim"),
                 ("flash", {"dtype": 9}, 1, "dtype 9 is not an fb_dtype"),
                 ("flash", {"seq_k": 0}, 1, "call.seq_k 0: must be >= 1"),
                 ("flash", {"causal": 2}, 1, "call.causal 2"),
                 ("flash", {"scale": float("nan")}, 1, "call.scale"),
                 ("flash", {"struct_size": 8}, 1, "call.struct_size 8"),
                 ("flash", {}, 4, "passes 4")]
        for kernel, fields, passes, want in cases:
            with self.subTest(kernel=kernel, fields=fields):
                rc, err, _ = self.workspace(kernel, self.call(**fields), passes)
                self.assertNotEqual(rc, 0)
                self.assertIn(want, err)

    def test_forward_refuses_null_outputs_before_launching(self):
        c = self.call(q=16, k=16, v=16)  # never dereferenced: o is checked first
        rc = self.lib.fb_capi_forward(b"flash", self.ct.byref(c), self.err, len(self.err))
        self.assertNotEqual(rc, 0)
        self.assertIn("call.o: NULL", self.err.value.decode())
        c = self.call(q=16, k=16, v=16, o=16, lse=16)
        rc = self.lib.fb_capi_backward(b"flash", self.ct.byref(c), self.err, len(self.err))
        self.assertNotEqual(rc, 0)
        self.assertIn("call.dout: NULL", self.err.value.decode())


    def test_forward_without_lse(self):
        """call.lse NULL in a forward (capi.h's inference forward): a kernel that always writes the log-sum-exp
        writes it into the workspace, so what fb_capi_workspace_bytes asks for a forward holds a row's LSE for every
        query row, and a forward given less is refused, naming lse and that size; a backward needs the LSE."""
        for dtype, acc in ((3, 4), (0, 8)):  # bf16: float LSE; fp64: double
            c = self.call(dtype=dtype)
            rows = c.batch * c.heads * c.seq_q
            rc, err, fwd = self.workspace("flash", c, 1)
            self.assertEqual(rc, 0, err)
            self.assertGreaterEqual(fwd, rows * acc)
            for kernel in ("flash", "naive"):
                rc, err, need = self.workspace(kernel, c, 1)
                self.assertEqual(rc, 0, err)
                c = self.call(dtype=dtype, q=16, k=16, v=16, o=16, workspace=16, workspace_size=need - 1)
                rc = self.lib.fb_capi_forward(kernel.encode(), self.ct.byref(c), self.err, len(self.err))
                self.assertNotEqual(rc, 0)
                msg = self.err.value.decode()
                self.assertIn(f"kernel '{kernel}' needs {need} (call.lse is NULL", msg)
        c = self.call(q=16, k=16, v=16, o=16, dout=16, dq=16, dk=16, dv=16)
        rc = self.lib.fb_capi_backward(b"flash", self.ct.byref(c), self.err, len(self.err))
        self.assertNotEqual(rc, 0)
        self.assertIn("call.lse: NULL (a backward reads its forward's)", self.err.value.decode())

    def test_kernel_names_with_settings(self):
        """"KERNEL:VAR=VALUE[:...]" (capi.h, version 3): the kernel under those settings for its calls, sized and
        checked as the kernel itself; a malformed assignment, a variable no variant can assign and an unknown kernel
        are refused, naming the name as written."""
        c = self.call()
        rc, err, plain = self.workspace("flash", c)
        self.assertEqual(rc, 0, err)
        for name in ("flash:FB_FLASH_FWD_PROBE=old", "flash:FB_FLASH_FWD_PROBE=old:FB_FLASH_BWD=desc2",
                     "flash:FB_FLASH_FWD_PROBE=old"):  # the second time from the library's cache
            with self.subTest(name=name):
                rc, err, n = self.workspace(name, c)
                self.assertEqual(rc, 0, err)
                self.assertEqual(n, plain)
        cases = [("flash:junk", "kernel 'flash:junk': 'junk' is not VAR=VALUE"),
                 ("flash:=1", "'=1' is not VAR=VALUE"),
                 ("flash:FB_FLASH_FWD_PROBE=old:", "'' is not VAR=VALUE"),
                 ("flash:PATH=/bin", "kernel 'flash:PATH=/bin': "),
                 ("nope:FB_FLASH_FWD_PROBE=old", "kernel 'nope': not one of")]
        for name, want in cases:
            with self.subTest(name=name):
                rc, err, _ = self.workspace(name, c)
                self.assertNotEqual(rc, 0)
                self.assertIn(want, err)
        rc, err, _ = self.workspace("flash:PATH=/bin", c)
        self.assertIn("FB_SM90_FWD_PROBE", err)  # the message lists what a variant can assign


    def test_two_builds_side_by_side(self):
        """FB_CAPI_LIB_BASE, a second build's library (here a copy of this one, another file), loads beside
        FB_CAPI_LIB as a library of its own (flash_sm90_base, flash_base: an A/B of two builds in one peers.py loop):
        loaded once, answering as the first does, its workspace answers cached apart; unset, it is named."""
        import shutil
        import tempfile
        fb = self.fb
        saved = os.environ.get(fb.BASE_ENV)
        try:
            with tempfile.TemporaryDirectory() as d:
                copy = os.path.join(d, "libflashbench_capi.so")
                shutil.copy(fb.library_path(), copy)
                os.environ[fb.BASE_ENV] = copy
                base = fb.library(fb.BASE_ENV)
                self.assertIsNot(base, self.lib)
                self.assertIs(fb.library(fb.BASE_ENV), base)
                self.assertEqual(fb.kernels(fb.BASE_ENV), fb.kernels())
                self.assertEqual(fb.flash_sm90_base.__name__, "flash_sm90_base")
                c = self.call()
                before = len(fb._workspace)
                sizes = [fb.workspace_bytes("flash", 1, c, 0, env) for env in (fb.DEFAULT_ENV, fb.BASE_ENV)]
                self.assertEqual(sizes[0], sizes[1])
                self.assertEqual(len(fb._workspace), before + 2)
                rc = base.fb_capi_workspace_bytes(b"nope", 1, self.ct.byref(c), self.ct.byref(self.ct.c_uint64(0)),
                                                  self.err, len(self.err))
                self.assertNotEqual(rc, 0)
                self.assertIn("kernel 'nope': not one of", self.err.value.decode())
            os.environ.pop(fb.BASE_ENV)
            with self.assertRaisesRegex(FileNotFoundError, "FB_CAPI_LIB_BASE is not set"):
                fb.library(fb.BASE_ENV)
        finally:
            if saved is None:
                os.environ.pop(fb.BASE_ENV, None)
            else:
                os.environ[fb.BASE_ENV] = saved


def main():
    result = unittest.main(exit=False, verbosity=2).result
    if not result.wasSuccessful():
        return 1
    if not HAVE_MATPLOTLIB:
        print("test_scripts.py: matplotlib missing: plot tests skipped "
              "(pip install -r scripts/requirements.txt)", file=sys.stderr)
        return EXIT_SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main())
