#!/usr/bin/env bash
# Session 35, call A (one H200; issue 13): main's binaries as shipped at the end of session 34 (commit.txt; the d = 128
# backward's short last query tile the default on non-causal and causal passes without a head split). A measurement,
# no kernel or default changed: the d = 128 GQA/MQA grid (configs/gqa-h200.json; last beside the peers in session 29)
# and shapes no config names (unnamed35-mha.json, unnamed35-gqa.json), each beside torch-cudnn and FlashAttention-2,
# interleaved in two rounds; every flashbench row verified. The GPU's clock, power and throttle reasons each second.
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-570}
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
c=results/h200/s35/calls
for r in 1 2; do
  step fb-gqa128-$r 100 $fb run configs/gqa-h200.json -q -o $R/fb-gqa128-$r.json
  step peers-gqa128-$r 80 python3 scripts/peers.py configs/gqa-h200.json --backends flash,cudnn -o $R/peers-gqa128-$r.json
  step fb-mha-$r 110 $fb run $c/unnamed35-mha.json -q -o $R/fb-mha-$r.json
  step peers-mha-$r 80 python3 scripts/peers.py $c/unnamed35-mha.json --backends flash,cudnn -o $R/peers-mha-$r.json
  step fb-gqa-$r 70 $fb run $c/unnamed35-gqa.json -q -o $R/fb-gqa-$r.json
  step peers-gqa-$r 60 python3 scripts/peers.py $c/unnamed35-gqa.json --backends flash,cudnn -o $R/peers-gqa-$r.json
done
kill $smi
pkill -9 -f build-dev/flashbench
for g in gqa128 mha gqa; do
  python3 scripts/ratios.py --round $R/fb-$g-1.json $R/peers-$g-1.json --round $R/fb-$g-2.json $R/peers-$g-2.json \
    --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash > $R/rounds-$g.txt 2>&1
  echo "== $g"; grep -A10 "^summary" $R/rounds-$g.txt | cut -c1-230
done
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
