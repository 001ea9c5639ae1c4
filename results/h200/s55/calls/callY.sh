#!/usr/bin/env bash
# Session 55, call Y (one Hopper GPU; issue 13 and the peers' timing): the self hold. Its rule is in docs/perf-notes.md,
# "Session 55", written before the call (self_rule.py).
# Why: call L (results/h100/s55/L/, an H100) timed PyTorch's cuDNN at 32 x 8 heads N = 1024 (d = 128 bf16 forward) at
# 0.262-0.265 ms behind the busy hold and 0.227-0.228 behind the spin (the clean flush; one kernel, 222 us under the
# profiler), while flashbench timed the in-binary cuDNN (the same kernel) at 0.253-0.265: the products put the GPU in
# a hotter state than the kernel's own, the spin in a cooler one. peers.py's --self-hold holds with the peer's own reps.
#   fb    flashbench run configs/issue13-h200.json (flash, flash-sm90, the in-binary cudnn; every row verified)
#   busy  peers.py --backends flash,cudnn (the default, --busy-hold)
#   self  peers.py --backends flash,cudnn --self-hold
# two interleaved rounds (the order reversed in the second), nvidia-smi beside; scripts/ratios.py under each hold and
# the rule's figures (rule.txt, rule.json). The round's fb and its peers under the hold the rule leaves are a bf16
# table's round as callT.sh runs them.
set -uo pipefail
export DEADLINE=${DEADLINE:-560}
source scripts/call_step.sh
call_begin $OUT/Y
smi_start
spec=configs/issue13-h200.json
for r in 1 2; do
  order=(fb busy self)
  ((r % 2 == 0)) && order=(self busy fb)
  for v in "${order[@]}"; do
    case $v in
      fb) step fb-$r 90 $fb run $spec -q -o $R/fb-$r.json ;;
      busy) step busy-$r 100 python3 scripts/peers.py $spec --backends flash,cudnn -o $R/busy-$r.json ;;
      self) step self-$r 120 python3 scripts/peers.py $spec --backends flash,cudnn --self-hold -o $R/self-$r.json ;;
    esac
  done
done
smi_stop
for h in busy self; do
  rounds=()
  for r in 1 2; do
    [ -f $R/fb-$r.json ] && [ -f $R/$h-$r.json ] && rounds+=(--round $R/fb-$r.json $R/$h-$r.json)
  done
  [ ${#rounds[@]} -gt 0 ] || { echo "== $h: no whole round"; continue; }
  python3 scripts/ratios.py "${rounds[@]}" --pair flash-sm90:torch-cudnn --pair flash:torch-flash \
    --pair flash-sm90:cudnn --pair cudnn:torch-cudnn > $R/ratios-$h.txt 2>&1
  echo "== $h ($(( ${#rounds[@]} / 3 )) rounds)"; grep -A12 "^summary" $R/ratios-$h.txt | cut -c1-150
done
grep -h "self hold\|launch hold" $R/self-*.log | head -5
python3 results/h200/s55/calls/self_rule.py $R | tee $R/rule.txt
call_end Y
