#!/usr/bin/env python3
"""Call E's table: per results file and kernel, how many cases verified, failed or were skipped, and every case that
did not verify with its status and reason. Exit 1 if a file is missing (its run did not finish), a case of flash or
flash-decode failed or did not verify, or a flash-sm90 case was anything but skipped for want of sm_90a code (an "80"
build has none).

    python3 results/h200/s42/calls/sm80ptx_summary.py RESULTS.json [...]
"""
import json
import sys
from collections import Counter


def main(paths):
    bad = 0
    for path in paths:
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f"{path}: missing or unreadable ({e}): its run did not finish")
            bad += 1
            continue
        tally = Counter()
        lines = []
        for r in doc["results"]:
            state = "verified" if r.get("verified") else r.get("status", "?")
            tally[(r["kernel"], state)] += 1
            if not r.get("verified"):
                lines.append(f"  {r['kernel']:13s} {r['key']:48s} {r.get('status')}: {r.get('reason', '')[:120]}")
                if r["kernel"] in ("flash", "flash-decode") and r.get("status") != "skipped":
                    bad += 1
            if r["kernel"] == "flash-sm90" and not (r.get("status") == "skipped" and
                                                    "no sm_90a device code" in r.get("reason", "")):
                bad += 1
                lines.append(f"  {r['kernel']:13s} {r['key']:48s} should have been skipped (no sm_90a code)")
        print(f"{path}: complete={doc.get('complete')} device={doc.get('device', {}).get('name')}")
        for k in sorted({k for k, _ in tally}):
            print(f"  {k:13s} " + ", ".join(f"{s} {n}" for (kk, s), n in sorted(tally.items()) if kk == k))
        print("\n".join(lines))
    print(f"files missing, flash / flash-decode cases run and not verified, flash-sm90 cases not skipped for want of "
          f"sm_90a code: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
