#!/usr/bin/env bash
# Session 33, call B (issue 13). Carry main's binaries (commit.txt = HEAD). `lean64`: the portable flash forward at
# d = 64 under FB_FLASH_FWD_PROBE=epi,pro (kFwdLeanPrologue | kFwdLeanEpi on every launch: the Q copy as the K/V
# copies, the epilogue's rows side by side; d = 128's default on every launch since session 26) against the default
# (docs/perf-notes.md, "Session 33: the lean prologue and epilogue at d = 64 again"; rule written there before the
# call). Steps: the [flashfwd] GPU tests under epi,pro; three interleaved rounds of the default and epi,pro on the
# issue-13 grid's d = 64 forward at N 512-2048 (lean64-grid.json, bf16 and fp16, both masks) and six shapes no config
# names (lean64-b*.json); FlashAttention-2 (torch-flash) beside every spec once.
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
c=results/h200/s33/calls
step tests-lean 90 env FB_FLASH_FWD_PROBE=epi,pro $gt "[flashfwd]"
echo "tests-lean: $(grep -E 'passed|failed' $R/tests-lean.log | tail -2 | tr '\n' ' ')"
specs="grid b20-h24-n640 b9-h28-n900-fp16 b14-h20-n768-causal b6-h24-n1300-fp16 b4-h40-n1800-causal b3-h36-n2900"
for r in 1 2 3; do
  for s in $specs; do
    step def-$s-$r 40 $fb run $c/lean64-$s.json --no-ceilings -q -o $R/ab/def-$s-$r.json
    step lean-$s-$r 40 env FB_FLASH_FWD_PROBE=epi,pro $fb run $c/lean64-$s.json --no-ceilings -q \
      -o $R/ab/lean-$s-$r.json
  done
done
for s in $specs; do
  step peers-$s 40 python3 scripts/peers.py $c/lean64-$s.json --backends flash -o $R/ab/peers-$s.json
done
# ab_table: BASE = def, VARIANT = lean (default time / epi,pro time: above 1, epi,pro faster)
python3 results/h200/s29/calls/ab_table.py $R/ab flash torch-flash def lean > $R/table.txt 2>&1
tail -n +2 $R/table.txt | cut -c1-160
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
