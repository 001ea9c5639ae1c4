#!/usr/bin/env bash
# Session 34, call A (issue 13). Carry main's binaries (commit.txt = HEAD). `short`: the flash-sm90 d = 128 non-causal
# backward with a head's last 80-query tile of at most 32 rows run as a step of 32 queries (kBwd128Short; N = 512 takes
# 80 queries with it, 64 before) against FB_SM90_BWD128=noshort (the kernels before); docs/perf-notes.md, "Session 34:
# the short last query tile of the d = 128 backward" (rule written there before the call). Steps: the [bwd128] GPU
# tests (with [sm90_short]) as built and under noshort, [bwd_gqa]; memcheck and racecheck of a short-step backward;
# three interleaved rounds of noshort and the default on the issue-13 grid's rows where it acts (N = 512 / 4096 /
# 8192, bf16 and fp16), five shapes no config names and a control (N = 1024 / 2048: the same kernels both ways);
# torch-cudnn beside every spec once.
R=$OUT/A; mkdir -p $R/ab; export DEADLINE=${DEADLINE:-560}
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
step tests-short 120 $gt "[bwd128]"
echo "tests-short: $(grep -E 'passed|failed' $R/tests-short.log | tail -2 | tr '\n' ' ')"
step tests-noshort 120 env FB_SM90_BWD128=noshort $gt "[bwd128]"
echo "tests-noshort: $(grep -E 'passed|failed' $R/tests-noshort.log | tail -2 | tr '\n' ' ')"
step tests-gqa 60 $gt "[bwd_gqa]"
echo "tests-gqa: $(grep -E 'passed|failed' $R/tests-gqa.log | tail -2 | tr '\n' ' ')"
step san-memcheck 60 compute-sanitizer --tool memcheck --error-exitcode 9 $fb run $c/short-san.json --no-ceilings -q \
  -o $R/san-memcheck.json
step san-racecheck 90 compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 $fb run \
  $c/short-san.json --no-ceilings -q -o $R/san-racecheck.json
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" $R/san-*.log
specs="grid ctl b3-h12-n1450 b2-h16-n2900-fp16 b1-h20-n6100 b5-h8-n737-fp16 b4-h10-n1696"
for r in 1 2 3; do
  for s in $specs; do
    if [ $r = 2 ]; then order="def noshort"; else order="noshort def"; fi
    for v in $order; do
      w=; [ $v = noshort ] && w=noshort
      step $v-$s-$r 45 env FB_SM90_BWD128=$w $fb run $c/short-$s.json --no-ceilings -q -o $R/ab/$v-$s-$r.json
    done
  done
done
for s in $specs; do
  step peers-$s 40 python3 scripts/peers.py $c/short-$s.json --backends cudnn -o $R/ab/peers-$s.json
done
kill $smi 2>/dev/null
# ab_table: BASE = noshort, VARIANT = def (noshort time / default time: above 1, the short step is faster)
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn noshort def > $R/table.txt 2>&1
tail -n +2 $R/table.txt | cut -c1-160
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
