#!/usr/bin/env bash
# Session 33, call D (one H200; issue 13): the issue-13 grids with main's defaults after session 33's call B (the
# portable d = 64 forward's lean prologue and epilogue; README's tables were session 32's call B):
# configs/issue13-h200.json and issue13-fp16-h200.json (48 cases each: flash, flash-sm90, the in-binary cudnn;
# verified) and their PyTorch peers (torch-flash, torch-cudnn), interleaved in two rounds (F bf16, P bf16, F fp16,
# P fp16, then again); the GPU's clock, power and throttle reasons logged each second. Binaries built on the lead's
# machine for sm_90a (out/b.txz; commit in commit.txt). Session 32's callB.sh without the d = 64 GQA grid; first a
# racecheck of unverified lean d = 64 launches (san-lean64-race.json; call C's verified one ran past its limit).
R=$OUT/D; mkdir -p $R; export DEADLINE=${DEADLINE:-560}
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
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
step san-racecheck 60 $san --tool racecheck --error-exitcode 9 $fb run results/h200/s33/calls/san-lean64-race.json \
  --warmup-time 0 --no-ceilings -q -o $R/san-racecheck.json
echo "racecheck: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $R/san-racecheck.log | tail -1)"
pkill -9 -f compute-sanitizer; pkill -9 -f build-dev/flashbench
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
kill $smi
pkill -9 -f build-dev/flashbench
for g in bf16 fp16; do
  python3 scripts/ratios.py --round $R/fb-$g-1.json $R/peers-$g-1.json --round $R/fb-$g-2.json $R/peers-$g-2.json \
    --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash > $R/rounds-$g.txt 2>&1
  echo "== $g"; grep -A10 "^summary" $R/rounds-$g.txt
done
tar czf $OUT/D.tgz -C $OUT D && rm -rf $R; echo "done t=$((SECONDS-t0))"
