#!/usr/bin/env bash
# Session 29, call A (one H200; issue 13): `fastlse128`, flash-sm90's d = 128 shipped forward (kOpt 23) with kOptFastLse
# (the epilogue's row-sum inverses and LSE by rcp.approx / lg2.approx, d = 64's default since session 20), against the
# default. First the sm90 forward GPU tests under the word; then torch-cudnn beside three specs (the papers' d = 128
# grid in bf16 and fp16, and held-out MHA / GQA shapes no config names), then three interleaved rounds of default and
# fastlse128 on them; ab_table.py gives the pre-registered rule's verdict (docs/perf-notes.md, "Session 29").
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-420}
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
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv > $R/gpu.txt 2>&1
c=results/h200/s29/calls
step tests-fastlse128 90 env FB_SM90_FWD_PROBE=fastlse128 $src/build-dev/tests/flashbench_gpu_tests "[sm90fwd]"
echo "tests: $(grep -E 'passed|failed' $R/tests-fastlse128.log | tail -2 | tr '\n' ' ')"
for s in lse-grid lse-mha lse-gqa; do
  step peers-$s 60 python3 scripts/peers.py $c/$s.json --backends cudnn -o $R/peers-$s.json
done
for r in 1 2 3; do
  for s in lse-grid lse-mha lse-gqa; do
    step def-$s-$r 40 $fb run $c/$s.json --no-ceilings -q -o $R/def-$s-$r.json
    step fastlse128-$s-$r 40 env FB_SM90_FWD_PROBE=fastlse128 $fb run $c/$s.json --no-ceilings -q \
      -o $R/fastlse128-$s-$r.json
  done
done
python3 $c/ab_table.py $R flash-sm90 torch-cudnn def fastlse128 > $R/table.txt 2>&1
pkill -9 -f build-dev/flashbench
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
tar xzf $OUT/A.tgz -O A/table.txt 2>/dev/null | cut -c1-120
