#!/usr/bin/env bash
# Session 40, call C (one H200; issue 13): the binaries of commit.txt (big8 the default). Three interleaved rounds of the
# default and FB_SM90_BWD128=unit1h (one-head units in causal d = 128 head splits, at most 8 subsets; flash-sm90 alone
# in each process) on six drawn shapes of N >= 6000 (u1long-*.json, seed 4100), four of N 2600-4900 (u1mid-*, seed
# 4101; outside the rule) and a control unit1h does not change (x40-b4-h10-kv1-n9300.json); torch-cudnn once per spec.
# The rule is in docs/perf-notes.md ("Session 40: one-head units at long N"), written before the call.
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
cat out/commit.txt > $R/commit.txt 2>/dev/null
c=results/h200/s40/calls
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 \
  > $R/smi.csv 2>&1 &
smi=$!
specs=$(cd $c && ls u1long-*.json u1mid-*.json x40-b4-h10-kv1-n9300.json | sed 's/\.json$//')
for r in 1 2 3; do
  case $r in 1) order="def new" ;; 2) order="new def" ;; 3) order="def new" ;; esac
  for s in $specs; do
    for v in $order; do
      w=; [ $v = new ] && w=unit1h
      step $v-$s-$r 40 env FB_SM90_BWD128=$w $fb run $c/$s.json --no-ceilings -q -o $R/ab/$v-$s-$r.json
    done
  done
done
for s in $specs; do
  step peers-$s 30 python3 scripts/peers.py $c/$s.json --backends cudnn -o $R/ab/peers-$s.json
done
kill $smi 2>/dev/null
# BASE = def, VARIANT = new (unit1h): default time / unit1h time, above 1 the probe is faster
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn def new > $R/table.txt 2>&1
cut -c1-150 $R/table.txt
find $R -size 0 -delete
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
