#!/usr/bin/env bash
# Session 55: after call Y (callY.sh) in the same device command, call T's grids (GRIDS, default "gqa") under the hold
# Y's rule leaves as peers.py's default (self where met, else busy), into $OUT/T (results/h200/s54/calls/callT.sh).
set -uo pipefail
hold=busy
if tar xzOf "$OUT/Y.tgz" Y/rule.json 2>/dev/null | grep -q '"verdict": "met'; then hold=self; fi
echo "then_tables: call Y's rule leaves the $hold hold"
HOLD=$hold GRIDS=${GRIDS:-gqa} SPIN_TOO=0 bash results/h200/s54/calls/callT.sh
