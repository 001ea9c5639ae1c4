#!/usr/bin/env bash
# Session 35, call C (one H200; issue 13). Carry main's binaries (commit.txt = HEAD): the flash-sm90 non-causal head
# split as built (at most 8 subsets, every virtual plane in one group) against the probes FB_SM90_BWD_SPLIT=pg (virtual
# planes in L2 plane groups) and wholepg (that and the whole group as the model's cap); docs/perf-notes.md, "Session 35:
# the non-causal head split past 8 subsets" (call C's rule written there before the call). Steps: [bwd_gqa] as built
# and under each word; three interleaved rounds of def, pg and wholepg on call B's non-causal shapes (split-*.json, the
# flash-sm90 rows), ten fresh shapes (pg-*.json) and call B's causal control; torch-cudnn beside every spec once.
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
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -l 1 \
  > $R/smi.csv 2>/dev/null &
smi=$!
c=results/h200/s35/calls
step tests-gqa 60 $gt "[bwd_gqa]"
for w in pg wholepg; do step tests-gqa-$w 60 env FB_SM90_BWD_SPLIT=$w $gt "[bwd_gqa]"; done
for t in gqa gqa-pg gqa-wholepg; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
specs=$(cd $c && ls split-*.json pg-*.json | sed 's/\.json$//')
for r in 1 2 3; do
  case $r in 1) order="def pg wholepg" ;; 2) order="wholepg def pg" ;; 3) order="pg wholepg def" ;; esac
  for s in $specs; do
    for v in $order; do
      w=; [ $v != def ] && w=$v
      step $v-$s-$r 30 env FB_SM90_BWD_SPLIT=$w $fb run $c/$s.json --kernels flash-sm90 --no-ceilings -q \
        -o $R/ab/$v-$s-$r.json
    done
  done
done
for s in $specs; do
  step peers-$s 30 python3 scripts/peers.py $c/$s.json --backends cudnn -o $R/ab/peers-$s.json
done
kill $smi 2>/dev/null
# ab_table: BASE = def, VARIANTS = pg wholepg (default time / variant time: above 1, the variant is faster)
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn def pg wholepg > $R/table.txt 2>&1
tail -n +2 $R/table.txt | cut -c1-170
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
