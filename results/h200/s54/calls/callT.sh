#!/usr/bin/env bash
# Session 54, call T (one H200; issue 13): the README's GQA / MQA and fp16 tables, main's defaults as built
# (commit.txt) against PyTorch's SDPA, as session 47's call M ran them (results/h200/s47/calls/callM.sh: two rounds of
# each grid, each flashbench sweep and its peers in turn), under the launch hold call P's rule leaves as peers.py's
# default (HOLD: spin or busy; docs/perf-notes.md, "Session 54"). The bf16 papers' grid is call P's. GRIDS: which
# grids (gqa, fp16 or both, in that order; default both).
set -uo pipefail
hold=${HOLD:-spin}
case $hold in
  spin) hold_flag=() ;;
  busy) hold_flag=(--busy-hold) ;;
  *) echo "callT.sh: HOLD is spin or busy, not '$hold'" >&2; exit 2 ;;
esac
export DEADLINE=${DEADLINE:-560}
source scripts/call_step.sh
call_begin $OUT/T
echo "peers' hold: $hold; grids: ${GRIDS:-gqa fp16}" | tee $R/settings.txt
smi_start
grids=${GRIDS:-gqa fp16}
declare -A cfg=([gqa]=configs/gqa-h200.json [fp16]=configs/issue13-fp16-h200.json)
for r in 1 2; do
  for g in $grids; do
    [ -n "${cfg[$g]:-}" ] || { echo "callT.sh: no grid '$g'"; continue; }
    step fb-$g-$r 90 $fb run ${cfg[$g]} -q -o $R/fb-$g-$r.json
    step peers-$g-$r 100 python3 scripts/peers.py ${cfg[$g]} --backends flash,cudnn "${hold_flag[@]}" \
      -o $R/peers-$g-$r.json
  done
done
smi_stop
for g in $grids; do
  rounds=()
  for r in 1 2; do
    [ -f $R/fb-$g-$r.json ] && [ -f $R/peers-$g-$r.json ] && rounds+=(--round $R/fb-$g-$r.json $R/peers-$g-$r.json)
  done
  [ ${#rounds[@]} -gt 0 ] || { echo "== $g: no whole round"; continue; }
  python3 scripts/ratios.py "${rounds[@]}" --pair flash-sm90:torch-cudnn --pair flash:torch-flash \
    --pair flash-sm90:cudnn > $R/ratios-$g.txt 2>&1
  echo "== $g ($(( ${#rounds[@]} / 3 )) rounds)"; grep -A12 "^summary" $R/ratios-$g.txt | cut -c1-150
done
call_end T
