#!/usr/bin/env python3
"""Register spills of every kernel in a build, from ptxas's own resource reports, against a baseline.

    python3 scripts/ptxas_spills.py BUILD_DIR --allow tests/data/ptxas_spills.json --nvcc-version 13.0.88 [--list]
    python3 scripts/ptxas_spills.py BUILD_DIR --write-baseline OUT.json --nvcc-version 13.0.88 [--note TEXT]

A kernel that spills registers to local memory pays for it wherever the spilled values are reloaded, and nothing in a
run on the CPU shows it: the first sign would be a slower device call. The kernels compile with ptxas -v and
scripts/ptxas_log.sh (their compiler launcher, CMakeLists.txt FLASHBENCH_PTXAS_LOG) keeps each object's report as
OBJECT.ptxas under the build folder; this reads them all. A function (one kernel instantiation, by its mangled name,
in its source file, for one architecture) may spill at most what the baseline allows it (max of its spill stores and
spill loads, in bytes; nothing where the baseline does not name it). A stack frame without spills (local arrays) is
not a spill.

The baseline (JSON) is what the build spilled when it was written: {"nvcc": "13.0", "archs": ["sm_80", "sm_90a"],
"note": "...", "allow": [{"source": "kernels/flash/flash_fwd_hdim128.cu", "arch": "sm_90a", "function": "_ZN...",
"spill_bytes": 16}]}. Register allocation is ptxas's: another nvcc major.minor than the baseline's, and the check is
skipped (exit 77) with a line saying so; architectures the baseline does not list are not checked. A function that
spills more than its allowance, or spills and is not listed, fails; an allowance larger than needed, or naming a
function the build no longer has, is reported (rewrite the baseline with --write-baseline once the change is
understood, and say why in the commit).

The same reports carry ptxas's wgmma diagnostics for sm_90a, checked here too. "(Cnnnn) Potential Performance Loss:
wgmma.mma_async instructions are serialized due to ... in the function 'F'" (C7511, C7515, C7518 among the codes) means
every wgmma of F waits for the one before it (no overlap of the tensor core with anything): it always fails, no baseline can allow it. "(C7517 /
C7519) warpgroup.wait / warpgroup.arrive is injected ... in function 'F'" means ptxas added a wait or an arrive the
source did not have; where one sits decides whether it costs anything, so the baseline may allow a function a count of
them ("injected": [{"source", "arch", "function", "count"}], written by --write-baseline with the spills), and a
function with more fails. Any other (Cnnnn) diagnostic is printed as a note.

Exit status: 0 nothing spills beyond the baseline and no wgmma is serialised or gets more injected waits, 1 otherwise,
2 bad input (no such folder, a malformed
baseline or report), 77 nothing to check (no reports: a build without CUDA or with FLASHBENCH_PTXAS_LOG off; or
another nvcc than the baseline's): ctest reports the test skipped.
"""

import argparse
import json
import os
import re
import sys

import fbresults

