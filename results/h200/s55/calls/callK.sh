#!/usr/bin/env bash
# Session 55, call K (prepared for a later session; one Hopper GPU; rule in docs/perf-notes.md, "Session 55", written
# before it runs): the tables' kernel order. Call O (results/h100/s55/O/, an H100) moved flash-sm90's long backwards by
# up to 13% with its place in the case (after the portable flash's backward its reps climb under the power cap; first,
# right after the previous case's reference, they hold), and torch-cudnn ran second in its process (peers.py times its
# backends in registry order: torch-flash, then torch-cudnn). Here both sides are read in both places, each round:
#   fb-second   configs/gqa-h200.json as committed (flash, then flash-sm90)
#   fb-first    the same with flash-sm90 first
#   peers-second  peers.py --backends flash,cudnn (torch-cudnn after torch-flash)
#   peers-first   peers.py --backends cudnn (torch-cudnn alone)
# two interleaved rounds (the order of the four reversed in the second); then order_rule.py: flash-sm90 / torch-cudnn
# with both sides second and with both first, per row and round.
set -uo pipefail
export DEADLINE=${DEADLINE:-540}
source scripts/call_step.sh
call_begin $OUT/K
spec=configs/gqa-h200.json
python3 - $spec $R/gqa-first.json <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["name"] += "-sm90-first"
s["kernels"] = ["flash-sm90"] + [k for k in s["kernels"] if k != "flash-sm90"]
json.dump(s, open(sys.argv[2], "w"), indent=1)
PY
smi_start
for r in 1 2; do
  order=(fb-second peers-second fb-first peers-first)
  ((r % 2 == 0)) && order=(peers-first fb-first peers-second fb-second)
  for v in "${order[@]}"; do
    case $v in
      fb-second) step $v-$r 90 $fb run $spec -q -o $R/$v-$r.json ;;
      fb-first) step $v-$r 90 $fb run $R/gqa-first.json -q -o $R/$v-$r.json ;;
      peers-second) step $v-$r 70 python3 scripts/peers.py $spec --backends flash,cudnn -o $R/$v-$r.json ;;
      peers-first) step $v-$r 50 python3 scripts/peers.py $spec --backends cudnn -o $R/$v-$r.json ;;
    esac
  done
done
smi_stop
python3 results/h200/s55/calls/order_rule.py $R | tee $R/rule.txt
call_end K
