#!/usr/bin/env bash
# Session 37, call A (one H200; issue 13): the binaries of commit.txt. GPU tests [sm90_pgroup], [bwd64], [bwd_gqa] as
# built (session 36's last commit's refactor had not run on the device) and [bwd_gqa] under FB_SM90_BWD64=splitpg;
# then three interleaved rounds of the default and splitpg (the causal d = 64 head split's virtual planes in bounded
# plane groups, split_causal_plane_group()) on eight fresh shapes (sp-*, seed 3701), the GQA d = 64 grid's six causal
# MQA rows (gs-*) and two controls (ctl-*); flash-sm90 only, every row verified; torch-cudnn once per spec after.
# The rule is docs/perf-notes.md's "Session 37" section, written before this call.
R=$OUT/A; mkdir -p $R/ab; export DEADLINE=${DEADLINE:-570}
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
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -l 1 \
  > $R/smi.csv 2>/dev/null &
smi=$!
c=results/h200/s37/calls
step tests-bwd64 110 $gt "[bwd64]"
step tests-gqa 70 $gt "[bwd_gqa]"
step tests-gqa-splitpg 70 env FB_SM90_BWD64=splitpg $gt "[bwd_gqa]"
for t in bwd64 gqa gqa-splitpg; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
specs=$(cd $c && ls sp-*.json gs-*.json ctl-*.json | sed 's/\.json$//')
for r in 1 2 3; do
  case $r in 1) order="def splitpg" ;; 2) order="splitpg def" ;; 3) order="def splitpg" ;; esac
  for s in $specs; do
    for v in $order; do
      w=; [ $v != def ] && w=$v
      step $v-$s-$r 30 env FB_SM90_BWD64=$w $fb run $c/$s.json --kernels flash-sm90 --no-ceilings -q \
        -o $R/ab/$v-$s-$r.json
    done
  done
done
for s in $specs; do
  step peers-$s 20 python3 scripts/peers.py $c/$s.json --backends cudnn -o $R/ab/peers-$s.json
done
kill $smi 2>/dev/null
# ab_table: BASE = def, VARIANT = splitpg (default time / splitpg time: above 1, splitpg is faster)
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn def splitpg > $R/table.txt 2>&1
tail -n +2 $R/table.txt | cut -c1-150
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
