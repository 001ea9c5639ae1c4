#!/usr/bin/env bash
# Session 29, call C (one H200; issue 13): main with fastlse128 the d = 128 default (built on the lead's machine for
# sm_90a and carried; commit.txt). The GQA grids beside their PyTorch peers (configs/gqa-h200.json a second round after
# call B's, configs/gqa-d64-h200.json twice, interleaved); the whole GPU test suite; then, last, compute-sanitizer's
# memcheck, racecheck and synccheck on flash-sm90's d = 128 forward (lse-san.json), each step in its own process group.
R=$OUT/C; mkdir -p $R; export DEADLINE=${DEADLINE:-540}
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
step fb-gqa-2 80 $fb run configs/gqa-h200.json -q -o $R/gqa-h200-2.json
step peers-gqa-2 70 python3 scripts/peers.py configs/gqa-h200.json --backends flash,cudnn -o $R/peers-gqa-h200-2.json
for r in 1 2; do
  step fb-gqa64-$r 80 $fb run configs/gqa-d64-h200.json -q -o $R/gqa-d64-h200-$r.json
  step peers-gqa64-$r 70 python3 scripts/peers.py configs/gqa-d64-h200.json --backends flash,cudnn \
    -o $R/peers-gqa-d64-h200-$r.json
done
kill $smi
step gpu-tests-1 150 $src/build-dev/tests/flashbench_gpu_tests -# "[#test_gpu]" --durations yes
step gpu-tests-2 150 $src/build-dev/tests/flashbench_gpu_tests -# "~[#test_gpu]" --durations yes
for k in 1 2; do echo "gpu-tests-$k: $(grep -E 'test cases|All tests|FAILED' $R/gpu-tests-$k.log | tail -3)"; done
python3 scripts/ratios.py $R/gqa-h200-2.json $R/peers-gqa-h200-2.json --pair flash-sm90:torch-cudnn \
  --pair flash:torch-flash > $R/sum-gqa-2.txt 2>&1
python3 scripts/ratios.py --round $R/gqa-d64-h200-1.json $R/peers-gqa-d64-h200-1.json \
  --round $R/gqa-d64-h200-2.json $R/peers-gqa-d64-h200-2.json --pair flash-sm90:torch-cudnn \
  --pair flash:torch-flash > $R/rounds-gqa-d64.txt 2>&1
echo "== gqa round 2"; grep -A6 "^summary" $R/sum-gqa-2.txt
echo "== gqa d64"; grep -A6 "^summary" $R/rounds-gqa-d64.txt
step san 100 bash scripts/sanitize.sh -e $fb -s results/h200/s29/calls/lse-san.json -t "memcheck racecheck synccheck" \
  $R/san.json
pkill -9 -f compute-sanitizer; pkill -9 -f build-dev/flashbench
echo "san: $(tail -4 $R/san.log | tr '\n' ' ')"
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
