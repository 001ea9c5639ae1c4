#!/usr/bin/env bash
# Session 33, call A (one H200; issue 13: shapes that no config names; a measurement, no kernel changed). Binaries of
# main (commit.txt) built on the lead's machine for sm_90a and carried. unnamed33-mha.json (batch 2, model dim 2304:
# 36 heads at d = 64, 18 at d = 128, N 1450 / 3100 / 6300, bf16 / fp16, causal or not, fwd / bwd: 48 cases) and
# unnamed33-gqa.json (48 q heads on 8 or 2 kv heads, d = 64 and 128, batch 1, N 2700 / 5500, bf16: 32 cases), flash,
# flash-sm90 and the in-binary cudnn, every row verified, beside the PyTorch peers (torch-cudnn, torch-flash), two
# interleaved rounds (session 25's call B protocol); the GPU's clock, power and throttle reasons logged each second.
# What it is for: where the kernels stand after session 32's defaults on shapes chosen after them.
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-560}
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
c=results/h200/s33/calls
for r in 1 2; do
  step fb-mha-$r 130 $fb run $c/unnamed33-mha.json -q -o $R/fb-mha-$r.json
  step peers-mha-$r 100 python3 scripts/peers.py $c/unnamed33-mha.json --backends flash,cudnn -o $R/peers-mha-$r.json
  step fb-gqa-$r 90 $fb run $c/unnamed33-gqa.json -q -o $R/fb-gqa-$r.json
  step peers-gqa-$r 70 python3 scripts/peers.py $c/unnamed33-gqa.json --backends flash,cudnn -o $R/peers-gqa-$r.json
done
kill $smi
pkill -9 -f build-dev/flashbench
for g in mha gqa; do
  python3 scripts/ratios.py --round $R/fb-$g-1.json $R/peers-$g-1.json --round $R/fb-$g-2.json $R/peers-$g-2.json \
    --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash > $R/rounds-$g.txt 2>&1
  echo "== $g"; grep -A10 "^summary" $R/rounds-$g.txt
done
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
