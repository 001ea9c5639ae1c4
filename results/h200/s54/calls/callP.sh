#!/usr/bin/env bash
# Session 54, call P (one Hopper GPU; issue 13 and the peers' timing): harness parity. Its rule is in
# docs/perf-notes.md, "Session 54", written before the call.
# Why: session 53's call K read the peer's steps at 1965 MHz under peers.py's spin hold (the GPU idles on one spinning
# thread while the host queues the reps) and flashbench's back-to-back steps at 1665-1800 MHz, and call X read
# torch-cudnn under the spin hold at 0.977x flashbench's time for the same cuDNN kernels (the in-binary 9.14: W / U
# showed 9.19 launches 9.14's d = 128 kernels by name, ncu times within 1%). The tables' ratios should come from one
# setting on both sides. flashbench times the GPU warm (time-based warm-up, then the reps back to back), as training
# runs it; peers.py's --busy-hold keeps the GPU at work (bf16 products) until the peer's reps, the same state.
# This call measures which hold times the same kernels as flashbench does, on the papers' bf16 grid (48 rows):
#   fb    flashbench run configs/issue13-h200.json (flash, flash-sm90, the in-binary cudnn; every row verified)
#   spin  peers.py --backends flash,cudnn (the default hold)
#   busy  peers.py --backends flash,cudnn --busy-hold
# two interleaved rounds (the order reversed in the second), nvidia-smi beside. Then scripts/ratios.py under each hold
# and the rule's figures (rule.txt, rule.json): on the twelve d = 128 non-causal rows (forward and backward, N 512-16k:
# the same cuDNN kernels on both sides), per round the median over the rows of torch-cudnn's time / the in-binary
# cudnn's, for each hold.
set -uo pipefail
export DEADLINE=${DEADLINE:-560}
source scripts/call_step.sh
call_begin $OUT/P
smi_start
spec=configs/issue13-h200.json
for r in 1 2; do
  order=(fb spin busy)
  ((r % 2 == 0)) && order=(busy spin fb)
  for v in "${order[@]}"; do
    case $v in
      fb) step fb-$r 90 $fb run $spec -q -o $R/fb-$r.json ;;
      spin) step spin-$r 90 python3 scripts/peers.py $spec --backends flash,cudnn -o $R/spin-$r.json ;;
      busy) step busy-$r 100 python3 scripts/peers.py $spec --backends flash,cudnn --busy-hold -o $R/busy-$r.json ;;
    esac
  done
done
smi_stop
for h in spin busy; do
  rounds=()
  for r in 1 2; do
    [ -f $R/fb-$r.json ] && [ -f $R/$h-$r.json ] && rounds+=(--round $R/fb-$r.json $R/$h-$r.json)
  done
  [ ${#rounds[@]} -gt 0 ] || { echo "== $h: no whole round"; continue; }
  python3 scripts/ratios.py "${rounds[@]}" --pair flash-sm90:torch-cudnn --pair flash:torch-flash \
    --pair flash-sm90:cudnn --pair cudnn:torch-cudnn > $R/ratios-$h.txt 2>&1
  echo "== $h ($(( ${#rounds[@]} / 3 )) rounds)"; grep -A12 "^summary" $R/ratios-$h.txt | cut -c1-150
done
python3 results/h200/s54/calls/parity_rule.py $R | tee $R/rule.txt
call_end P
