#!/usr/bin/env python3
"""Where a kernel's register spills sit: local-memory loads and stores in cuobjdump's SASS, inside loops or not.

    cuobjdump -sass -fun MANGLED_NAME build/flashbench > k.sass      (on a machine with the CUDA toolkit's cuobjdump)
    python3 scripts/sass_spills.py k.sass [more.sass ...]

ptxas -v (scripts/ptxas_spills.py) says how many bytes a function spills, not where. A spill reloaded once in the
epilogue costs nothing measurable; one reloaded in every step of the main loop costs every step. This reads the SASS of
one or more functions and, for each, lists its local-memory instructions (LDL, STL) with their addresses and whether
each lies inside a loop: between the target and the source of a backward branch (BRA to a label at a lower address).
Nested loops count by depth: depth 2 is a loop inside a loop (the K/V steps of a work-tile loop, say).

Output: per function, its instruction count, its LDL / STL counts by loop depth, and each local-memory instruction
with its address, depth and text. Exit status: 0 done, 2 bad input (a file that cannot be read or has no function).
"""

import re
import sys

FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
LABEL = re.compile(r"^\s*(\.L_x_\d+):")
INSTR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
BRANCH_TARGET = re.compile(r"\b(?:BRA|BRX|JMP)\b[^`]*`\((\.L_x_\d+)\)")
LOCAL = re.compile(r"\b(LDL|STL)(?:\.\S+)?\b")


def parse(text):
    """[(function, [(address, instruction text)], {label: address})] in file order."""
    funcs, cur, pending = [], None, []
    for line in text.splitlines():
        m = FUNCTION.match(line)
        if m:
            cur = (m.group(1), [], {})
            funcs.append(cur)
            pending = []
            continue
        if cur is None:
            continue
        m = LABEL.match(line)
        if m:
            pending.append(m.group(1))
            continue
        m = INSTR.match(line)
        if m:
            addr = int(m.group(1), 16)
            for lab in pending:
                cur[2][lab] = addr
            pending = []
            cur[1].append((addr, m.group(2)))
    return funcs


def loops(instrs, labels):
    """[(start, end)] address ranges of the backward branches' loops."""
    out = []
    for addr, text in instrs:
        m = BRANCH_TARGET.search(text)
        if m and m.group(1) in labels and labels[m.group(1)] <= addr:
            out.append((labels[m.group(1)], addr))
    return out


def report(name, instrs, labels):
    spans = loops(instrs, labels)
    rows = []
    for addr, text in instrs:
        m = LOCAL.search(text)
        if m:
            depth = sum(1 for a, b in spans if a <= addr <= b)
            rows.append((addr, m.group(1), depth, text))
    lines = [f"{name}: {len(instrs)} instructions, {len(spans)} loops"]
    for op in ("LDL", "STL"):
        by_depth = {}
        for _, o, dep, _ in rows:
            if o == op:
                by_depth[dep] = by_depth.get(dep, 0) + 1
        summary = ", ".join(f"depth {d}: {n}" for d, n in sorted(by_depth.items())) or "none"
        lines.append(f"  {op}: {summary}")
    for addr, _, dep, text in rows:
        lines.append(f"    {addr:06x}  depth {dep}  {text}")
    return "\n".join(lines)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    for path in argv:
        try:
            with open(path, errors="replace") as f:
                text = f.read()
        except OSError as e:
            print(f"sass_spills.py: cannot read '{path}': {e.strerror}", file=sys.stderr)
            return 2
        funcs = parse(text)
        if not funcs:
            print(f"sass_spills.py: {path}: no 'Function :' in it (cuobjdump -sass output expected)", file=sys.stderr)
            return 2
        for name, instrs, labels in funcs:
            print(report(name, instrs, labels))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
