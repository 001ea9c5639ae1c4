#!/usr/bin/env bash
# Session 39, call F (one H200; issue 13), the session's last device time: the binaries of commit.txt. [sm90_big8] as
# built and under FB_SM90_BWD_SPLIT=big8, [sm90_causal8] as built; two interleaved rounds of the default and big8
# (flash-sm90 alone in each process) on five drawn shapes (big8-*.json, seed 3970); torch-cudnn once per spec where
# time is left. A first look, not a rule's call: too few rounds and shapes for one (docs/perf-notes.md, "Prepared for
# session 40").
R=$OUT/F; mkdir -p $R/ab; export DEADLINE=${DEADLINE:-180}
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
step tests-built 40 $gt "[sm90_big8],[sm90_causal8]"
step tests-big8 30 env FB_SM90_BWD_SPLIT=big8 $gt "[sm90_big8]"
for t in built big8; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
specs=$(cd $c && ls big8-*.json | sed 's/\.json$//')
for r in 1 2; do
  case $r in 1) order="def new" ;; 2) order="new def" ;; esac
  for s in $specs; do
    for v in $order; do
      w=; [ $v = new ] && w=big8
      step $v-$s-$r 20 env FB_SM90_BWD_SPLIT=$w $fb run $c/$s.json --no-ceilings -q -o $R/ab/$v-$s-$r.json
    done
  done
done
for s in $specs; do
  step peers-$s 20 python3 scripts/peers.py $c/$s.json --backends cudnn -o $R/ab/peers-$s.json
done
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn def new > $R/table.txt 2>&1
cut -c1-120 $R/table.txt
find $R -size 0 -delete
tar czf $OUT/F.tgz -C $OUT F && rm -rf $R; echo "done t=$((SECONDS-t0))"