EXIT_SKIP = 77
REPORT_SUFFIX = ".ptxas"
OBJECT_DIR = re.compile(r"(?:^|/)CMakeFiles/[^/]+\.dir/")
ENTRY = re.compile(r"^ptxas info\s*: Compiling entry function '([^']+)' for '(sm_[0-9a-z]+)'")
PROPERTIES = re.compile(r"^ptxas info\s*: Function properties for (\S+)")
SPILLS = re.compile(r"^\s*(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
# ptxas prints its wgmma diagnostics before the entry functions of its run; the function is named in each.
SERIALIZED = re.compile(r"^ptxas info\s*: \((C\d+)\) Potential Performance Loss: wgmma\.mma_async instructions are "
                        r"serialized (.*?) in (?:the )?function '([^']+)'")
INJECTED = re.compile(r"^ptxas info\s*: \((C\d+)\) (warpgroup\.\w+) is injected .*? in (?:the )?function '([^']+)'")
DIAGNOSTIC = re.compile(r"^ptxas info\s*: \((C\d+)\) (.*)")


class InputError(Exception):
    pass


def source_of(report_path, build_dir):
    """kernels/flash/x.cu from BUILD/CMakeFiles/flashbench_kernels.dir/kernels/flash/x.cu.o.ptxas."""
    rel = os.path.relpath(report_path, build_dir).replace(os.sep, "/")
    rel = rel[: -len(REPORT_SUFFIX)]
    if rel.endswith(".o") or rel.endswith(".obj"):
        rel = rel[: rel.rindex(".")]
    m = OBJECT_DIR.search(rel)
    return rel[m.end():] if m else rel


def parse_report(text, path):
    """([(arch, function, stack, spill stores, spill loads)], one per function-properties block; ptxas's (Cnnnn)
    lines as [(arch, function, kind, code, text)]: kind "serialized", "injected" or "other", text the reason
    (serialized), the instruction (injected) or the whole message (other); the arch is that of the function's next
    entry in the report (ptxas prints them before the entries), "?" where none follows)."""
    out, diagnostics, arch, fn, entries = [], [], None, None, 0
    pending = []  # diagnostics waiting for their function's entry line: [kind, code, function or None, text]
    for n, line in enumerate(text.splitlines(), 1):
        m = ENTRY.match(line)
        if m:
            arch = m.group(2)
            entries += 1
            for d in [d for d in pending if d[2] == m.group(1)]:
                pending.remove(d)
                diagnostics.append((arch, d[2], d[0], d[1], d[3]))
            continue
        m = SERIALIZED.match(line) or INJECTED.match(line)
        if m:
            kind = "serialized" if m.re is SERIALIZED else "injected"
            pending.append([kind, m.group(1), m.group(3), m.group(2)])  # the reason, or which instruction
            continue
        m = DIAGNOSTIC.match(line)
        if m:
            pending.append(["other", m.group(1), None, line.split(":", 1)[1].strip()])
            continue
        m = PROPERTIES.match(line)
        if m:
            fn = m.group(1)
            continue
        m = SPILLS.match(line)
        if m:
            if fn is None or arch is None:
                raise InputError(f"{path}:{n}: spill figures before any 'Compiling entry function ... for sm_XX' "
                                 f"and 'Function properties' line")
            out.append((arch, fn, int(m.group(1)), int(m.group(2)), int(m.group(3))))
            fn = None
    # A report whose entry functions have no spill line is one this reader does not understand (another ptxas's
    # wording): counting nothing there would pass every kernel.
    if entries > len(out):
        raise InputError(f"{path}: {entries} entry functions and {len(out)} 'N bytes stack frame, N bytes spill "
                         f"stores, N bytes spill loads' lines: ptxas's report not understood")
    diagnostics += [("?", d[2] or "?", d[0], d[1], d[3]) for d in pending]  # no entry line followed
    return out, diagnostics


def major_minor(version):
    m = re.match(r"^(\d+)\.(\d+)", version or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


def _function_counts(entries, where, field, what):
    """{(source, arch, function): entry[field]} from a baseline list; each entry names its function and holds a
    whole number > 0 in field."""
    out = {}
    for i, e in enumerate(entries):
        at = f"{where}[{i}]"
        if not isinstance(e, dict):
            raise InputError(f"{at}: expected an object")
        for k in ("source", "arch", "function"):
            if not isinstance(e.get(k), str) or not e[k]:
                raise InputError(f"{at}.{k}: expected a non-empty string")
        n = e.get(field)
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise InputError(f"{at}.{field}: expected {what}")
        key = (e["source"], e["arch"], e["function"])
        if key in out:
            raise InputError(f"{at}: {e['function']} ({e['source']}, {e['arch']}) is listed twice")
        out[key] = n
    return out


def load_baseline(path):
    """(nvcc major.minor, set of archs, {(source, arch, function): bytes}, {(source, arch, function): injected})."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise InputError(f"--allow: cannot read '{path}': {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}:{e.colno}: malformed JSON: {e.msg}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("allow"), list):
        raise InputError(f"{path}: expected {{\"nvcc\": ..., \"archs\": [...], \"allow\": [ ... ]}}")
    nvcc = major_minor(doc.get("nvcc")) if isinstance(doc.get("nvcc"), str) else None
    if nvcc is None:
        raise InputError(f"{path}.nvcc: expected the nvcc version the baseline was written with (e.g. \"13.0\")")
    archs = doc.get("archs")
    if not isinstance(archs, list) or not archs or not all(isinstance(a, str) and a for a in archs):
        raise InputError(f"{path}.archs: expected the architectures the baseline covers (e.g. [\"sm_90a\"])")
    allow = _function_counts(doc["allow"], f"{path}: allow", "spill_bytes", "a whole number of bytes > 0")
    if not isinstance(doc.get("injected", []), list):
        raise InputError(f"{path}.injected: expected a list of {{\"source\", \"arch\", \"function\", \"count\"}}")
    injected = _function_counts(doc.get("injected", []), f"{path}: injected", "count",
                                "a whole number of injected waits / arrives > 0")
    return nvcc, set(archs), allow, injected


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build_dir", metavar="BUILD_DIR")
    p.add_argument("--nvcc-version", required=True, help="the build's nvcc version (CMAKE_CUDA_COMPILER_VERSION)")
    p.add_argument("--allow", help="the baseline (JSON) to check against")
    p.add_argument("--write-baseline", metavar="OUT", help="write the build's spills as the baseline instead")
    p.add_argument("--note", default="", help="with --write-baseline: why these spills are accepted")
    p.add_argument("--list", action="store_true", help="print every function that spills")
    a = p.parse_args(argv)
    try:
        if (a.allow is None) == (a.write_baseline is None):
            raise InputError("give --allow BASELINE (check) or --write-baseline OUT (write), one of them")
        nvcc = major_minor(a.nvcc_version)
        if nvcc is None:
            raise InputError(f"--nvcc-version: '{a.nvcc_version}' is not a version (e.g. 13.0.88)")
        if not os.path.isdir(a.build_dir):
            raise InputError(f"BUILD_DIR: '{a.build_dir}' is not a folder")
        base = load_baseline(a.allow) if a.allow else None
        reports = []
        for root, _, files in os.walk(a.build_dir):
            reports += [os.path.join(root, f) for f in files if f.endswith(REPORT_SUFFIX)]
        if not reports:
            print(f"ptxas_spills.py: no {REPORT_SUFFIX} reports under {a.build_dir} (a build without CUDA, or with "
                  f"FLASHBENCH_PTXAS_LOG off): nothing to check", file=sys.stderr)
            return EXIT_SKIP
        funcs, diags = [], []
        for path in sorted(reports):
            with open(path, errors="replace") as f:
                text = f.read()
            src = source_of(path, a.build_dir)
            spills, found = parse_report(text, path)
            funcs += [(src, *x) for x in spills]
            diags += [(src, *d) for d in found]
    except InputError as e:
        print(f"ptxas_spills.py: {e}", file=sys.stderr)
        return 2

    spilling = {}
    for src, arch, fn, stack, stores, loads in funcs:
        if max(stores, loads) > 0:
            key = (src, arch, fn)
            spilling[key] = max(spilling.get(key, 0), stores, loads)
    injected, serialized, other = {}, [], []
    for src, arch, fn, kind, code, text in diags:
        if kind == "injected":
            injected[(src, arch, fn)] = injected.get((src, arch, fn), 0) + 1
        elif kind == "serialized":
            serialized.append((src, arch, fn, code, text))
        else:
            other.append((src, code, text))
    if a.write_baseline:
        if serialized:
            for src, arch, fn, code, _ in serialized:
                print(f"  SERIALIZED: {src} {arch} {fn} ({code})", file=sys.stderr)
            print("ptxas_spills.py: --write-baseline: a serialised wgmma cannot be allowed; nothing written",
                  file=sys.stderr)
            return 1
        doc = {"nvcc": nvcc, "archs": sorted({arch for _, arch, *_ in funcs}), "note": a.note,
               "allow": [{"source": s, "arch": ar, "function": fn, "spill_bytes": b}
                         for (s, ar, fn), b in sorted(spilling.items())],
               "injected": [{"source": s, "arch": ar, "function": fn, "count": c}
                            for (s, ar, fn), c in sorted(injected.items())]}
        try:
            fbresults.write_atomic(a.write_baseline, json.dumps(doc, indent=1) + "\n")
        except OSError as e:
            print(f"ptxas_spills.py: --write-baseline: cannot write '{a.write_baseline}': {e.strerror}",
                  file=sys.stderr)
            return 2
        print(f"{len(reports)} objects, {len(funcs)} functions read; {len(spilling)} spill, {len(injected)} have "
              f"injected wgmma waits: written to {a.write_baseline}")
        return 0

    base_nvcc, archs, allow, allow_injected = base
    if base_nvcc != nvcc:
        print(f"ptxas_spills.py: the baseline {a.allow} is for nvcc {base_nvcc}, this build used {a.nvcc_version}: "
              f"register allocation differs between compilers, nothing checked (write one for this nvcc with "
              f"--write-baseline)", file=sys.stderr)
        return EXIT_SKIP
    checked = [f for f in funcs if f[1] in archs]
    skipped_archs = sorted({f[1] for f in funcs} - archs)
    over = [(k, b, allow.get(k, 0)) for k, b in sorted(spilling.items()) if k[1] in archs and b > allow.get(k, 0)]
    print(f"{len(reports)} objects, {len(checked)} functions checked ({', '.join(sorted(archs))}); "
          f"{sum(1 for k in spilling if k[1] in archs)} spill, {len(over)} beyond the baseline")
    if skipped_archs:
        print(f"  not checked (no baseline for them): {', '.join(skipped_archs)}")
    if a.list:
        for (src, arch, fn), b in sorted(spilling.items()):
            print(f"  spills: {src} {arch} {fn}: {b} bytes")
    for (src, arch, fn), b, cap in over:
        print(f"  OVER: {src} {arch} {fn}: spills {b} bytes (baseline {cap})")
    extra = [(k, c, allow_injected.get(k, 0)) for k, c in sorted(injected.items())
             if k[1] in archs | {"?"} and c > allow_injected.get(k, 0)]
    print(f"  wgmma: {len(serialized)} functions serialised, {len(extra)} with more injected waits / arrives than "
          f"the baseline ({sum(injected.values())} injected in {len(injected)} functions)")
    for src, arch, fn, code, text in serialized:
        print(f"  SERIALIZED: {src} {arch} {fn}: every wgmma waits for the one before ({code}: serialized {text})")
    for (src, arch, fn), c, cap in extra:
        print(f"  INJECTED: {src} {arch} {fn}: {c} warpgroup waits / arrives injected by ptxas (baseline {cap})")
    for src, code, text in other:
        print(f"  note: {src}: ptxas {text}")
    present = {(s, ar, fn) for s, ar, fn, *_ in funcs}
    sources = {s for s, *_ in present}
    for key, cap in sorted(allow.items()):
        if key[1] not in archs or key[0] not in sources:
            continue
        if key not in present:
            print(f"  note: {key[2]} ({key[0]}, {key[1]}) is in the baseline and not in this build")
        elif spilling.get(key, 0) < cap:
            print(f"  note: {key[2]} ({key[0]}, {key[1]}) spills {spilling.get(key, 0)} bytes, the baseline "
                  f"allows {cap}: it can be tightened")
    for key, cap in sorted(allow_injected.items()):
        if key[1] in archs and key[0] in sources and injected.get(key, 0) < cap:
            print(f"  note: {key[2]} ({key[0]}, {key[1]}) has {injected.get(key, 0)} injected wgmma waits / arrives, "
                  f"the baseline allows {cap}: it can be tightened")
    return 1 if over or serialized or extra else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
