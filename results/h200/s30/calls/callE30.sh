#!/usr/bin/env bash
# Session 30, call E (issue 13). Carry main's binaries (commit.txt = HEAD). `pdltail` (FB_FLASH_FWD_PROBE;
# kFwdPdlTail, pdl_tail_plan in common/tile_order.h): d = 128's non-causal launches whose partial last wave is at most
# one block an SM run it as a programmatically dependent second launch at one block an SM, whose blocks take SMs as
# the first launch's free (griddepcontrol), not after its last block as solotail's did (calls A-C: the drain and the
# launch gap lost at short blocks and small tails). Steps: the [flashfwd] GPU tests under the word; three interleaved
# rounds of the default and pdltail on nine fresh d = 128 shapes (pdl-*.json: 1-3 whole waves, tails of 12-132 of 132
# SMs, 11-110 K/V tiles a block) and a control (session 29's solo-grid.json: no split; call B's d = 64 rows: the word
# runs d = 64's default), FA2 beside the nine once; the whole GPU suite under the word (the flash forward's d = 128
# non-causal launches all take it there, the backward tests' forwards too); memcheck of a split forward. Rule
# (docs/perf-notes.md, "Session 30: pdltail"): the nine rows' geomeans (default / pdltail) over the rounds have a
# geomean >= 1.005 and none below 0.985, the control's geomean within 0.99-1.01, the suite and memcheck clean under
# the word: then pdltail is the default on d = 128's non-causal launches; else it is removed.
R=$OUT/E; mkdir -p $R/new $R/ctl; export DEADLINE=${DEADLINE:-300}
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
c=results/h200/s30/calls
step tests-pdltail 60 env FB_FLASH_FWD_PROBE=pdltail $gt "[flashfwd]"
echo "tests: $(grep -E 'passed|failed' $R/tests-pdltail.log | tail -2 | tr '\n' ' ')"
new="b6-h10-n700 b9-h8-n900 b3-h20-n1150 b1-h32-kv8-n2100 b1-h12-n7000 b1-h48-kv8-n1000 b2-h16-n2500 b1-h24-n4500"
new="$new b5-h8-n1700"
ctl="results/h200/s29/calls/solo-grid.json $c/tail-d64-b2-h16-n2300.json $c/tail-d64-b4-h20-n900.json"
files="$(for s in $new; do echo $c/pdl-$s.json; done) $ctl"
for s in $new; do  # FA2 beside the new rows only (the control's ratios are in calls B and C)
  step peers-pdl-$s 30 python3 scripts/peers.py $c/pdl-$s.json --backends flash -o $R/new/peers-pdl-$s.json
done
for r in 1 2 3; do
  for f in $files; do
    n=$(basename $f .json); case $f in */pdl-*) dir=new;; *) dir=ctl;; esac
    step def-$n-$r 20 $fb run $f --no-ceilings -q -o $R/$dir/def-$n-$r.json
    step pdl-$n-$r 20 env FB_FLASH_FWD_PROBE=pdltail $fb run $f --no-ceilings -q -o $R/$dir/pdltail-$n-$r.json
  done
done
for d in new ctl; do
  python3 results/h200/s29/calls/ab_table.py $R/$d flash torch-flash def pdltail > $R/table-$d.txt 2>&1
  echo "== $d"; tail -n +2 $R/table-$d.txt | cut -c1-120
done
step gpu-tests-1 130 env FB_FLASH_FWD_PROBE=pdltail $gt -# "[#test_gpu]" --durations yes
step gpu-tests-2 130 env FB_FLASH_FWD_PROBE=pdltail $gt -# "~[#test_gpu]" --durations yes
for k in 1 2; do
  echo "gpu-tests-$k: $(grep -E 'test cases|All tests|FAILED' $R/gpu-tests-$k.log | tail -2 | tr '\n' ' ')"
done
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
step san-memcheck 40 env FB_FLASH_FWD_PROBE=pdltail $san --tool memcheck --error-exitcode 9 $fb run \
  $c/pdl-b6-h10-n700.json --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/san-memcheck.json
echo "memcheck: $(grep -E 'ERROR SUMMARY' $R/san-memcheck.log | tail -1)"
pkill -9 -f compute-sanitizer; pkill -9 -f build-dev/flashbench
tar czf $OUT/E.tgz -C $OUT E && rm -rf $R; echo "done t=$((SECONDS-t0))"
