#!/usr/bin/env bash
# Session 30, call B (issue 13). Carry main's binaries (commit.txt = HEAD). `solotail` with call A's floor: the
# portable forward's non-causal launches whose partial last wave is at most one block an SM and at least a quarter of
# the SMs (solo_tail_plan, common/tile_order.h) run that wave as a second launch at one block an SM. Call A (the
# plan without the floor) failed its rule on a held-out tail of 12 of 132 SMs (0.964x) with tails of 48-132 at
# 1.03-1.09x; the floor was chosen from call A, so call A's shapes are not evidence for it: nine fresh shapes (tails
# 36-126 at two blocks an SM on 132 SMs; tail-*.json), three of them d = 64 (which split only if the d = 64 kernel
# holds two blocks an SM: ncu's occupancy section says). Steps: the [flashfwd] GPU tests under the word; FA2 beside
# the specs; three interleaved rounds of the default and solotail on the nine and on session 29's solo-grid.json (a
# control: no split) and solo-b3-h10.json (call A's 0.964x row: no split now, named); ncu's occupancy of the d = 64
# kernel and the launches' grid sizes. Rule (docs/perf-notes.md, "Session 30: solotail's floor"): the d = 128 rows'
# geomeans (default / solotail) over the rounds have a geomean >= 1.005 and none below 0.985, no d = 64 row below
# 0.985, the control's geomean within 0.99-1.01: then solotail is the default on non-causal launches; else removed.
R=$OUT/B; mkdir -p $R/d128 $R/d64 $R/ctl; export DEADLINE=${DEADLINE:-300}
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
cat out/commit.txt > $R/commit.txt 2>/dev/null
c=results/h200/s30/calls
c29=results/h200/s29/calls
step tests-solotail 120 env FB_FLASH_FWD_PROBE=solotail $src/build-dev/tests/flashbench_gpu_tests "[flashfwd]"
echo "tests: $(grep -E 'passed|failed' $R/tests-solotail.log | tail -2 | tr '\n' ' ')"
d128="b1-h32-kv8-n2500 b4-h8-n2200 b2-h28-n1300 b3-h12-n2900 b1-h30-n2600 b5-h6-n1600"
d64="d64-b2-h16-n2300 d64-b3-h9-n3000 d64-b4-h20-n900"
run_set() {  # run_set DIR SPEC_DIR NAMES...: the peers once, then three interleaved rounds
  local dir=$1 sd=$2; shift 2
  for s in "$@"; do step peers-$s 30 python3 scripts/peers.py $sd/$s.json --backends flash -o $R/$dir/peers-$s.json; done
}
run_set d128 $c $(for s in $d128; do echo tail-$s; done)
run_set d64 $c $(for s in $d64; do echo tail-$s; done)
run_set ctl $c29 solo-grid solo-b3-h10
for r in 1 2 3; do
  for s in $d128 $d64 grid b3-h10; do
    case $s in d64-*) dir=d64; f=$c/tail-$s.json;; grid|b3-h10) dir=ctl; f=$c29/solo-$s.json;; *) dir=d128; f=$c/tail-$s.json;; esac
    n=$(basename $f .json)
    step def-$n-$r 30 $fb run $f --no-ceilings -q -o $R/$dir/def-$n-$r.json
    step solo-$n-$r 30 env FB_FLASH_FWD_PROBE=solotail $fb run $f --no-ceilings -q -o $R/$dir/solotail-$n-$r.json
  done
done
for d in d128 d64 ctl; do
  python3 $c29/ab_table.py $R/$d flash torch-flash def solotail > $R/table-$d.txt 2>&1
  echo "== $d"; tail -3 $R/table-$d.txt | cut -c1-120
done
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
# The d = 64 kernel's blocks an SM (Occupancy: "Block Limit Registers / Shared Mem") and, under solotail, the grids
# of one forward (the second: the first is a warm-up).
step ncu-occ-d64 40 $ncu --clock-control none --kernel-name regex:flash_fwd_tc --launch-skip 1 --launch-count 1 \
  --section Occupancy --section LaunchStats --csv $fb run $c/tail-d64-b3-h9-n3000.json --warmup 1 --reps 1 \
  --warmup-time 0 --no-ceilings -q -o $R/ncu-occ-d64-run.json
for s in d64-b3-h9-n3000 b4-h8-n2200; do
  step ncu-grid-$s 40 env FB_FLASH_FWD_PROBE=solotail $ncu --clock-control none --kernel-name regex:flash_fwd_tc \
    --launch-skip 2 --launch-count 2 --section LaunchStats --metrics gpu__time_duration.sum --csv \
    $fb run $c/tail-$s.json --warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/ncu-grid-$s-run.json
done
grep -hE '"(Block Limit Registers|Block Limit Shared Mem|Grid Size)"' $R/ncu-*.log | awk -F'","' '{print $5" | "$13" | "$15}' \
  | cut -c1-160
pkill -9 -f build-dev/flashbench
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
