#!/usr/bin/env bash
# Session 39, call B (one H200; issue 13): the binaries of commit.txt (subwave64 flash's d = 64 default since call A).
# [flash_tail64] and [flash_tail] as built and under FB_FLASH_BWD=nosubwave, [bwd_gqa]; then flash-sm90's causal
# d = 128 GQA head split: three interleaved rounds of the default, `best` and `rule` (FB_SM90_BWD_SPLIT forced to the
# counts in cs_splits.txt; `rule` only where it differs from `best`) on cs-*.json, flash-sm90 alone in each process;
# torch-cudnn once per spec. What it decides is in docs/perf-notes.md ("Session 39: flash-sm90's causal d = 128 GQA head
# split below the 5% bar"), written before this call.
R=$OUT/B; mkdir -p $R/ab; export DEADLINE=${DEADLINE:-540}
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
step tests-tail 60 $gt "[flash_tail64],[flash_tail]"
step tests-tail-nosubwave 60 env FB_FLASH_BWD=nosubwave $gt "[flash_tail64],[flash_tail]"
step tests-bwd-gqa 120 $gt "[bwd_gqa]"
for t in tail tail-nosubwave bwd-gqa; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 \
  > $R/smi.csv 2>&1 &
smi=$!
for r in 1 2 3; do
  case $r in 1) order="def best rule" ;; 2) order="rule best def" ;; 3) order="best def rule" ;; esac
  grep -v '^#' $c/cs_splits.txt | while read s best rule; do
    for v in $order; do
      case $v in def) w= ;; best) w=$best ;; rule) w=$rule; [ "$rule" = "$best" ] && continue ;; esac
      step $v-$s-$r 40 env FB_SM90_BWD_SPLIT=$w $fb run $c/$s.json --no-ceilings -q -o $R/ab/$v-$s-$r.json
    done
  done
done
for s in $(grep -v '^#' $c/cs_splits.txt | cut -d' ' -f1); do
  step peers-$s 30 python3 scripts/peers.py $c/$s.json --backends cudnn -o $R/ab/peers-$s.json
done
kill $smi 2>/dev/null
# BASE = def, VARIANTS = best rule: default time / forced time, above 1 the forced split is faster
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn def best rule > $R/table.txt 2>&1
cut -c1-150 $R/table.txt
find $R -size 0 -delete
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
