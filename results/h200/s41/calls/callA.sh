#!/usr/bin/env bash
# Session 41, call A (one H200; issue 13), prepared in session 40: the binaries of commit.txt. Every GPU test as built;
# [sm90_long64] under FB_SM90_BWD_SPLIT=long64; three interleaved rounds of the default and long64 (flash-sm90 alone in
# each process) on eight drawn shapes (l64r-*.json, seed 4300) and three controls (l64ctl-*); torch-cudnn once per spec.
# The rule is in docs/perf-notes.md ("Session 40: big8 on the device, ...", "Prepared for session 41"), written in
# session 40.
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
c=results/h200/s41/calls
step tests-all 200 $gt
step tests-long64 40 env FB_SM90_BWD_SPLIT=long64 $gt "[sm90_long64]"
for t in all long64; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 \
  > $R/smi.csv 2>&1 &
smi=$!
specs=$(cd $c && ls l64r-*.json l64ctl-*.json | sed 's/\.json$//')
for r in 1 2 3; do
  case $r in 1) order="def new" ;; 2) order="new def" ;; 3) order="def new" ;; esac
  for s in $specs; do
    for v in $order; do
      w=; [ $v = new ] && w=long64
      step $v-$s-$r 40 env FB_SM90_BWD_SPLIT=$w $fb run $c/$s.json --no-ceilings -q -o $R/ab/$v-$s-$r.json
    done
  done
done
for s in $specs; do
  step peers-$s 30 python3 scripts/peers.py $c/$s.json --backends cudnn -o $R/ab/peers-$s.json
done
kill $smi 2>/dev/null
# BASE = def, VARIANT = new (long64): default time / long64 time, above 1 the probe is faster
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn def new > $R/table.txt 2>&1
cut -c1-150 $R/table.txt
# The rule, written in session 40 (docs/perf-notes.md): long64 becomes the default if the rows' geomean is >= 1.03, none
# is under 0.98, the controls read 0.98-1.02, and every row verifies (scripts/ab_rule.py judges it: exit 0 met)
python3 scripts/ab_rule.py $R/ab --spec-dir $c --kernel flash-sm90 --base def --variant new --rounds 3 \
  --rows 'l64r-*' --controls 'l64ctl-*' --min-geomean 1.03 --min-row 0.98 --control-band 0.98:1.02 \
  --json $R/rule.json > $R/rule.txt 2>&1; echo "rule rc=$?"; tail -8 $R/rule.txt | cut -c1-150
find $R -size 0 -delete
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
