#!/usr/bin/env python3
"""A sweep against its PyTorch peers in interleaved rounds, then the ratios per round and over the rounds.

    python3 scripts/peer_rounds.py SPEC.json -o OUT_DIR --pair flash-sm90:torch-cudnn [--pair A:B ...]
                                   [--rounds 2] [--backends cudnn,flash] [--flashbench build/flashbench]
                                   [--run-arg=--kernels=flash-sm90 ...] [--places both|given] [--markdown]

At a GPU's power cap the clock follows the load, and a single run's ratio to a peer moves by a few percent
between runs of the same code; a case read once just below 1.0x says little. This runs `flashbench run SPEC`
and `scripts/peers.py SPEC` in turn, round after round (F1, P1, F2, P2, ...), so that drift over the minutes
falls on both sides, then `scripts/ratios.py --round` over the rounds: each round's ratio, their geometric mean,
and the cases behind in every round (the ones a ">= 1.0x everywhere" claim cannot make). The protocol of the
repo's final sweeps since session 23 (results/h200/s23/).

Places (--places, default both). A case times its kernels one after another, and where a kernel stands moves its
time at long rows by several percent (the one before it leaves the GPU's clock where it left it; session 56's call K,
an H100: 16 of 48 GQA rows by more than 3% between both sides of each pair second and both first). So by default each
pair whose PEER is one of --backends' stands in the same place on both sides, and the rounds alternate the places:
flashbench gets --kernels with the pairs' OURS kernels first (in --pair order in odd rounds, reversed in even ones),
then the spec's other kernels (a spec that names none runs the pairs' kernels only), and peers.py gets --backends with
the partners in the same order, then the other backends. --places given runs the spec's and --backends' orders as
they are (give --run-arg=--kernels=... yourself under it: with both, peer_rounds sets the order). stderr names any
round whose pair stands in different places (scripts/ratios.py's place note).

OUT_DIR (created; must be empty or absent) gets fb-<i>.json and peers-<i>.json with their logs, and
rounds.txt (also printed). A flashbench run that exits 1 (a kernel failed verification) still counts: its
results are written and such cases get no ratio. Any other failure stops the rounds with one line naming the
round and its log, exit status 1. Bad input (spec, flags, OUT_DIR) gets one line and exit status 2, and
nothing is run.
"""

import argparse
import os
import subprocess
import sys

import fbresults
import fbspec
import ratios

HERE = os.path.dirname(os.path.abspath(__file__))


class UsageError(Exception):
    pass


def check_args(args):
    """Refuses bad input (UsageError); returns the spec's kernels (None: it names none) and the pairs."""
    try:
        spec_kernels = fbspec.load_spec(args.spec)["kernels"]
    except fbspec.SpecError as e:
        raise UsageError(f"{args.spec}: {e}") from e
    except OSError as e:
        raise UsageError(f"{args.spec}: cannot open ({e.strerror})") from e
    if args.rounds < 1:
        raise UsageError(f"--rounds: {args.rounds} is not a number of rounds (1 or more; 2 or more to flag cases "
                         "behind in every round)")
    if os.path.exists(args.output) and (not os.path.isdir(args.output) or os.listdir(args.output)):
        raise UsageError(f"-o: {args.output} exists and is not an empty folder (the rounds would mix with "
                         "what is there)")
    if not args.backends.strip() or any(not b.strip() for b in args.backends.split(",")):
        raise UsageError(f"--backends: '{args.backends}' is not a comma-separated list of peers.py backends")
    pairs = [ratios.parse_pair(p) for p in args.pair]
    if (args.places == "both" and round_orders(pairs, None, args.backends, 1)[0] is not None
            and any(a == "--kernels" or a.startswith("--kernels=") for a in args.run_arg)):
        raise UsageError("--run-arg=--kernels: --places both sets the kernels' order (give --places given to set it "
                         "yourself)")
    for what, path in (("--flashbench", args.flashbench), ("--peers", args.peers)):
        if not os.path.isfile(path):
            raise UsageError(f"{what}: {path} is not a file")
    return spec_kernels, pairs


def torch_name(backend):
    name = backend.strip()
    return name if name.startswith("torch-") else "torch-" + name


