#!/usr/bin/env python3
"""What one pass of a kernel's loop issues, by opcode, read from cuobjdump's SASS on a machine without a GPU.

    cuobjdump -sass -fun MANGLED_NAME build/flashbench > k.sass
    python3 scripts/sass_mix.py k.sass [more.sass ...] [--function TEXT] [--min-size N] [--json OUT.json]

A loop's body (scripts/sass_spills.py's natural loops) holds every block a pass may run: the masked branch of a
softmax, the slow path of an mbarrier wait that spins and jumps back. Counting it whole says what the compiler laid
out, not what a pass issues. So for each loop this also finds its shortest pass: the path of basic blocks from the
header back to it, within the loop, that issues the fewest instructions (every branch that skips a block taken, no
wait retried). That is the pass a K/V step of an unmasked tile runs when its data is there, the one to compare between
two kernels (ours against a peer's, one variant against another). A loop around another one (a work-tile loop around
its K/V loop) has a shortest pass that skips the inner loop: read the inner loop's own.

Output, per function (those whose name contains TEXT, with --function) and per loop of at least N instructions
(default 100): the loop's size and block count, the shortest pass's size and its blocks, a table of opcodes (the
mnemonic before its first dot, the predicate dropped) with their counts in the whole loop and in the pass, and the
blocks off the pass with their sizes and largest opcode counts; with --json, the same in OUT.json (per function, per loop:
header, size, blocks, pass {size, blocks}, opcodes {op: [loop, pass]}, off_pass [{start, size, opcodes}]). Exit status: 0 done, 2 bad input (a file that cannot
be read or has no function, a bad flag).
"""

import collections
import heapq
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sass_spills  # noqa: E402  (read_functions, cfg, loops: one reading of SASS for both scripts)

PREDICATE = re.compile(r"^@!?U?P[T0-9]+\s+")


def opcode(text):
    """The mnemonic of an instruction's text: 'FFMA' for '@!P0 FFMA.FTZ R1, ...'."""
    return PREDICATE.sub("", text).split()[0].split(".")[0]


def shortest_pass(blocks, succ, body_blocks, header):
    """The fewest-instruction path header -> ... -> header through body_blocks (block indices), as a list of block
    indices starting with header; None when no block of the body leads back to it."""
    size = lambda b: blocks[b][1] - blocks[b][0] + 1
    best = {header: size(header)}
    back = {header: None}
    heap = [(size(header), header)]
    done = set()
    end_cost, end_from = None, None
    while heap:
        cost, b = heapq.heappop(heap)
        if b in done:
            continue
        done.add(b)
        for s in succ.get(b, ()):
            if s == header:
                if end_cost is None or cost < end_cost:
                    end_cost, end_from = cost, b
                continue
            if s not in body_blocks:
                continue
            c = cost + size(s)
            if s not in best or c < best[s]:
                best[s], back[s] = c, b
                heapq.heappush(heap, (c, s))
    if end_from is None:
        return None
    path, b = [], end_from
    while b is not None:
        path.append(b)
        b = back[b]
    return path[::-1]


def mix(instrs, indices):
    return collections.Counter(opcode(instrs[i][1]) for i in indices)


def analyse(name, instrs, labels, min_size):
    """{function, instructions, loops: [{header, size, blocks, pass: {size, blocks}, opcodes: {op: [loop, pass]},
    off_pass: [{start, size, opcodes}]}]} for the loops of at least min_size instructions; addresses as hex strings."""
    blocks, succ = sass_spills.cfg(instrs, labels)
    start_of = {instrs[s][0]: b for b, (s, _) in enumerate(blocks)}
    addr = lambda b: f"{instrs[blocks[b][0]][0]:06x}"
    size = lambda b: blocks[b][1] - blocks[b][0] + 1
    loops = []
    for head, body in sass_spills.loops(instrs, labels):
        if len(body) < min_size:
            continue
        body_blocks = {b for b, (s, _) in enumerate(blocks) if instrs[s][0] in body}
        path = shortest_pass(blocks, succ, body_blocks, start_of[head]) or [start_of[head]]
        in_path = [i for b in path for i in range(blocks[b][0], blocks[b][1] + 1)]
        whole = mix(instrs, [i for i, (a, _) in enumerate(instrs) if a in body])
        one = mix(instrs, in_path)
        off = sorted(body_blocks - set(path), key=lambda b: blocks[b][0])
        loops.append({
            "header": f"{head:06x}", "size": len(body), "blocks": len(body_blocks),
            "pass": {"size": len(in_path), "blocks": [addr(b) for b in path]},
            "opcodes": {op: [whole[op], one[op]] for op in sorted(whole, key=lambda o: (-whole[o], -one[o], o))},
            "off_pass": [{"start": addr(b), "size": size(b),
                          "opcodes": dict(sorted(mix(instrs, range(blocks[b][0], blocks[b][1] + 1)).items(),
                                                 key=lambda kv: (-kv[1], kv[0])))} for b in off],
        })
    return {"function": name, "instructions": len(instrs), "loops": loops}


def report(a):
    lines = [f"{a['function']}: {a['instructions']} instructions"]
    for lp in a["loops"]:
        lines.append(f"  loop at {lp['header']}: {lp['size']} instructions in {lp['blocks']} blocks; shortest pass "
                     f"{lp['pass']['size']} instructions ({' '.join(lp['pass']['blocks'])})")
        lines.append(f"    {'opcode':12s} {'loop':>6s} {'pass':>6s}")
        for op, (whole, one) in lp["opcodes"].items():
            lines.append(f"    {op:12s} {whole:6d} {one:6d}")
        for b in lp["off_pass"]:
            top = ", ".join(f"{o} {n}" for o, n in list(b["opcodes"].items())[:4])
            lines.append(f"    off the pass: {b['start']}, {b['size']} instructions ({top})")
    return "\n".join(lines)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    paths, function, min_size, json_out = [], None, 100, None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--function", "--min-size", "--json"):
            if i + 1 >= len(argv):
                print(f"sass_mix.py: {a} needs a value", file=sys.stderr)
                return 2
            v = argv[i + 1]
            if a == "--function":
                function = v
            elif a == "--json":
                json_out = v
            else:
                try:
                    min_size = int(v)
                except ValueError:
                    min_size = -1
                if min_size < 1:
                    print(f"sass_mix.py: --min-size must be a positive integer, got '{v}'", file=sys.stderr)
                    return 2
            i += 2
        elif a.startswith("--"):
            print(f"sass_mix.py: unknown flag '{a}'", file=sys.stderr)
            return 2
        else:
            paths.append(a)
            i += 1
    if not paths:
        print("sass_mix.py: no SASS file given", file=sys.stderr)
        return 2
    out = []
    for path in paths:
        funcs = sass_spills.read_functions(path, "sass_mix.py")
        if funcs is None:
            return 2
        out += [analyse(n, ins, lab, min_size) for n, ins, lab in funcs if function is None or function in n]
    if not out:
        print(f"sass_mix.py: no function's name contains '{function}'", file=sys.stderr)
        return 2
    if json_out:
        try:
            with open(json_out, "w") as f:
                json.dump({"min_size": min_size, "functions": out}, f, indent=1)
                f.write("\n")
        except OSError as e:
            print(f"sass_mix.py: cannot write '{json_out}': {e.strerror}", file=sys.stderr)
            return 2
    print("\n".join(report(a) for a in out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
