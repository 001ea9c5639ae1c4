#!/usr/bin/env python3
"""Where a kernel's register spills sit: local-memory loads and stores in cuobjdump's SASS, inside loops or not.

    cuobjdump -sass -fun MANGLED_NAME build/flashbench > k.sass      (on a machine with the CUDA toolkit's cuobjdump)
    python3 scripts/sass_spills.py k.sass [more.sass ...]
    python3 scripts/sass_spills.py --summary all.sass          (cuobjdump -sass build/flashbench > all.sass: every kernel)

ptxas -v (scripts/ptxas_spills.py) says how many bytes a function spills, not where. A spill reloaded once in the
epilogue costs nothing measurable; one reloaded in every step of the main loop costs every step. This reads the SASS of
one or more functions and, for each, lists its local-memory instructions (LDL, STL) with their addresses and whether
each lies inside a loop. Loops are the natural loops of the function's control-flow graph (basic blocks split at
branches and their targets; a back edge goes to a block that dominates its source), so a loop whose body the compiler
laid out in pieces, or a forward branch out of one, is still one loop. Nested loops count by depth: depth 2 is a loop
inside a loop (the K/V steps of a work-tile loop, say). Reads cuobjdump's branch targets (BRA 0x340) and nvdisasm's
(BRA `(.L_x_0)); an indirect branch (BRX, JMX) is taken to end its block with no known successor.

Output: per function, its instruction count, each loop's header address and size, its LDL / STL counts by loop depth,
and each local-memory instruction with its address, depth, text and the innermost loop it lies in. With --summary, one
tab-separated line per function that has local loads or stores (those outside loops, those inside, the busiest loop's
count and size), then a count line. Exit status: 0 done, 2 bad input (a file that cannot be read or has no function).
"""

import re
import sys

FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
LABEL = re.compile(r"^\s*(\.L_x_\d+):")
INSTR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
# A branch's target: nvdisasm names it by label (BRA `(.L_x_0)), cuobjdump -sass by the function-relative address
# (BRA 0x340; BRA.DIV UR4, 0xb420; @P0 BRA.U.ANY 0x4e40).
BRANCH_TARGET = re.compile(r"\b(?:BRA|BRX|JMP)(?:\.[A-Z.]+)?\s+(?:[^`;]*,\s*)?(?:`\((\.L_x_\d+)\)|0x([0-9a-f]+)\b)")
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


PREDICATE = re.compile(r"^@!?U?P[T0-9]+\s+")
ENDS_FLOW = re.compile(r"^(?:EXIT|RET|BRX|JMX|KILL)\b")  # no fall-through when unpredicated; BRX/JMX targets unknown


def read_functions(path, prog):
    """parse() of the file at path; None, having said why on stderr under prog's name, if it cannot be read or holds
    no function."""
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError as e:
        print(f"{prog}: cannot read '{path}': {e.strerror}", file=sys.stderr)
        return None
    funcs = parse(text)
    if not funcs:
        print(f"{prog}: {path}: no 'Function :' in it (cuobjdump -sass output expected)", file=sys.stderr)
        return None
    return funcs


def branch_target(text, labels):
    """The address a direct branch goes to, or None."""
    m = BRANCH_TARGET.search(text)
    if not m:
        return None
    return labels.get(m.group(1)) if m.group(1) else int(m.group(2), 16)


def cfg(instrs, labels):
    """Basic blocks and edges: ([(first index, last index) into instrs], {block: set of successor blocks})."""
    index = {a: i for i, (a, _) in enumerate(instrs)}
    leaders = {0}
    for i, (_, text) in enumerate(instrs):
        t = branch_target(text, labels)
        if t is not None and t in index:
            leaders.add(index[t])
        if (t is not None or ENDS_FLOW.match(PREDICATE.sub("", text))) and i + 1 < len(instrs):
            leaders.add(i + 1)
    starts = sorted(leaders)
    blocks = [(starts[k], (starts[k + 1] if k + 1 < len(starts) else len(instrs)) - 1) for k in range(len(starts))]
    block_of = {first: k for k, (first, _) in enumerate(blocks)}
    succ = {k: set() for k in range(len(blocks))}
    for k, (first, last) in enumerate(blocks):
        text = instrs[last][1]
        bare = PREDICATE.sub("", text)
        predicated = bare != text
        t = branch_target(text, labels)
        if t is not None and t in index:
            succ[k].add(block_of[index[t]])
        unconditional_bra = t is not None and not predicated and not bare.startswith("BRA.DIV")
        if not unconditional_bra and not (ENDS_FLOW.match(bare) and not predicated) and k + 1 < len(blocks):
            succ[k].add(k + 1)
    return blocks, succ


