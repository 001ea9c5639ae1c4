#!/usr/bin/env bash
# Session 33, call F (one H200; issue 13; a measurement). Carry call D's binaries (commit.txt: main 59245f5, the
# portable d = 64 forward's lean prologue and epilogue the default). The d = 64 GQA grid (configs/gqa-d64-h200.json:
# 48 cases, flash, flash-sm90 and the in-binary cudnn, verified) beside its PyTorch peers (torch-flash, torch-cudnn),
# two interleaved rounds; README's GQA d = 64 line was session 32's call B (one round, before the lean forward).
R=$OUT/F; mkdir -p $R; export DEADLINE=${DEADLINE:-420}
set -uo pipefail
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {  # step NAME MAX_SECONDS CMD...: skipped when under MAX/2 is left; the step's process group stopped at MAX
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt $(( max / 2 )) ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; setsid timeout -k 3 $max "$@" < /dev/null > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"
}
tar xJf out/b.txz
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
fb=$src/build-dev/flashbench
cat out/commit.txt > $R/commit.txt 2>/dev/null
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 \
  > $R/smi.csv 2>&1 &
smi=$!
for r in 1 2; do
  step fb-gqa64-$r 90 $fb run configs/gqa-d64-h200.json -q -o $R/gqa-d64-h200-$r.json
  step peers-gqa64-$r 80 python3 scripts/peers.py configs/gqa-d64-h200.json --backends flash,cudnn \
    -o $R/peers-gqa-d64-h200-$r.json
done
kill $smi
pkill -9 -f build-dev/flashbench
args=""
for r in 1 2; do [ -f $R/gqa-d64-h200-$r.json ] && [ -f $R/peers-gqa-d64-h200-$r.json ] && \
  args="$args --round $R/gqa-d64-h200-$r.json $R/peers-gqa-d64-h200-$r.json"; done
python3 scripts/ratios.py $args --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash \
  > $R/rounds-gqa-d64.txt 2>&1
echo "== gqa64"; grep -A8 "^summary" $R/rounds-gqa-d64.txt
tar czf $OUT/F.tgz -C $OUT F && rm -rf $R; echo "done t=$((SECONDS-t0))"
