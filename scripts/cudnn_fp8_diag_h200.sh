#!/usr/bin/env bash
# cuDNN's Hopper FP8 forward race (kernels/cudnn/cudnn_sdpa.cpp, fp8_race_shape) and the split that avoids
# it, on an H100/H200 (cuDNN storing O in e4m3), into OUTDIR, about a minute:
#   diag    the hidden GPU test [cudnnfp8diag] (tests/test_gpu_cudnn_fp8.cpp): at b8 N2048, b16 N1024,
#           b4 N4096 (full and causal) and b2 N8192 causal, the one launch (run anyway) and the split, one
#           line per call (O elements far from flash-sm90's and where, elements changed since the call
#           before, cuDNN's amax of O), and the median ms of each;
#   tests   the cudnn fp8 GPU tests (refused with the reason by default, split and right every call);
#   split   configs/cudnn-fp8-h200.json through the runner with FB_CUDNN_FP8_SPLIT=1 (timed, verified);
#   refuse  the same without it: cudnn skipped with the reason at N 2048, run at N 8192.
#     BUILD=build-h200 scripts/cudnn_fp8_diag_h200.sh OUTDIR
set -uo pipefail
out=${1:?usage: scripts/cudnn_fp8_diag_h200.sh OUTDIR}
build=${BUILD:-build-h200}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
tests="$build/tests/flashbench_gpu_tests"
fb="$build/flashbench"

step_timeout=60 step_tail=0 step_name_width=6
. scripts/h200_step.sh

step diag "$tests" "[cudnnfp8diag]"
step tests "$tests" "cudnn fp8*"
grep -E -A3 "FAILED|with expansion|test cases" "$out/tests.log" | tail -n 20 >&2
step split env FB_CUDNN_FP8_SPLIT=1 "$fb" run configs/cudnn-fp8-h200.json --backend cuda --no-ceilings \
  -o "$out/split.json"
step refuse "$fb" run configs/cudnn-fp8-h200.json --backend cuda --no-ceilings --kernels cudnn -o "$out/refuse.json"
grep -E "cudnn " "$out/split.log" "$out/refuse.log" | cut -c1-300 >&2
# Every call's line (long: the first bad elements), then the summary per shape and variant, and the times.
grep "^cudnnfp8diag" "$out/diag.log" | grep -v "SUMMARY\|^cudnnfp8diag   " | cut -c1-400 >&2
grep -E "^cudnnfp8diag (SUMMARY|  )" "$out/diag.log"
printf '%s\n' "${summary[@]}"
exit "$failed"
