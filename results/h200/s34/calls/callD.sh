#!/usr/bin/env bash
# Session 34, call D (issue 13). Carry main's binaries (commit.txt = HEAD). `shortc` (FB_SM90_BWD128=shortc, a probe):
# the short last query tile (kBwd128Short, the default on non-causal passes since call B) on causal d = 128 passes
# without a head split too, where they take 80 queries (kBwd128Q80Mask), against the default; docs/perf-notes.md,
# "Session 34: the short last query tile of the d = 128 backward" (call D's rule written there before the call).
# Steps: the [bwd128] GPU tests under the word (its [sm90_short] causal rows) and as built, [bwd_gqa] under the word;
# memcheck and racecheck of a causal short-step backward; three interleaved rounds of the default and `shortc` on the
# issue-13 grid's causal rows where it acts (N = 4096 / 8192, bf16 and fp16), four causal shapes no config names and
# a control (causal N = 1024 / 16384: the same kernels both ways); torch-cudnn beside every spec once.
R=$OUT/D; mkdir -p $R/ab; export DEADLINE=${DEADLINE:-560}
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
c=results/h200/s34/calls
step tests-shortc 120 env FB_SM90_BWD128=shortc $gt "[bwd128]"
echo "tests-shortc: $(grep -E 'passed|failed' $R/tests-shortc.log | tail -2 | tr '\n' ' ')"
step tests-default 120 $gt "[bwd128]"
echo "tests-default: $(grep -E 'passed|failed' $R/tests-default.log | tail -2 | tr '\n' ' ')"
step tests-gqa-shortc 60 env FB_SM90_BWD128=shortc $gt "[bwd_gqa]"
echo "tests-gqa-shortc: $(grep -E 'passed|failed' $R/tests-gqa-shortc.log | tail -2 | tr '\n' ' ')"
step san-memcheck 60 env FB_SM90_BWD128=shortc compute-sanitizer --tool memcheck --error-exitcode 9 $fb run \
  $c/shortc-san.json --no-ceilings -q -o $R/san-memcheck.json
step san-racecheck 90 env FB_SM90_BWD128=shortc compute-sanitizer --tool racecheck --racecheck-report hazard \
  --error-exitcode 9 $fb run $c/shortc-san.json --no-ceilings -q -o $R/san-racecheck.json
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" $R/san-*.log
specs="shortc-grid shortc-ctl shortc-b2-h12-n3216 shortc-b1-h16-n5140-fp16 shortc-b1-h8-n6430 shortc-b3-h6-n4112-fp16"
for r in 1 2 3; do
  for s in $specs; do
    if [ $r = 2 ]; then order="shortc def"; else order="def shortc"; fi
    for v in $order; do
      w=; [ $v = shortc ] && w=shortc
      step $v-$s-$r 45 env FB_SM90_BWD128=$w $fb run $c/$s.json --no-ceilings -q -o $R/ab/$v-$s-$r.json
    done
  done
done
for s in $specs; do
  step peers-$s 40 python3 scripts/peers.py $c/$s.json --backends cudnn -o $R/ab/peers-$s.json
done
kill $smi 2>/dev/null
# ab_table: BASE = def, VARIANT = shortc (default time / shortc time: above 1, the short step is faster)
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn def shortc > $R/table.txt 2>&1
tail -n +2 $R/table.txt | cut -c1-160
tar czf $OUT/D.tgz -C $OUT D && rm -rf $R; echo "done t=$((SECONDS-t0))"
