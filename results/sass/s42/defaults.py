#!/usr/bin/env python3
"""The portable backward's TcConfig aliases (kernels/flash/flash_bwd_tc.cuh) matched to sass_spills.py --summary rows.

    python3 defaults.py SUMMARY.tsv [bf16|fp16]

Each `using NAME = TcGridTraits<Elem, ...>;` of TcConfig<Elem, 128> and <Elem, 64> is turned into the mangled
TcGridTraits name (defaults filled in from the template's declaration: kPInRegs, kEarlyOwn, kSplitMasked true, the
rest false) and looked up among the summary's functions. Prints one line per alias: its local loads and stores outside
loops, inside loops, the busiest loop's count and size, or that it has none.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "..", "..", "kernels", "flash", "flash_bwd_tc.cuh")
BOOL_DEFAULTS = [True, True, True] + [False] * 13  # kPInRegs_ .. kDqTiled_
ELEM = {"bf16": "13__nv_bfloat16", "fp16": "6__half"}


def mangled(elem, ints, bools):
    full = bools + BOOL_DEFAULTS[len(bools):]
    return ("TcGridTraitsI" + ELEM[elem] + "".join(f"Li{i}E" for i in ints)
            + "".join("Lb1E" if b else "Lb0E" for b in full) + "EE")


def aliases(src):
    for d in (128, 64):
        block = src[src.index(f"struct TcConfig<Elem, {d}>"):]
        block = block[:block.index("\n};")]
        for m in re.finditer(r"using (\w+) = TcGridTraits<Elem,([^>]*)>;", block, re.S):
            args = [a.strip() for a in m.group(2).split(",")]
            yield d, m.group(1), [int(a) for a in args[:6]], [a == "true" for a in args[6:]]


def main(argv):
    if not argv:
        print(__doc__.strip())
        return 2
    elem = argv[1] if len(argv) > 1 else "bf16"
    rows = [l.rstrip("\n").split("\t") for l in open(argv[0]) if l.strip() and not l.startswith(("#", "ldl_out"))]
    for d, name, ints, bools in aliases(open(SOURCE).read()):
        key = mangled(elem, ints, bools)
        hit = [r for r in rows if key in r[7]]
        if hit:
            r = hit[0]
            print(f"d{d} {name:24s} out {r[0]} LDL {r[1]} STL, in loops {r[2]} LDL {r[3]} STL; "
                  f"busiest loop {r[4]} in {r[5]} instructions")
        else:
            print(f"d{d} {name:24s} no local memory")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
