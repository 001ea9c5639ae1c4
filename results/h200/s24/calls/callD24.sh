#!/usr/bin/env bash
# Session 24 call D (one H200; issue 13): the GQA grids with session 24's defaults (the query tail; the d = 64
# non-causal head-split rule), two rounds beside the PyTorch peers, as session 23's call B (configs/gqa-h200.json:
# flash, flash-sm90, in-binary cudnn; configs/gqa-d64-h200.json; both with torch-flash and torch-cudnn), interleaved
# (F gqa, P gqa, F gqa64, P gqa64, then again); per-round ratios and "behind in every round" by ratios.py --round.
# Binaries built on the lead's machine for sm_90a (out/b.txz; commit in commit.txt).
R=$OUT/D; mkdir -p $R; export DEADLINE=${DEADLINE:-575}
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
for g in gqa gqa64; do
  python3 scripts/ratios.py --round $R/fb-$g-1.json $R/peers-$g-1.json --round $R/fb-$g-2.json $R/peers-$g-2.json \
    --pair flash-sm90:torch-cudnn --pair flash:torch-flash > $R/rounds-$g.txt 2>&1
  echo "== $g"; grep -A8 "^summary" $R/rounds-$g.txt
done
tar czf $OUT/D.tgz -C $OUT D && rm -rf $R; echo "done t=$((SECONDS-t0))"
