#!/usr/bin/env bash
# Session 31, call B (issue 13). Carry main's binaries (commit.txt = HEAD). `kvtail` (FB_FLASH_FWD_PROBE; kFwdKvTail,
# kv_tail_splits in common/tile_order.h): d = 128's non-causal launches with a partial last wave of at most one block
# an SM (pdl_tail_plan) run each of its work tiles as pieces over its K/V tiles, as many as fill the device's block
# slots at two blocks an SM (each at least two K/V tiles), as kFwdPdlTail's dependent launch; each piece writes its
# fp32 partial to the workspace and the last of a tile's pieces merges them. Call A (`s31/callA/`, ncu): the solo
# tail block of the default (kFwdPdlTail) takes 1.3x a paired block's time, and a small tail leaves most SMs idle.
# Steps: the [flashfwd] GPU tests under the word; memcheck of a split run; FA2 beside ten fresh shapes once; three
# interleaved rounds of the default and kvtail on the ten (kv-*.json: 1-4 whole waves, tails of 24-120 blocks,
# 2-11 pieces a tile, 16-94 K/V tiles a block, GQA, fp16) and a control (session 29's solo-grid.json: no tail split;
# two d = 64 shapes: the word runs d = 64's default); the whole GPU suite under the word. Rule (docs/perf-notes.md,
# "Session 31: kvtail", written before the call): the ten rows' geomeans (default / kvtail) over the rounds have a
# geomean >= 1.005 and none below 0.985, the control's geomean within 0.99-1.01, the tests, the suite and memcheck
# clean under the word: then kvtail is the default on d = 128's non-causal launches; else it is removed.
R=$OUT/B; mkdir -p $R/new $R/ctl; export DEADLINE=${DEADLINE:-300}
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
c=results/h200/s31/calls
step tests-kvtail 90 env FB_FLASH_FWD_PROBE=kvtail $gt "[flashfwd]"
echo "tests: $(grep -E 'passed|failed' $R/tests-kvtail.log | tail -2 | tr '\n' ' ')"
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
step san-memcheck 40 env FB_FLASH_FWD_PROBE=kvtail $san --tool memcheck --error-exitcode 9 $fb run \
  $c/kv-b1-h16-n2200.json --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/san-memcheck.json
echo "memcheck: $(grep -E 'ERROR SUMMARY' $R/san-memcheck.log | tail -1)"
pkill -9 -f compute-sanitizer; pkill -9 -f build-dev/flashbench
new="b1-h16-n2200 b2-h10-n1800 b4-h8-n1100 b2-h24-n1500 b6-h7-n1000 b3-h12-n2200 b1-h24-n6000 b5-h5-n1750"
new="$new b1-h32-kv8-n1200 b2-h7-n2600-fp16"
ctl="results/h200/s29/calls/solo-grid.json results/h200/s30/calls/tail-d64-b2-h16-n2300.json"
ctl="$ctl results/h200/s30/calls/tail-d64-b4-h20-n900.json"
files="$(for s in $new; do echo $c/kv-$s.json; done) $ctl"
for s in $new; do  # FA2 beside the new rows only
  step peers-kv-$s 30 python3 scripts/peers.py $c/kv-$s.json --backends flash -o $R/new/peers-kv-$s.json
done
for r in 1 2 3; do
  for f in $files; do
    n=$(basename $f .json); case $f in */kv-*) dir=new;; *) dir=ctl;; esac
    step def-$n-$r 20 $fb run $f --no-ceilings -q -o $R/$dir/def-$n-$r.json
    step kv-$n-$r 20 env FB_FLASH_FWD_PROBE=kvtail $fb run $f --no-ceilings -q -o $R/$dir/kvtail-$n-$r.json
  done
done
for d in new ctl; do
  python3 results/h200/s29/calls/ab_table.py $R/$d flash torch-flash def kvtail > $R/table-$d.txt 2>&1
  echo "== $d"; tail -n +2 $R/table-$d.txt | cut -c1-120
done
step gpu-tests-1 130 env FB_FLASH_FWD_PROBE=kvtail $gt -# "[#test_gpu]" --durations yes
step gpu-tests-2 130 env FB_FLASH_FWD_PROBE=kvtail $gt -# "~[#test_gpu]" --durations yes
for k in 1 2; do
  echo "gpu-tests-$k: $(grep -E 'test cases|All tests|FAILED' $R/gpu-tests-$k.log | tail -2 | tr '\n' ' ')"
done
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
