#!/usr/bin/env bash
# ctest ptxas_spills_mutant: the spill and wgmma check end to end with the real compiler. tests/ptxas_mutant.cu (a
# kernel that must spill, and one whose wgmmas ptxas must serialise) compiled for sm_90a through scripts/ptxas_log.sh,
# as the kernels are, into a build-like folder; then scripts/ptxas_spills.py against the committed baseline must fail
# naming both. Passes (0) when the check catches the
# spill, fails (1) when it does not; 77 (skipped) where the check itself skips (another nvcc than the baseline's).
#   tests/ptxas_mutant.sh NVCC NVCC_VERSION WORK_DIR
set -uo pipefail
nvcc=$1 version=$2 dir=$3
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$dir"
obj="$dir/CMakeFiles/mutant.dir/tests/ptxas_mutant.cu.o"
mkdir -p "$(dirname "$obj")"
bash "$root/scripts/ptxas_log.sh" "$nvcc" -O3 --ptxas-options=-v -gencode arch=compute_90a,code=sm_90a \
  -c "$root/tests/ptxas_mutant.cu" -o "$obj" || { echo "ptxas_mutant.sh: the mutant did not compile" >&2; exit 1; }
python3 "$root/scripts/ptxas_spills.py" "$dir" --nvcc-version "$version" \
  --allow "$root/tests/data/ptxas_spills.json" > "$dir/check.txt" 2>&1
rc=$?
cat "$dir/check.txt"
[ $rc -eq 77 ] && exit 77
missed=
grep -q "OVER: tests/ptxas_mutant.cu sm_90a .*ptxas_mutant_spill" "$dir/check.txt" || missed="$missed the spill,"
grep -q "SERIALIZED: tests/ptxas_mutant.cu sm_90a .*ptxas_mutant_wgmma" "$dir/check.txt" || missed="$missed the serialised wgmma,"
grep -q "INJECTED: tests/ptxas_mutant.cu sm_90a .*ptxas_mutant_wgmma.*: 1 warpgroup" "$dir/check.txt" ||
  missed="$missed the injected wait,"
if [ $rc -eq 1 ] && [ -z "$missed" ]; then
  echo "ptxas_mutant.sh: the check caught both mutants (the spill, the serialised wgmma and its injected wait)"
  exit 0
fi
echo "ptxas_mutant.sh: the check did not catch${missed:- a mutant} (exit $rc)" >&2
exit 1
