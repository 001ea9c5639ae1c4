#!/usr/bin/env bash
# Where the cudnn kernel's fp8 forward goes wrong on an H100/H200 (cuDNN storing O in e4m3), into OUTDIR,
# under a minute: the hidden GPU test [cudnnfp8diag] (tests/test_gpu_cudnn_fp8.cpp) runs cuDNN's FP8
# forward at b 8, h 16, N 2048, d 128 (full and causal) as shipped and with each diagnostic of
# cudnn_sdpa.h's Fp8Probe (NaN codes over O before each call, a device sync before the widening,
# scale_o x1/4 and x4, the per-tensor factors apart, cuDNN's scratch zeroed, O outside the workspace,
# O laid out BSHD), then batch 1/2/4 and N 4096/8192; one line per call: how many O elements are far
# from flash-sm90's (and where: batch, head, row, column), NaN codes left, codes that changed since the
# call before, cuDNN's amax of O. Then the [cudnn] tests, this file's regression test among them.
#     BUILD=build-h200 scripts/cudnn_fp8_diag_h200.sh OUTDIR
set -uo pipefail
out=${1:?usage: scripts/cudnn_fp8_diag_h200.sh OUTDIR}
build=${BUILD:-build-h200}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
tests="$build/tests/flashbench_gpu_tests"

step_timeout=60 step_tail=0 step_name_width=6
. scripts/h200_step.sh

step diag "$tests" "[cudnnfp8diag]"
step tests "$tests" "[cudnn]"
grep -E -A3 "FAILED|with expansion|test cases" "$out/tests.log" | tail -n 20 >&2
# Every call's line (long: the first bad elements), then the summary per variant.
grep "^cudnnfp8diag" "$out/diag.log" | grep -v "SUMMARY\|^cudnnfp8diag   " | cut -c1-400 >&2
grep -E "^cudnnfp8diag (SUMMARY|  )" "$out/diag.log"
printf '%s\n' "${summary[@]}"
exit "$failed"
