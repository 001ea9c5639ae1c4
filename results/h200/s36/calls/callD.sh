#!/usr/bin/env bash
# Session 36, call D (one H200; issue 13). Carry main's binaries (commit.txt = HEAD): the flash-sm90 causal d = 64
# backward's plane groups as built (widened by the schedule model within two device-fulls of blocks, causal_group(),
# since call C) against FB_SM90_BWD64=pgl2 (what fits L2, the order before); docs/perf-notes.md, "Session 36: causal
# d = 64 plane groups widened by the schedule model" (call D's rule written there before the call). Steps: [bwd64]
# (with [sm90_pgroup]) and [bwd_gqa] as built, [sm90_pgroup] under pgl2; three interleaved rounds of def and pgl2 on ten
# fresh causal d = 64 GQA shapes (fd-*.json, seed 3638), call B's eight many-plane shapes and the GQA d = 64 grid's two
# causal rows (mpc-*, grid-*), call A's 40 q / 8 kv rows and two controls (MHA; the grid's N = 16384 row), flash-sm90
# only, verified; torch-cudnn beside every spec once.
R=$OUT/D; mkdir -p $R/ab; export DEADLINE=${DEADLINE:-580}
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
c=results/h200/s36/calls
step tests-bwd64 110 $gt "[bwd64]"
step tests-gqa 70 $gt "[bwd_gqa]"
step tests-pgroup-pgl2 40 env FB_SM90_BWD64=pgl2 $gt "[sm90_pgroup]"
for t in bwd64 gqa pgroup-pgl2; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
specs=$(cd $c && ls fd-*.json mpc-*.json grid-*.json pgc-b1-h40-*.json ctl-b4-*.json ctlb-*.json | sed 's/\.json$//')
for r in 1 2 3; do
  case $r in 1) order="def pgl2" ;; 2) order="pgl2 def" ;; 3) order="def pgl2" ;; esac
  for s in $specs; do
    for v in $order; do
      w=; [ $v != def ] && w=$v
      step $v-$s-$r 30 env FB_SM90_BWD64=$w $fb run $c/$s.json --kernels flash-sm90 --no-ceilings -q \
        -o $R/ab/$v-$s-$r.json
    done
  done
done
for s in $specs; do
  step peers-$s 20 python3 scripts/peers.py $c/$s.json --backends cudnn -o $R/ab/peers-$s.json
done
kill $smi 2>/dev/null
# ab_table: BASE = pgl2, VARIANT = def (pgl2 time / default time: above 1, the default is faster)
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn pgl2 def > $R/table.txt 2>&1
tail -n +2 $R/table.txt | cut -c1-150
tar czf $OUT/D.tgz -C $OUT D && rm -rf $R; echo "done t=$((SECONDS-t0))"
