#!/usr/bin/env bash
# The CUDA compiler launcher of flashbench_kernels (CMakeLists.txt, FLASHBENCH_PTXAS_LOG): runs the compile command it
# is given, keeps ptxas's resource report (the kernels compile with -Xptxas -v) in OBJECT.ptxas beside the object file,
# and passes every other line of the compiler's output through, so a build log shows only what it showed before.
# scripts/ptxas_spills.py reads the reports: a kernel that starts spilling registers to local memory fails a test in
# CI, on a machine without a GPU, before any device call.
#   scripts/ptxas_log.sh COMPILER ARGS...   (CMake prepends it to each CUDA compile of the target)
set -uo pipefail
obj=
prev=
for a in "$@"; do
  [ "$prev" = -o ] && obj=$a
  prev=$a
done
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
"$@" >"$out" 2>"$err"
rc=$?
# ptxas -v writes "ptxas info    : ..." lines and, under each function's properties, an indented line of its stack
# frame and spill bytes.
report='^ptxas info|bytes stack frame'
grep -Ev "$report" "$out"
grep -Ev "$report" "$err" >&2
if [ $rc -eq 0 ] && [ -n "$obj" ]; then
  grep -Eh "$report" "$out" "$err" >"$obj.ptxas.tmp" || true
  mv -f "$obj.ptxas.tmp" "$obj.ptxas"
fi
exit $rc
