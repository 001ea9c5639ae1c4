#!/usr/bin/env bash
# Session 24 call C (one H200; issue 13): the final sweep of the issue-13 grids with session 24's defaults (the query
# tail of the non-causal d = 128 backward; the d = 64 non-causal head-split rule, which changes no grid row), for the
# README's tables. Binaries built on the lead's machine for sm_90a (out/b.txz; commit in commit.txt).
#  1. GPU tests [bwd_gqa] (call B's one failure: the workspace proxy for "no head split" that the query tail's own
#     accumulators broke; now the head split is asked for), [sm90_qtail].
#  2. configs/issue13-h200.json and issue13-fp16-h200.json (48 cases each: flash, flash-sm90, in-binary cudnn,
#     verified) and their PyTorch peers (torch-flash, torch-cudnn), interleaved in two rounds (F bf16, P bf16, F fp16,
#     P fp16, then again); per-round ratios and "behind in every round" by scripts/ratios.py --round.
R=$OUT/C; mkdir -p $R; export DEADLINE=${DEADLINE:-575}
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
step tests 90 $src/build-dev/tests/flashbench_gpu_tests "[bwd_gqa],[sm90_qtail]"
tail -2 $R/tests.log
for r in 1 2; do
  step fb-bf16-$r 110 $fb run configs/issue13-h200.json -q -o $R/fb-bf16-$r.json
  step peers-bf16-$r 90 python3 scripts/peers.py configs/issue13-h200.json --backends flash,cudnn -o $R/peers-bf16-$r.json
  step fb-fp16-$r 110 $fb run configs/issue13-fp16-h200.json -q -o $R/fb-fp16-$r.json
  step peers-fp16-$r 90 python3 scripts/peers.py configs/issue13-fp16-h200.json --backends flash,cudnn -o $R/peers-fp16-$r.json
done
kill $smi
for g in bf16 fp16; do
  python3 scripts/ratios.py --round $R/fb-$g-1.json $R/peers-$g-1.json --round $R/fb-$g-2.json $R/peers-$g-2.json \
    --pair flash-sm90:torch-cudnn --pair flash:torch-flash > $R/rounds-$g.txt 2>&1
  echo "== $g"; grep -A8 "^summary" $R/rounds-$g.txt
done
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
