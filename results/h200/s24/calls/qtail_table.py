#!/usr/bin/env python3
"""Session 24's A/B table: flash-sm90's backward with the query tail (the default, "on") against FB_SM90_BWD_QTAIL=off
("off"), torch-cudnn beside, per round. Usage: qtail_table.py DIR SPEC... (DIR holds off-SPEC-R.json, on-SPEC-R.json,
peers-SPEC-R.json for rounds R = 1, 2). Prints per case and round: off ms, on ms, on / off speed (off time / on time),
torch-cudnn time / on time; then per spec the geomean of on / off over its cases and rounds, and the lowest reading
(verified rows only)."""
import json, math, os, sys


def load(path):
    try:
        d = json.load(open(path))
    except (OSError, ValueError):
        return {}
    return {x["key"]: x["time_ms"]["median"] for x in d["results"]
            if x.get("status") == "ok" and x.get("verified") is not False}


def main():
    root, specs = sys.argv[1], sys.argv[2:]
    print("flash-sm90 non-causal backward, median ms: off (FB_SM90_BWD_QTAIL=off), on (the default), on / off speed; "
          "c = torch-cudnn time / on time")
    for spec in specs:
        rows = {}
        for r in "12":
            off = load(os.path.join(root, f"off-{spec}-{r}.json"))
            on = load(os.path.join(root, f"on-{spec}-{r}.json"))
            peers = load(os.path.join(root, f"peers-{spec}-{r}.json"))
            for k in on:
                if k in off:
                    rows.setdefault(k, []).append((off[k], on[k], peers.get(k)))
        reads = []
        for k, v in rows.items():
            cells = "   ".join(f"{a:.3f} {b:.3f} {a / b:.3f}x" + (f" c{c / b:.3f}" if c else "") for a, b, c in v)
            print(f"{k:44} {cells}")
            reads.append([a / b for a, b, _ in v])
        if reads:
            flat = [x for v in reads for x in v]
            g = math.exp(sum(math.log(x) for x in flat) / len(flat))
            print(f"  {spec}: on / off geomean {g:.3f}x over {len(reads)} cases x rounds, lowest {min(flat):.3f}x")


if __name__ == "__main__":
    main()
