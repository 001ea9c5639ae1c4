#!/usr/bin/env bash
# Session 38, call B (one H200; issue 13): the binaries of commit.txt (the tail split on grids of less than one wave,
# both backwards' default; FB_FLASH_BWD=nosubwave and FB_SM90_BWD_QTAIL=nosubwave the choice before). [flash_tail] and
# [sm90_qtail] as built and under nosubwave; compute-sanitizer memcheck of a sub-wave split on both kernels
# (san-subwave.json); three interleaved rounds of the default and nosubwave on the ten drawn shapes (sw-*.json, seed
# 3810), call A's held-out row and two controls (swctl-*); the peers once per spec. The rule is in docs/perf-notes.md
# ("Session 38: the tail split on grids of less than one wave"), written before this call.
R=$OUT/B; mkdir -p $R/ab; export DEADLINE=${DEADLINE:-560}
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
step tests-flash-tail 60 $gt "[flash_tail]"
step tests-flash-tail-nosubwave 60 env FB_FLASH_BWD=nosubwave $gt "[flash_tail]"
step tests-sm90-qtail 60 $gt "[sm90_qtail]"
step tests-sm90-qtail-nosubwave 60 env FB_SM90_BWD_QTAIL=nosubwave $gt "[sm90_qtail]"
for t in flash-tail flash-tail-nosubwave sm90-qtail sm90-qtail-nosubwave; do
  echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
step san-memcheck 60 compute-sanitizer --tool memcheck --error-exitcode 9 $fb run $c/san-subwave.json --no-ceilings \
  -q -o $R/san-memcheck.json
pkill -9 -f compute-sanitizer; pkill -9 -f build-dev/flashbench; sleep 2
tail -2 $R/san-memcheck.log
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 \
  > $R/smi.csv 2>&1 &
smi=$!
specs=$(cd $c && ls sw-*.json swctl-*.json | sed 's/\.json$//')
for r in 1 2 3; do
  case $r in 1) order="def old" ;; 2) order="old def" ;; 3) order="def old" ;; esac
  for s in $specs; do
    for v in $order; do
      w=; [ $v = old ] && w=nosubwave
      step $v-$s-$r 30 env FB_FLASH_BWD=$w FB_SM90_BWD_QTAIL=$w $fb run $c/$s.json --no-ceilings -q \
        -o $R/ab/$v-$s-$r.json
    done
  done
done
for s in $specs; do
  step peers-$s 25 python3 scripts/peers.py $c/$s.json --backends flash,cudnn -o $R/ab/peers-$s.json
done
kill $smi 2>/dev/null
# ab_table: BASE = old (nosubwave), VARIANT = def (nosubwave time / default time: above 1, the default is faster)
python3 results/h200/s29/calls/ab_table.py $R/ab flash torch-flash old def > $R/table-flash.txt 2>&1
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn old def > $R/table-sm90.txt 2>&1
for k in flash sm90; do echo "== $k"; tail -n +2 $R/table-$k.txt | cut -c1-160; done
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