def dominators(n, succ):
    """dom[b]: the blocks that dominate b (every path from block 0 to b goes through them); unreachable: all."""
    pred = {k: set() for k in range(n)}
    for k, ss in succ.items():
        for t in ss:
            pred[t].add(k)
    everything = set(range(n))
    dom = {k: set(everything) for k in range(n)}
    dom[0] = {0}
    changed = True
    while changed:
        changed = False
        for k in range(1, n):
            ps = [dom[p] for p in pred[k]]
            new = (set.intersection(*ps) if ps else set(everything)) | {k}
            if new != dom[k]:
                dom[k], changed = new, True
    return dom, pred


def loops(instrs, labels):
    """The natural loops of a function's control-flow graph: [(header address, set of the addresses in the loop)].

    A back edge goes from a block to one that dominates it (its loop's header); the loop is every block that reaches
    the edge's source without passing the header. Back edges to one header make one loop."""
    if not instrs:
        return []
    blocks, succ = cfg(instrs, labels)
    dom, pred = dominators(len(blocks), succ)
    bodies = {}
    for src, ss in succ.items():
        for h in ss:
            if h in dom[src] and len(dom[src]) < len(blocks):  # a reachable block's back edge
                body = bodies.setdefault(h, {h})
                stack = [src]
                while stack:
                    b = stack.pop()
                    if b not in body:
                        body.add(b)
                        stack.extend(pred[b])
    return [(instrs[blocks[h][0]][0], {instrs[i][0] for b in body for i in range(blocks[b][0], blocks[b][1] + 1)})
            for h, body in sorted(bodies.items())]


def analyse(instrs, labels):
    """(loops, their sizes, [(address, LDL or STL, depth, index of the innermost loop or None, text)])."""
    found = loops(instrs, labels)
    sizes = [len(body) for _, body in found]
    rows = []
    for addr, text in instrs:
        m = LOCAL.search(text)
        if m:
            inside = [i for i, (_, body) in enumerate(found) if addr in body]
            inner = min(inside, key=lambda i: sizes[i]) if inside else None
            rows.append((addr, m.group(1), len(inside), inner, text))
    return found, sizes, rows


def report(name, instrs, labels):
    found, sizes, rows = analyse(instrs, labels)
    lines = [f"{name}: {len(instrs)} instructions, {len(found)} loops"]
    for i, (head, _) in enumerate(found):
        lines.append(f"  loop at {head:06x}: {sizes[i]} instructions")
    for op in ("LDL", "STL"):
        by_depth = {}
        for _, o, dep, _, _ in rows:
            if o == op:
                by_depth[dep] = by_depth.get(dep, 0) + 1
        summary = ", ".join(f"depth {d}: {n}" for d, n in sorted(by_depth.items())) or "none"
        lines.append(f"  {op}: {summary}")
    for addr, _, dep, inner, text in rows:
        where = f"  (innermost loop at {found[inner][0]:06x}, {sizes[inner]} instructions)" if inner is not None else ""
        lines.append(f"    {addr:06x}  depth {dep}  {text}{where}")
    return "\n".join(lines)


SUMMARY_HEADER = "ldl_out\tstl_out\tldl_loop\tstl_loop\tbusiest_loop_local\tbusiest_loop_size\tinstructions\tfunction"


def summary(name, instrs, labels):
    """One tab-separated line for a function with local-memory instructions (SUMMARY_HEADER), None for one without.
    The busiest loop is the one with the most local loads and stores whose innermost loop it is; its size says how
    much else one pass of it issues."""
    found, sizes, rows = analyse(instrs, labels)
    if not rows:
        return None
    count = lambda op, looped: sum(1 for _, o, dep, _, _ in rows if o == op and (dep > 0) == looped)
    per_loop = {}
    for _, _, _, inner, _ in rows:
        if inner is not None:
            per_loop[inner] = per_loop.get(inner, 0) + 1
    busiest = max(per_loop, key=lambda i: (per_loop[i], sizes[i])) if per_loop else None
    local, size = (per_loop[busiest], sizes[busiest]) if busiest is not None else (0, 0)
    return "\t".join(str(x) for x in (count("LDL", False), count("STL", False), count("LDL", True), count("STL", True),
                                       local, size, len(instrs), name))


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    brief = argv[0] == "--summary"
    paths = argv[1:] if brief else argv
    if not paths:
        print("sass_spills.py: --summary needs a SASS file", file=sys.stderr)
        return 2
    if brief:
        print(SUMMARY_HEADER)
    functions = spilling = 0
    for path in paths:
        funcs = read_functions(path, "sass_spills.py")
        if funcs is None:
            return 2
        for name, instrs, labels in funcs:
            functions += 1
            if brief:
                line = summary(name, instrs, labels)
                if line:
                    spilling += 1
                    print(line)
            else:
                print(report(name, instrs, labels))
    if brief:
        print(f"# {functions} functions, {spilling} with local-memory loads or stores")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
