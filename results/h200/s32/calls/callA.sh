#!/usr/bin/env bash
# Session 32, call A (issue 13). Carry main's binaries (commit.txt = HEAD). `share` (kBwd64TailShare; the default as
# built where tail_share_on()'s model takes it, FB_SM90_BWD_SHARE=off the kernels before): the persistent d = 64
# backward's last partial round of tiles shared out over every block (docs/perf-notes.md, "Session 32: the d = 64
# backward's last partial round shared out"; rule written there before the call). Steps: the whole GPU suite (with
# session 31's unrun no-workspace forward test and the new [sm90_share] test); three interleaved rounds of the default
# and off on eight shapes no config names and two controls (share-*.json) and the issue-13 grid's d = 64 non-causal
# backward (share-grid.json, bf16 and fp16); [bwd64] under FB_SM90_BWD_SHARE=on and off; memcheck and racecheck of
# a shared run (san-share.json); torch-cudnn beside the grid once.
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
c=results/h200/s32/calls
step gpu-tests-1 130 $gt -# "[#test_gpu]" --durations yes
step gpu-tests-2 130 $gt -# "~[#test_gpu]" --durations yes
for k in 1 2; do
  echo "gpu-tests-$k: $(grep -E 'test cases|All tests|FAILED' $R/gpu-tests-$k.log | tail -2 | cut -c1-200 | tr '\n' ' ')"
done
specs="b3-h20-n1750 b1-h40-n5000 b4-h12-n2200 b2-h20-n6000 b1-h28-n8192 b3-h10-n4000-fp16 b1-h36-n3300-fp16"
specs="$specs b2-h32-kv8-n2600 ctl-b3-h20-n1750-causal ctl-b2-h33-n4096 grid"
for r in 1 2 3; do
  for s in $specs; do
    step def-$s-$r 30 $fb run $c/share-$s.json --no-ceilings -q -o $R/ab/def-$s-$r.json
    step off-$s-$r 30 env FB_SM90_BWD_SHARE=off $fb run $c/share-$s.json --no-ceilings -q -o $R/ab/off-$s-$r.json
  done
done
# ab_table: BASE = off, VARIANT = def (off time / default time: above 1, the shared tail faster)
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn off def > $R/table.txt 2>&1
tail -n +2 $R/table.txt | cut -c1-150
step tests-share-on 60 env FB_SM90_BWD_SHARE=on $gt "[bwd64]"
step tests-share-off 60 env FB_SM90_BWD_SHARE=off $gt "[bwd64]"
for k in on off; do echo "tests-share-$k: $(grep -E 'passed|failed' $R/tests-share-$k.log | tail -2 | tr '\n' ' ')"; done
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck; do
  step san-$tool 45 $san --tool $tool --error-exitcode 9 $fb run $c/san-share.json --warmup-time 0 --no-ceilings -q \
    -o $R/san-$tool.json
  echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san-$tool.log | tail -1)"
  pkill -9 -f compute-sanitizer; pkill -9 -f build-dev/flashbench
done
step peers-grid 60 python3 scripts/peers.py $c/share-grid.json --backends cudnn -o $R/ab/peers-grid.json
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn off def > $R/table.txt 2>&1
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
