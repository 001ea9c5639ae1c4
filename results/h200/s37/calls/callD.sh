#!/usr/bin/env bash
# Session 37, call D (one H200; issue 13): the binaries of commit.txt. GPU tests [bwd_gqa] (with [flash_pgroup]) as
# built and [flash_pgroup] under FB_FLASH_BWD=headmajor; then three interleaved rounds of flash's causal GQA backward
# in plane groups (the default, flash_bwd.cu causal_plane_group_of()) and headmajor (the order before) on ten fresh
# shapes (fg-*, seed 3740), call C's row (fc-*), the GQA grids' causal 32 q / 8 kv N = 1024 rows (fgrid-*) and two
# controls (fctl-*); flash only, every row verified; torch-flash (FlashAttention-2) once per spec after. The rule is
# docs/perf-notes.md's "Session 37: flash's causal GQA backward in plane groups", written before this call.
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
c=results/h200/s37/calls
step tests-gqa 90 $gt "[bwd_gqa]"
step tests-fpg-headmajor 40 env FB_FLASH_BWD=headmajor $gt "[flash_pgroup]"
for t in gqa fpg-headmajor; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
specs=$(cd $c && ls fg-*.json fc-*.json fgrid-*.json fctl-*.json | sed 's/\.json$//')
for r in 1 2 3; do
  case $r in 1) order="def headmajor" ;; 2) order="headmajor def" ;; 3) order="def headmajor" ;; esac
  for s in $specs; do
    for v in $order; do
      w=; [ $v != def ] && w=$v
      step $v-$s-$r 30 env FB_FLASH_BWD=$w $fb run $c/$s.json --kernels flash --no-ceilings -q -o $R/ab/$v-$s-$r.json
    done
  done
done
for s in $specs; do
  step peers-$s 20 python3 scripts/peers.py $c/$s.json --backends flash -o $R/ab/peers-$s.json
done
kill $smi 2>/dev/null
# ab_table: BASE = headmajor, VARIANT = def (headmajor time / default time: above 1, the plane groups are faster)
python3 results/h200/s29/calls/ab_table.py $R/ab flash torch-flash headmajor def > $R/table.txt 2>&1
tail -n +2 $R/table.txt | cut -c1-150
tar czf $OUT/D.tgz -C $OUT D && rm -rf $R; echo "done t=$((SECONDS-t0))"