def round_orders(pairs, spec_kernels, backends, round_no):
    """--places both: (flashbench's --kernels, peers.py's --backends) for round round_no (1-based). The pairs whose
    PEER is one of backends (peers.py names, with or without torch-) put OURS first in flashbench's order and PEER in
    the same place in peers.py's: in pair order in odd rounds, reversed in even ones; then spec_kernels' others (None:
    a spec that names none) and the other backends. None for flashbench where no pair is matched (nothing to set)."""
    wanted = [torch_name(b) for b in backends.split(",")]
    matched = {}  # OURS -> PEER, in pair order (a kernel's first pair)
    for ours, peer in pairs:
        if peer in wanted:
            matched.setdefault(ours, peer)
    if not matched:
        return None, backends
    order = list(matched.items())
    if round_no % 2 == 0:
        order.reverse()
    kernels = [o for o, _ in order] + [k for k in spec_kernels or [] if k not in matched]
    peers = [p for _, p in order] + wanted  # each backend once, at its first place
    return kernels, ",".join(dict.fromkeys(b[len("torch-"):] for b in peers))


def run_step(cmd, out_json, log, ok_codes, what):
    with open(log, "w") as f:
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT)
    if rc not in ok_codes or not os.path.isfile(out_json):
        print(f"peer_rounds.py: {what} exited {rc} without its results (see {log})", file=sys.stderr)
        return False
    return True


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec", help="sweep spec (JSON), run by flashbench and by peers.py")
    ap.add_argument("-o", "--output", required=True, help="folder for every round's files and rounds.txt")
    ap.add_argument("--pair", action="append", required=True, metavar="OURS:PEER",
                    help="two kernel names for the ratios, e.g. flash-sm90:torch-cudnn; repeat for more")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of flashbench then peers (default 2)")
    ap.add_argument("--backends", default="cudnn,flash", help="peers.py backends (default cudnn,flash)")
    ap.add_argument("--flashbench", default=os.path.join("build", "flashbench"), help="the flashbench binary")
    ap.add_argument("--peers", default=os.path.join(HERE, "peers.py"), help="peers.py (default: the one here)")
    ap.add_argument("--run-arg", action="append", default=[], metavar="ARG",
                    help="one more argument for every `flashbench run` (repeat; write --run-arg=--kernels=...)")
    ap.add_argument("--peers-arg", action="append", default=[], metavar="ARG",
                    help="one more argument for every peers.py (repeat; e.g. --peers-arg=--busy-hold)")
    ap.add_argument("--places", choices=("both", "given"), default="both",
                    help="both (default): each pair's two sides in the same place in their cases, the places "
                    "alternating by round; given: the spec's and --backends' orders as they are")
    ap.add_argument("--markdown", action="store_true", help="rounds.txt as Markdown tables")
    args = ap.parse_args(argv)
    try:
        spec_kernels, pairs = check_args(args)
    except (UsageError, ratios.UsageError) as e:
        print(f"peer_rounds.py: {e}", file=sys.stderr)
        return 2
    out = args.output
    os.makedirs(out, exist_ok=True)
    rounds = []
    for i in range(1, args.rounds + 1):
        fb, peers = os.path.join(out, f"fb-{i}.json"), os.path.join(out, f"peers-{i}.json")
        run_args, backends = list(args.run_arg), args.backends
        if args.places == "both":
            kernels, backends = round_orders(pairs, spec_kernels, args.backends, i)
            if kernels:
                run_args.append("--kernels=" + ",".join(kernels))
        if not run_step([args.flashbench, "run", args.spec, "-q", "-o", fb] + run_args, fb,
                        os.path.join(out, f"fb-{i}.log"), (0, 1), f"round {i}: flashbench run"):
            return 1
        if not run_step([sys.executable, args.peers, args.spec, "--backends", backends, "-o", peers]
                        + args.peers_arg, peers,
                        os.path.join(out, f"peers-{i}.log"), (0,), f"round {i}: peers.py"):
            return 1
        rounds.append([fb, peers])
    notes = []
    try:
        text = ratios.report(rounds, args.pair, args.markdown, notes=notes)
    except (ratios.UsageError, fbresults.ResultsError) as e:
        print(f"peer_rounds.py: ratios: {e}", file=sys.stderr)
        return 1
    for note in notes:
        print(f"peer_rounds.py: {note}", file=sys.stderr)
    with open(os.path.join(out, "rounds.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
