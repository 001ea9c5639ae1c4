#!/usr/bin/env bash
# Session 39, call A (one H200; issue 13): the binaries of commit.txt. Every GPU test as built (session 38's last
# commits, 6c15fcf..93421c1, never ran on the device); [flash_tail64] under FB_FLASH_BWD=subwave64; compute-sanitizer
# memcheck of a subwave64 split; three interleaved rounds of the default and subwave64 on ten drawn d = 64 shapes
# (sw64-*.json, seed 3900) and two controls (sw64ctl-*); the peers once per spec. The rule is in docs/perf-notes.md
# ("Session 39: subwave64 on the device"), written before this call.
R=$OUT/A; mkdir -p $R/ab; export DEADLINE=${DEADLINE:-540}
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
c=results/h200/s39/calls
step tests-all 200 $gt
step tests-flash-tail64-subwave64 40 env FB_FLASH_BWD=subwave64 $gt "[flash_tail64]"
for t in all flash-tail64-subwave64; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
step san-memcheck 50 env FB_FLASH_BWD=subwave64 compute-sanitizer --tool memcheck --error-exitcode 9 $fb run \
  $c/sw64-b1-h4-kv4-n2100.json --no-ceilings -q -o $R/san-memcheck.json
pkill -9 -f compute-sanitizer; pkill -9 -f build-dev/flashbench; sleep 1
tail -2 $R/san-memcheck.log
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 \
  > $R/smi.csv 2>&1 &
smi=$!
specs=$(cd $c && ls sw64-*.json sw64ctl-*.json | sed 's/\.json$//')
for r in 1 2 3; do
  case $r in 1) order="def new" ;; 2) order="new def" ;; 3) order="def new" ;; esac
  for s in $specs; do
    for v in $order; do
      w=; [ $v = new ] && w=subwave64
      step $v-$s-$r 30 env FB_FLASH_BWD=$w $fb run $c/$s.json --no-ceilings -q -o $R/ab/$v-$s-$r.json
    done
  done
done
for s in $specs; do
  step peers-$s 25 python3 scripts/peers.py $c/$s.json --backends flash -o $R/ab/peers-$s.json
done
kill $smi 2>/dev/null
# ab_table: BASE = def (the default), VARIANT = new (subwave64): default time / subwave64 time, above 1 the probe is faster
python3 results/h200/s29/calls/ab_table.py $R/ab flash torch-flash def new > $R/table.txt 2>&1
tail -n +1 $R/table.txt | cut -c1-170
find $R -size 0 -delete
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
