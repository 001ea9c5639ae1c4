#!/usr/bin/env bash
# Session 33, call C (issue 13). Carry main's binaries (commit.txt = HEAD): the portable forward at d = 64 with the
# lean prologue and epilogue on every launch (TcTiles<64>::kShortOpt since call B; FB_FLASH_FWD_PROBE=nolean64 runs
# the kernels before). Steps: the [flashfwd] GPU tests as shipped and under nolean64; memcheck, racecheck and
# synccheck of lean d = 64 launches (san-lean64.json); three interleaved rounds of the default and nolean64 at the
# grid's longer N (lean64-long.json: N 4096 / 16384, bf16 and fp16, both masks; call B's rule covered N <= 2900);
# then the whole GPU suite on the shipped binaries.
R=$OUT/C; mkdir -p $R/ab; export DEADLINE=${DEADLINE:-560}
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
step tests-shipped 90 $gt "[flashfwd]"
step tests-nolean64 90 env FB_FLASH_FWD_PROBE=nolean64 $gt "[flashfwd]"
for k in shipped nolean64; do echo "tests-$k: $(grep -E 'passed|failed' $R/tests-$k.log | tail -2 | tr '\n' ' ')"; done
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck synccheck; do
  step san-$tool 45 $san --tool $tool --error-exitcode 9 $fb run $c/san-lean64.json --warmup-time 0 --no-ceilings -q \
    -o $R/san-$tool.json
  echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san-$tool.log | tail -1)"
  pkill -9 -f compute-sanitizer; pkill -9 -f build-dev/flashbench
done
for r in 1 2 3; do
  step def-long-$r 40 $fb run $c/lean64-long.json --no-ceilings -q -o $R/ab/def-long-$r.json
  step nolean-long-$r 40 env FB_FLASH_FWD_PROBE=nolean64 $fb run $c/lean64-long.json --no-ceilings -q \
    -o $R/ab/nolean-long-$r.json
done
# ab_table: BASE = nolean (the kernels before), VARIANT = def (nolean64 time / default time: above 1, the default faster)
python3 results/h200/s29/calls/ab_table.py $R/ab flash torch-flash nolean def > $R/table.txt 2>&1
tail -n +2 $R/table.txt | cut -c1-160
step gpu-tests-1 130 $gt -# "[#test_gpu]" --durations yes
step gpu-tests-2 150 $gt -# "~[#test_gpu]" --durations yes
for k in 1 2; do
  echo "gpu-tests-$k: $(grep -E 'test cases|All tests|FAILED' $R/gpu-tests-$k.log | tail -2 | cut -c1-200 | tr '\n' ' ')"
done
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
