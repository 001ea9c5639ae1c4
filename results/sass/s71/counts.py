#!/usr/bin/env python3
"""What a source change did to the kernels' code, read from two builds on the CPU: per kernel function, its SASS
instruction count (cuobjdump -sass of each object's sm_90a cubin) and ptxas's registers and spill bytes (the .ptxas
reports scripts/ptxas_log.sh keeps), before and after, for the functions whose counts differ.

    python3 results/sass/s71/counts.py BEFORE_KERNELS_DIR AFTER_KERNELS_DIR OBJECT... --meta KEY=VALUE... -o OUT.json

*_KERNELS_DIR: a build's CMakeFiles/flashbench_kernels.dir; OBJECT: a path under it (kernels/flash_sm90/x.cu.o).
Needs cuobjdump on PATH. Exit 0, or 2 for bad arguments or a missing object.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 3, "scripts"))
from ptxas_spills import ENTRY, SPILLS  # noqa: E402  (ptxas's report lines, as CI's spill check reads them)
from sass_spills import parse  # noqa: E402  (cuobjdump -sass: functions and their instructions)

USED = re.compile(r"ptxas info\s*: Used (\d+) registers")
# An anonymous namespace's mangled name carries a hash of the source file's path: two checkouts name it apart.
ANON = re.compile(r"\d+_GLOBAL__N__[0-9a-f]+_\d+_\w+?_cu_[0-9a-f]{8}")


def plain(name):
    return ANON.sub("_GLOBAL__N_", name)


def sass_counts(obj):
    """{function: instructions} of the object's sm_90a cubin(s)."""
    out = {}
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(["cuobjdump", "-xelf", "all", os.path.abspath(obj)], cwd=d, check=True,
                       capture_output=True)
        for cubin in sorted(f for f in os.listdir(d) if f.endswith(".cubin") and "sm_90" in f):
            text = subprocess.run(["cuobjdump", "-sass", os.path.join(d, cubin)], check=True, capture_output=True,
                                  text=True).stdout
            for name, instrs, _ in parse(text):
                out[plain(name)] = len(instrs)
    return out


def ptxas(obj):
    """{function: {regs, spill_stores, spill_loads}} for sm_90a from OBJECT.ptxas."""
    out, cur = {}, None
    path = obj + ".ptxas"
    if not os.path.exists(path):
        return out
    for line in open(path, errors="replace"):
        m = ENTRY.match(line)
        if m:
            cur = plain(m.group(1)) if m.group(2).startswith("sm_90") else None
            continue
        if cur is None:
            continue
        m = USED.match(line)
        if m:
            out.setdefault(cur, {})["regs"] = int(m.group(1))
        m = SPILLS.match(line)
        if m:
            out.setdefault(cur, {}).update(spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("objects", nargs="+")
    ap.add_argument("--meta", nargs="*", default=[])
    ap.add_argument("-o", required=True)
    a = ap.parse_args()
    doc = {"what": "SASS instructions (sm_90a) and ptxas registers / spills per kernel function, before and after",
           "meta": dict(kv.split("=", 1) for kv in a.meta), "objects": {}}
    for obj in a.objects:
        paths = [os.path.join(a.before, obj), os.path.join(a.after, obj)]
        for p in paths:
            if not os.path.exists(p):
                print(f"counts.py: {p} is missing", file=sys.stderr)
                return 2
        (sb, sa), (pb, pa) = (sass_counts(p) for p in paths), (ptxas(p) for p in paths)
        changed = {}
        for f in sorted(set(sb) | set(sa)):
            b = dict(pb.get(f, {}), instructions=sb.get(f))
            n = dict(pa.get(f, {}), instructions=sa.get(f))
            if b != n:
                changed[f] = {"before": b, "after": n}
        tally = collections.Counter("fewer" if v["after"]["instructions"] < v["before"]["instructions"] else "more"
                                    if v["after"]["instructions"] > v["before"]["instructions"] else "same"
                                    for v in changed.values() if None not in (v["before"]["instructions"],
                                                                                v["after"]["instructions"]))
        doc["objects"][obj] = {"functions": len(sa), "changed": len(changed), "instructions": dict(tally),
                               "by_function": changed}
        print(f"{obj}: {len(changed)} of {len(sa)} functions changed; instructions {dict(tally)}")
    json.dump(doc, open(a.o, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
