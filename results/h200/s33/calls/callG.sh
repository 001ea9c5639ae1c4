#!/usr/bin/env bash
# Session 33, call G (issue 13): the nolean64 word's d = 128 dispatch after its fix (host code: nolean64 ran d = 128
# launches on their kernels without the lean bits in calls C and E's binaries). Carry main's binaries (commit.txt).
# Steps: the [flashfwd] GPU tests under nolean64; the kernel each of three runs launches for one d = 128 non-causal
# and one d = 64 non-causal case (as built, under nolean64), read from Nsight Compute's launch records (the kernel's
# template name holds its variant bits: d = 128 default 105579594, d = 64 default 196608, d = 64 before 0).
R=$OUT/G; mkdir -p $R; export DEADLINE=${DEADLINE:-200}
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
step tests-nolean64 60 env FB_FLASH_FWD_PROBE=nolean64 $gt "[flashfwd]"
echo "tests-nolean64: $(grep -E 'passed|failed' $R/tests-nolean64.log | tail -1)"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for d in 128 64; do
  for probe in "" nolean64; do
    name=d$d-${probe:-default}
    step ncu-$name 40 env FB_FLASH_FWD_PROBE=$probe $ncu --kernel-name regex:flash_fwd_tc_kernel --launch-count 1 \
      --section LaunchStats $fb run results/h200/s33/calls/probe-dispatch.json --filter "d$d-" --warmup-time 0 \
      --no-ceilings -q -o $R/run-$name.json
    echo "$name: $(grep -o 'flash_fwd_tc_kernel<[^(]*' $R/ncu-$name.log | head -1 | grep -o '[0-9]*u>' | head -1)"
  done
done
tar czf $OUT/G.tgz -C $OUT G && rm -rf $R; echo "done t=$((SECONDS-t0))"
