#!/usr/bin/env bash
# Session 54, call T (one H200; issue 13): the README's bf16, GQA / MQA and fp16 tables, main's defaults as built
# (commit.txt) against PyTorch's SDPA, as session 47's call M ran them (results/h200/s47/calls/callM.sh: two rounds of
# each grid, each flashbench sweep and its peers in turn), under the launch hold call P's rule leaves as peers.py's
# default (HOLD: spin, busy or self; docs/perf-notes.md, "Session 54"). GRIDS: which grids, in that order (bf16: the
# papers' grid, configs/issue13-h200.json; gqa; fp16; default all three). SPIN_TOO=1: the bf16 grid's peers also under
# the other hold (--spin-hold), each round, for call P's calibration on this card (parity_rule.py; no rule here).
# PLACES (session 56): committed (the default, as sessions 54-55 ran it: each round with the specs' kernel order and
# peers.py's torch-flash then torch-cudnn) or both (session 56's call K rule: round 1 so, round 2 with flash-sm90
# first in each spec and torch-cudnn first in peers.py, so that each pair stands in the same place in both rounds).
set -uo pipefail
hold=${HOLD:-busy}
places=${PLACES:-committed}
case $places in committed | both) ;; *) echo "callT.sh: PLACES is committed or both, not '$places'" >&2; exit 2 ;; esac
case $hold in
  spin) hold_flag=() ;;
  busy) hold_flag=(--busy-hold) ;;
  self) hold_flag=(--self-hold) ;;  # session 55's call Y
  *) echo "callT.sh: HOLD is spin, busy or self, not '$hold'" >&2; exit 2 ;;
esac
export DEADLINE=${DEADLINE:-560}
source scripts/call_step.sh
call_begin $OUT/T
echo "peers' hold: $hold; grids: ${GRIDS:-bf16 gqa fp16}; spin too: ${SPIN_TOO:-0}; places: $places" |
  tee $R/settings.txt
smi_start
grids=${GRIDS:-bf16 gqa fp16}
declare -A cfg=([bf16]=configs/issue13-h200.json [gqa]=configs/gqa-h200.json [fp16]=configs/issue13-fp16-h200.json)
for r in 1 2; do
  for g in $grids; do
    [ -n "${cfg[$g]:-}" ] || { echo "callT.sh: no grid '$g'"; continue; }
    spec=${cfg[$g]} backends=flash,cudnn
    if [ "$places" = both ] && [ $r = 2 ]; then  # flash-sm90 and torch-cudnn first in their cases
      spec=$R/$g-sm90-first.json backends=cudnn,flash
      python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); s["name"] += "-sm90-first"
s["kernels"] = ["flash-sm90"] + [k for k in s["kernels"] if k != "flash-sm90"]; json.dump(s, open(sys.argv[2], "w"))' \
        ${cfg[$g]} $spec
    fi
    step fb-$g-$r 90 $fb run $spec -q -o $R/fb-$g-$r.json
    step peers-$g-$r 100 python3 scripts/peers.py $spec --backends $backends "${hold_flag[@]}" \
      -o $R/peers-$g-$r.json
    if [ "$g" = bf16 ] && [ "${SPIN_TOO:-0}" = 1 ]; then
      step spin-bf16-$r 90 python3 scripts/peers.py ${cfg[$g]} --backends flash,cudnn --spin-hold \
        -o $R/spin-bf16-$r.json
    fi
  done
done
smi_stop
for g in $grids; do
  rounds=()
  for r in 1 2; do
    [ -f $R/fb-$g-$r.json ] && [ -f $R/peers-$g-$r.json ] && rounds+=(--round $R/fb-$g-$r.json $R/peers-$g-$r.json)
  done
  [ ${#rounds[@]} -gt 0 ] || { echo "== $g: no whole round"; continue; }
  inbin=(--pair flash-sm90:cudnn)
  [ "$g" = gqa ] && inbin=()  # configs/gqa-h200.json runs no in-binary cudnn
  python3 scripts/ratios.py "${rounds[@]}" --pair flash-sm90:torch-cudnn --pair flash:torch-flash "${inbin[@]}" \
    > $R/ratios-$g.txt 2>&1
  echo "== $g ($(( ${#rounds[@]} / 3 )) rounds)"; grep -A12 "^summary" $R/ratios-$g.txt | cut -c1-150
done
if [ "${SPIN_TOO:-0}" = 1 ] && [ "$hold" = busy ] && [[ " $grids " == *" bf16 "* ]]; then  # parity_rule's names
  mkdir -p $R/parity
  for r in 1 2; do
    ln -sf ../fb-bf16-$r.json $R/parity/fb-$r.json; ln -sf ../spin-bf16-$r.json $R/parity/spin-$r.json
    ln -sf ../peers-bf16-$r.json $R/parity/busy-$r.json
  done
  python3 results/h200/s54/calls/parity_rule.py $R/parity | tail -3 | tee $R/parity.txt
  cp $R/parity/rule.json $R/parity.json 2>/dev/null; rm -rf $R/parity
fi
call_end T
