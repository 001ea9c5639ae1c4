#!/usr/bin/env bash
# cuDNN's Hopper FP8 forward race (kernels/cudnn/cudnn_sdpa.cpp, fp8_race_shape) on an H100/H200 (cuDNN
# storing O in e4m3), into OUTDIR, under a minute:
#   diag    the hidden GPU test [cudnnfp8diag] (tests/test_gpu_cudnn_fp8.cpp): the racy shapes run anyway,
#           b8/b4/b2 N2048, b4 N4096, b2 N8192 causal, three calls each: O elements far from flash-sm90's
#           and where, elements changed since the call before, cuDNN's amax of O;
#   tests   the cudnn fp8 GPU tests (refused with the reason where it races);
#   refuse  configs/cudnn-fp8-h200.json, naive and cudnn: skipped with the reason at N 2048, run at N 8192.
#     BUILD=build-h200 scripts/cudnn_fp8_diag_h200.sh OUTDIR
set -uo pipefail
. "$(dirname "$0")/h200_step.sh"
h200_dirs "${1:?usage: scripts/cudnn_fp8_diag_h200.sh OUTDIR}"
step_timeout=60 step_tail=0 step_name_width=6

step diag "$tests" "[cudnnfp8diag]"
step tests "$tests" "cudnn fp8*"
grep -E -A3 "FAILED|with expansion|test cases" "$out/tests.log" | tail -n 20 >&2
step refuse "$fb" run configs/cudnn-fp8-h200.json --backend cuda --no-ceilings --kernels naive,cudnn \
  -o "$out/refuse.json"
grep -E "cudnn " "$out/refuse.log" | cut -c1-300 >&2
# Every call's line (long: the first bad elements), then the summary per shape.
grep "^cudnnfp8diag" "$out/diag.log" | grep -v "SUMMARY\|^cudnnfp8diag   " | cut -c1-400 >&2
grep -E "^cudnnfp8diag (SUMMARY|  )" "$out/diag.log"
printf '%s\n' "${summary[@]}"
exit "$failed"
