#!/usr/bin/env bash
# Session 34, call B (issue 13). Carry main's binaries (commit.txt = HEAD). `short` (FB_SM90_BWD128=short, a probe since
# call A): the flash-sm90 d = 128 non-causal backward with a head's last 80-query tile of at most 32 rows run as a step
# of 32 queries after the block's whole steps (kBwd128Short; its second form: call A's interleaved the short steps with
# the whole ones and spilled 8 bytes at bf16), against the default; docs/perf-notes.md, "Session 34: the short last
# query tile of the d = 128 backward" (call B's rule written there before the call). Steps: the [bwd128] GPU tests
# (with [sm90_short]) under the word and as built, [bwd_gqa] under the word; memcheck and racecheck of a short-step
# backward; three interleaved rounds of the default and `short` on the issue-13 grid's rows where it acts (N = 512 /
# 4096 / 8192, bf16 and fp16), five shapes no config names (short2-*.json, not call A's) and the control (N = 1024 /
# 2048: the same kernels both ways); torch-cudnn beside every spec once.
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
c=results/h200/s34/calls
step tests-short 120 env FB_SM90_BWD128=short $gt "[bwd128]"
echo "tests-short: $(grep -E 'passed|failed' $R/tests-short.log | tail -2 | tr '\n' ' ')"
step tests-default 120 $gt "[bwd128]"
echo "tests-default: $(grep -E 'passed|failed' $R/tests-default.log | tail -2 | tr '\n' ' ')"
step tests-gqa-short 60 env FB_SM90_BWD128=short $gt "[bwd_gqa]"
echo "tests-gqa-short: $(grep -E 'passed|failed' $R/tests-gqa-short.log | tail -2 | tr '\n' ' ')"
step san-memcheck 60 env FB_SM90_BWD128=short compute-sanitizer --tool memcheck --error-exitcode 9 $fb run \
  $c/short-san.json --no-ceilings -q -o $R/san-memcheck.json
step san-racecheck 90 env FB_SM90_BWD128=short compute-sanitizer --tool racecheck --racecheck-report hazard \
  --error-exitcode 9 $fb run $c/short-san.json --no-ceilings -q -o $R/san-racecheck.json
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" $R/san-*.log
specs="short-grid short-ctl short2-b6-h10-n976 short2-b2-h14-n3230-fp16 short2-b1-h28-n5125 short2-b3-h20-n2420 \
short2-b8-h12-n592-fp16"
for r in 1 2 3; do
  for s in $specs; do
    if [ $r = 2 ]; then order="short def"; else order="def short"; fi
    for v in $order; do
      w=; [ $v = short ] && w=short
      step $v-$s-$r 45 env FB_SM90_BWD128=$w $fb run $c/$s.json --no-ceilings -q -o $R/ab/$v-$s-$r.json
    done
  done
done
for s in $specs; do
  step peers-$s 40 python3 scripts/peers.py $c/$s.json --backends cudnn -o $R/ab/peers-$s.json
done
kill $smi 2>/dev/null
# ab_table: BASE = def, VARIANT = short (default time / short time: above 1, the short step is faster)
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn def short > $R/table.txt 2>&1
tail -n +2 $R/table.txt | cut -c1-160
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
