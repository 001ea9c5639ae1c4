#!/usr/bin/env bash
# Session 34, call C (one H200; issue 13): main's defaults after call B (the d = 128 backward's short last query tile,
# kBwd128Short, the default on non-causal passes without a head split). The whole GPU suite as shipped (two halves, as
# session 33's call C), [bwd128] under FB_SM90_BWD128=noshort; then the issue-13 grids (configs/issue13-h200.json,
# issue13-fp16-h200.json: flash, flash-sm90 and the in-binary cudnn, every row verified) and their PyTorch peers
# (torch-flash, torch-cudnn) interleaved in two rounds, README's tables since (session 33's call D's loop); last, if
# time is left, three rounds of the default and noshort on the grid's rows where the short step acts (short-grid.json).
# The GPU's clock, power and throttle reasons each second. Binaries built on the lead's machine for sm_90a.
R=$OUT/C; mkdir -p $R/ab; export DEADLINE=${DEADLINE:-570}
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
gt=$src/build-dev/tests/flashbench_gpu_tests
cat out/commit.txt > $R/commit.txt 2>/dev/null
step gpu-tests-1 130 $gt -# "[#test_gpu]" --durations yes
step gpu-tests-2 150 $gt -# "~[#test_gpu]" --durations yes
step tests-noshort 40 env FB_SM90_BWD128=noshort $gt "[bwd128]"
for k in 1 2; do
  echo "gpu-tests-$k: $(grep -E 'test cases|All tests|FAILED' $R/gpu-tests-$k.log | tail -2 | cut -c1-200 | tr '\n' ' ')"
done
echo "tests-noshort: $(grep -E 'passed|failed' $R/tests-noshort.log | tail -2 | tr '\n' ' ')"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 \
  > $R/smi.csv 2>&1 &
smi=$!
for r in 1 2; do
  step fb-bf16-$r 115 $fb run configs/issue13-h200.json -q -o $R/fb-bf16-$r.json
  step peers-bf16-$r 90 python3 scripts/peers.py configs/issue13-h200.json --backends flash,cudnn -o $R/peers-bf16-$r.json
  step fb-fp16-$r 115 $fb run configs/issue13-fp16-h200.json -q -o $R/fb-fp16-$r.json
  step peers-fp16-$r 90 python3 scripts/peers.py configs/issue13-fp16-h200.json --backends flash,cudnn \
    -o $R/peers-fp16-$r.json
done
c=results/h200/s34/calls
for r in 1 2 3; do
  if [ $r = 2 ]; then order="noshort def"; else order="def noshort"; fi
  for v in $order; do
    w=; [ $v = noshort ] && w=noshort
    step $v-short-grid-$r 14 env FB_SM90_BWD128=$w $fb run $c/short-grid.json --no-ceilings -q -o $R/ab/$v-short-grid-$r.json
  done
done
kill $smi
pkill -9 -f build-dev/flashbench
for g in bf16 fp16; do
  python3 scripts/ratios.py --round $R/fb-$g-1.json $R/peers-$g-1.json --round $R/fb-$g-2.json $R/peers-$g-2.json \
    --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash > $R/rounds-$g.txt 2>&1
  echo "== $g"; grep -A10 "^summary" $R/rounds-$g.txt
done
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn noshort def > $R/ab-table.txt 2>&1
tail -n +2 $R/ab-table.txt | cut -c1-120
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
