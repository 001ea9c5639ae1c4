#!/usr/bin/env bash
# Session 38, call C (one H200; issue 13): the binaries of commit.txt (flash's tail split on grids of less than one wave
# the default since call B; flash-sm90's the probe FB_SM90_BWD_QTAIL=subwave, where the model saves 5%). Every GPU
# test as built, [sm90_qtail] under subwave; then flash-sm90 alone, three interleaved rounds of the default and subwave
# on eight fresh shapes (c38-*.json, seed 3820), call B's six rows the probe splits and three controls; torch-cudnn once
# per spec. The rule is in docs/perf-notes.md ("Session 38: the tail split on grids of less than one wave"), written
# before this call.
R=$OUT/C; mkdir -p $R/ab; export DEADLINE=${DEADLINE:-540}
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
c=results/h200/s38/calls
step tests-all 200 $gt
step tests-sm90-qtail-subwave 60 env FB_SM90_BWD_QTAIL=subwave $gt "[sm90_qtail]"
for t in all sm90-qtail-subwave; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 \
  > $R/smi.csv 2>&1 &
smi=$!
specs="$(cd $c && ls c38-*.json | sed 's/\.json$//') sw-b2-h8-kv4-n1400 sw-b1-h6-kv3-n3500 sw-b1-h6-kv3-n4200
  sw-b1-h4-kv2-n4500 sw-b1-h8-kv2-n6800 sw-b1-h4-kv2-n7000 sw-b1-h64-kv4-n3700 sw-b1-h20-kv2-n7800
  swctl-b1-h32-kv8-n16384"
for r in 1 2 3; do
  case $r in 1) order="def subwave" ;; 2) order="subwave def" ;; 3) order="def subwave" ;; esac
  for s in $specs; do
    for v in $order; do
      w=; [ $v != def ] && w=$v
      step $v-$s-$r 30 env FB_SM90_BWD_QTAIL=$w $fb run $c/$s.json --kernels flash-sm90 --no-ceilings -q \
        -o $R/ab/$v-$s-$r.json
    done
  done
done
for s in $specs; do
  step peers-$s 25 python3 scripts/peers.py $c/$s.json --backends cudnn -o $R/ab/peers-$s.json
done
kill $smi 2>/dev/null
# ab_table: BASE = def, VARIANT = subwave (default time / subwave time: above 1, the probe is faster)
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn def subwave > $R/table.txt 2>&1
tail -n +2 $R/table.txt | cut -c1-160
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
