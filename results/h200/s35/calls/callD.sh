#!/usr/bin/env bash
# Session 35, call D (one H200; issue 13). Carry main's binaries (commit.txt = HEAD): the non-causal GQA/MQA head
# split up to the whole group in L2 plane groups the default (call C). Steps: [bwd_gqa] as built and under cap8;
# memcheck and racecheck of a whole-group split backward (split-san.json); call A's held-out GQA/MQA spec
# (unnamed35-gqa.json) and two fresh shapes (final-*.json) beside torch-cudnn and FlashAttention-2, two rounds.
R=$OUT/D; mkdir -p $R; export DEADLINE=${DEADLINE:-300}
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
c=results/h200/s35/calls
step tests-gqa 40 $gt "[bwd_gqa]"
step tests-gqa-cap8 40 env FB_SM90_BWD_SPLIT=cap8 FB_FLASH_BWD=cap8 $gt "[bwd_gqa]"
for t in gqa gqa-cap8; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
step san-memcheck 40 compute-sanitizer --tool memcheck --error-exitcode 9 $fb run $c/split-san.json --no-ceilings -q \
  -o $R/san-memcheck.json
step san-racecheck 60 compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 $fb run \
  $c/split-san.json --no-ceilings -q -o $R/san-racecheck.json
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" $R/san-*.log
for r in 1 2; do
  for s in unnamed35-gqa final-b1-h48-kv3-n4800 final-b2-h20-kv1-n3700; do
    step fb-$s-$r 40 $fb run $c/$s.json -q -o $R/fb-$s-$r.json
    step peers-$s-$r 40 python3 scripts/peers.py $c/$s.json --backends flash,cudnn -o $R/peers-$s-$r.json
  done
done
for s in unnamed35-gqa final-b1-h48-kv3-n4800 final-b2-h20-kv1-n3700; do
  python3 scripts/ratios.py --round $R/fb-$s-1.json $R/peers-$s-1.json --round $R/fb-$s-2.json $R/peers-$s-2.json \
    --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash > $R/rounds-$s.txt 2>&1
  echo "== $s"; grep -A10 "^summary" $R/rounds-$s.txt | cut -c1-200
done
tar czf $OUT/D.tgz -C $OUT D && rm -rf $R; echo "done t=$((SECONDS-t0))"
