#!/usr/bin/env bash
# Session 30, call C (issue 13). Carry main's binaries (commit.txt = HEAD). `solotail` as call B left it: d = 128's
# non-causal launches alone (d = 64 runs its default under the word), a partial last wave of at most one block an SM
# and at least a third of the SMs (solo_tail_plan) run as a second launch at one block an SM. Call B (a quarter's
# floor) failed its rule at d = 64 (0.931-0.972x) and at a d = 128 tail of 36 (0.984x), tails of 48-126 at d = 128
# 1.034-1.127x; the third's floor and d = 128 alone were chosen from calls A and B, so their shapes are not evidence:
# nine fresh d = 128 shapes (third-*.json: 1-7 whole waves and tails of 48-132 of 132 SMs). Steps: the [flashfwd] GPU
# tests under the word; memcheck and racecheck of a split forward; FA2 beside the specs; three interleaved rounds of
# the default and solotail on the nine and on a control (session 29's solo-grid.json, call B's d = 64 rows and its
# d = 128 tail of 36, call A's tail of 12: none splits now). Rule (docs/perf-notes.md, "Session 30: solotail's
# floor"): the nine rows' geomeans (default / solotail) over the rounds have a geomean >= 1.005 and none below 0.985,
# the control's geomean within 0.99-1.01: then solotail is the default on d = 128's non-causal launches; else removed.
R=$OUT/C; mkdir -p $R/new $R/ctl; export DEADLINE=${DEADLINE:-300}
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
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck; do
  step san-$tool 60 env FB_FLASH_FWD_PROBE=solotail $san --tool $tool --error-exitcode 9 $fb run \
    $c/third-b2-h14-n1550.json --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/san-$tool.json
  echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san-$tool.log | tail -1)"
done
new="b2-h14-n1550 b7-h12-n800 b1-h20-n4100 b7-h8-n1900 b1-h28-n3950 b3-h14-n4100 b2-h32-kv8-n3800 b1-h28-n6200"
new="$new b1-h40-kv8-n1800"
ctl="$c29/solo-grid.json $c29/solo-b3-h10.json $c/tail-b3-h12-n2900.json $c/tail-d64-b2-h16-n2300.json"
ctl="$ctl $c/tail-d64-b3-h9-n3000.json $c/tail-d64-b4-h20-n900.json"
files="$(for s in $new; do echo $c/third-$s.json; done) $ctl"
for f in $files; do
  n=$(basename $f .json); case $f in */third-*) dir=new;; *) dir=ctl;; esac
  step peers-$n 40 python3 scripts/peers.py $f --backends flash -o $R/$dir/peers-$n.json
done
for r in 1 2 3; do
  for f in $files; do
    n=$(basename $f .json); case $f in */third-*) dir=new;; *) dir=ctl;; esac
    step def-$n-$r 30 $fb run $f --no-ceilings -q -o $R/$dir/def-$n-$r.json
    step solo-$n-$r 30 env FB_FLASH_FWD_PROBE=solotail $fb run $f --no-ceilings -q -o $R/$dir/solotail-$n-$r.json
  done
done
for d in new ctl; do
  python3 $c29/ab_table.py $R/$d flash torch-flash def solotail > $R/table-$d.txt 2>&1
  echo "== $d"; tail -n +2 $R/table-$d.txt | cut -c1-120
done
pkill -9 -f build-dev/flashbench
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
