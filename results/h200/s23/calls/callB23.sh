#!/usr/bin/env bash
# Session 23 call B (one H200; issue 13, a measurement: no kernel changed). Main's binaries built here for sm_90a,
# carried (out/b.txz, out/commit.txt): call A's protocol on the GQA / MQA grids (configs/gqa-h200.json, d = 128, and
# configs/gqa-d64-h200.json: 24 cases each, flash / flash-sm90 / cudnn, verified) and their PyTorch peers
# (scripts/peers.py: torch-flash, torch-cudnn), interleaved in two rounds (F d128, P d128, F d64, P d64, then again).
R=$OUT/B; mkdir -p $R; export DEADLINE=${DEADLINE:-575}
set -uo pipefail
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {  # step NAME MAX_SECONDS CMD...: skipped when under MAX/2 is left
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt $(( max / 2 )) ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; timeout -k 3 $max "$@" > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"
}
tar xJf out/b.txz
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
fb=$src/build-dev/flashbench
cat out/commit.txt > $R/commit.txt 2>/dev/null
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 > $R/smi.csv 2>&1 &
smi=$!
for r in 1 2; do
  step fb-gqa-$r 110 $fb run configs/gqa-h200.json --kernels flash,flash-sm90,cudnn -q -o $R/fb-gqa-$r.json
  step peers-gqa-$r 90 python3 scripts/peers.py configs/gqa-h200.json --backends flash,cudnn -o $R/peers-gqa-$r.json
  step fb-gqa64-$r 110 $fb run configs/gqa-d64-h200.json -q -o $R/fb-gqa64-$r.json
  step peers-gqa64-$r 90 python3 scripts/peers.py configs/gqa-d64-h200.json --backends flash,cudnn -o $R/peers-gqa64-$r.json
done
kill $smi
for r in 1 2; do for g in gqa gqa64; do
  python3 scripts/ratios.py $R/fb-$g-$r.json $R/peers-$g-$r.json --pair flash-sm90:torch-cudnn --pair flash:torch-flash \
    > $R/sum-$g-$r.txt 2>&1; echo "== round $r $g"; grep -A6 "^summary" $R/sum-$g-$r.txt | tail -n 5
done; done
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
