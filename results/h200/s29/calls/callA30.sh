#!/usr/bin/env bash
# PREPARED in session 29 for session 30, NOT RUN (issue 13). Carry main's binaries (commit.txt = HEAD).
# `solotail` (FB_FLASH_FWD_PROBE; kFwdSoloTail, solo_tail_plan in common/tile_order.h): the portable forward's
# non-causal launches whose grid's partial last wave is at most one block an SM run it as a second launch at one
# block an SM. Session 29's call E found the shipped d = 128 kernel 0.91-0.97x FlashAttention-2 at batch 2 x 12 heads
# N = 3328-3456 with its busiest SM 1.16x the SMs' mean active cycles (two tail blocks landing on one SM), the kernel
# without the lean prologue and epilogue 1.09-1.10x faster there. Steps: the [flashfwd] GPU tests under the word (its
# new partial-last-wave case splits on an H200); FlashAttention-2 beside the specs; three interleaved rounds of the
# default and solotail on six held-out shapes that split on 132 SMs x 2 (solo-b*.json) and on the papers' grid, which
# does not split (solo-grid.json, a control), and on session 29's ragged-fwd.json (named, not in the rule); ncu's
# per-SM active cycles at N = 3400 both ways. Rule (docs/perf-notes.md, "Session 29, prepared for session 30"):
# ab_table.py on the held-out rows, geomean of the rows' geomeans (default / solotail) >= 1.005 and no row below
# 0.985; the control's geomean within 0.99-1.01.
R=$OUT/A; mkdir -p $R/odd $R/grid $R/ragged; export DEADLINE=${DEADLINE:-300}
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
c=results/h200/s29/calls
step tests-solotail 120 env FB_FLASH_FWD_PROBE=solotail $src/build-dev/tests/flashbench_gpu_tests "[flashfwd]"
echo "tests: $(grep -E 'passed|failed' $R/tests-solotail.log | tail -2 | tr '\n' ' ')"
odd="solo-b1-h40 solo-b2-h20 solo-b5-h12 solo-b1-h24-kv4 solo-b3-h16 solo-b3-h10"
for s in $odd; do step peers-$s 30 python3 scripts/peers.py $c/$s.json --backends flash -o $R/odd/peers-$s.json; done
step peers-grid 40 python3 scripts/peers.py $c/solo-grid.json --backends flash -o $R/grid/peers-solo-grid.json
step peers-ragged 30 python3 scripts/peers.py $c/ragged-fwd.json --backends flash -o $R/ragged/peers-ragged-fwd.json
for r in 1 2 3; do
  for s in $odd; do
    step def-$s-$r 20 $fb run $c/$s.json --no-ceilings -q -o $R/odd/def-$s-$r.json
    step solo-$s-$r 20 env FB_FLASH_FWD_PROBE=solotail $fb run $c/$s.json --no-ceilings -q \
      -o $R/odd/solotail-$s-$r.json
  done
  step def-grid-$r 30 $fb run $c/solo-grid.json --no-ceilings -q -o $R/grid/def-solo-grid-$r.json
  step solo-grid-$r 30 env FB_FLASH_FWD_PROBE=solotail $fb run $c/solo-grid.json --no-ceilings -q \
    -o $R/grid/solotail-solo-grid-$r.json
  step def-ragged-$r 20 $fb run $c/ragged-fwd.json --no-ceilings -q -o $R/ragged/def-ragged-fwd-$r.json
  step solo-ragged-$r 20 env FB_FLASH_FWD_PROBE=solotail $fb run $c/ragged-fwd.json --no-ceilings -q \
    -o $R/ragged/solotail-ragged-fwd-$r.json
done
for d in odd grid ragged; do
  python3 $c/ab_table.py $R/$d flash torch-flash def solotail > $R/table-$d.txt 2>&1
  echo "== $d"; tail -3 $R/table-$d.txt | cut -c1-120
done
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
# LaunchStats: the grid sizes, so that the split (528 + 120 blocks on 132 SMs x 2) shows.
m="--section LaunchStats --metrics sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min"
m="$m,gpu__time_duration.sum"
for w in def solotail; do
  # One forward is one launch as shipped, two under solotail where it splits (N = 3400 does on 132 SMs x 2): the
  # second forward's launches (the first is a warm-up).
  e="env -u FB_FLASH_FWD_PROBE"; k=1; [ $w = solotail ] && { e="env FB_FLASH_FWD_PROBE=solotail"; k=2; }
  step ncu-$w 40 $e $ncu --clock-control none --kernel-name regex:flash_fwd_tc --launch-skip $k --launch-count $k $m \
    --csv $fb run $c/ragged-fwd.json --filter 'n3400-' --warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q \
    -o $R/ncu-$w-run.json
done
pkill -9 -f build-dev/flashbench
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
