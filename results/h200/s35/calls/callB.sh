#!/usr/bin/env bash
# Session 35, call B (one H200; issue 13). Carry main's binaries (commit.txt = HEAD): the non-causal GQA/MQA backward's
# head split with the whole group as its cap (flash-sm90 at d = 64 and 128, flash at d = 64; max_head_split() in
# flash_sm90_bwd.cu and flash_bwd.cu) against `cap8` (FB_SM90_BWD_SPLIT=cap8 FB_FLASH_BWD=cap8: at most 8 subsets, the
# choice before); docs/perf-notes.md, "Session 35: the non-causal head split past 8 subsets" (the rule written there
# before the call). Steps: [bwd_gqa] (with [flash_split]) as built and under cap8; three interleaved rounds of the
# default and cap8 on call A's shape (40 q / 1 kv, N = 7100), ten held-out non-causal GQA/MQA shapes and a causal
# control (split-*.json); torch-cudnn and FlashAttention-2 beside every spec once, after the rounds.
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
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -l 1 \
  > $R/smi.csv 2>/dev/null &
smi=$!
c=results/h200/s35/calls
step tests-gqa 90 $gt "[bwd_gqa]"
echo "tests-gqa: $(grep -E 'passed|failed' $R/tests-gqa.log | tail -2 | tr '\n' ' ')"
step tests-gqa-cap8 90 env FB_SM90_BWD_SPLIT=cap8 FB_FLASH_BWD=cap8 $gt "[bwd_gqa]"
echo "tests-gqa-cap8: $(grep -E 'passed|failed' $R/tests-gqa-cap8.log | tail -2 | tr '\n' ' ')"
specs=$(cd $c && ls split-*.json | sed 's/\.json$//')
for r in 1 2 3; do
  for s in $specs; do
    if [ $r = 2 ]; then order="def cap8"; else order="cap8 def"; fi
    for v in $order; do
      if [ $v = cap8 ]; then
        step $v-$s-$r 40 env FB_SM90_BWD_SPLIT=cap8 FB_FLASH_BWD=cap8 $fb run $c/$s.json --no-ceilings -q -o $R/ab/$v-$s-$r.json
      else
        step $v-$s-$r 40 $fb run $c/$s.json --no-ceilings -q -o $R/ab/$v-$s-$r.json
      fi
    done
  done
done
for s in $specs; do
  step peers-$s 40 python3 scripts/peers.py $c/$s.json --backends flash,cudnn -o $R/ab/peers-$s.json
done
kill $smi 2>/dev/null
# ab_table: BASE = cap8, VARIANT = def (cap8 time / default time: above 1, the whole-group cap is faster)
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn cap8 def > $R/table-sm90.txt 2>&1
python3 results/h200/s29/calls/ab_table.py $R/ab flash torch-flash cap8 def > $R/table-flash.txt 2>&1
tail -n +2 $R/table-sm90.txt | cut -c1-160
tail -n +2 $R/table-flash.txt | cut -c1-160
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
