#!/usr/bin/env bash
# Session 42 (no device lent): where the kernels' local-memory loads and stores (register spills) sit in their loops,
# read from the SASS on the CPU. cuobjdump is not in this machine's CUDA toolkit; it came from PyPI's wheel
# nvidia-cuda-cuobjdump 13.2.86 (unzipped, its bin/ on PATH; a newer disassembler reads nvcc 13.0's cubins).
#   sm_90a: build-dev/flashbench (Release, CMAKE_CUDA_ARCHITECTURES=90a, built from e93afc4; kernels/ is the same at
#           the commit that adds this folder)
#   sm_80:  a kernels-only build, cmake -S . -B B80 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=80,
#           cmake --build B80 --target flashbench_kernels
# Usage: bash results/sass/s42/run.sh FLASHBENCH_SM90A_BINARY B80/libflashbench_kernels.a OUTDIR
set -euo pipefail
fb=$1; lib80=$2; out=$3; here=$(dirname "$0"); mkdir -p "$out"
cuobjdump -sass "$fb" > "$out/all-sm90a.sass"
cuobjdump -sass "$lib80" > "$out/all-sm80.sass"
python3 scripts/sass_spills.py --summary "$out/all-sm90a.sass" > "$out/summary-sm90a.tsv"
python3 scripts/sass_spills.py --summary "$out/all-sm80.sass" > "$out/summary-sm80.tsv"
for a in sm90a sm80; do for e in bf16 fp16; do
  echo "== $a $e"; python3 "$here/defaults.py" "$out/summary-$a.tsv" $e
done; done > "$out/bwd-defaults.txt"
# the four defaults session 41's call D was to dump on the device
funcs="_ZN2fb4cuda5flash19flash_fwd_tc_kernelINS1_9FwdTraitsI13__nv_bfloat16Li128ELi128ELi64ELi4ELb0ELi1ELi2EEELj105579594EEEvNS1_7FwdArgsINT_4ElemEfEE
_ZN2fb4cuda5flash3bwd23bwd_main_tc_grid_kernelINS2_12TcGridTraitsI13__nv_bfloat16Li128ELi128ELi64ELi4ELi4ELi2ELb1ELb0ELb1ELb0ELb1ELb1ELb1ELb1ELb0ELb1ELb1ELb0ELb0ELb0ELb0ELb0ELb1EEEEEvNS2_8MainArgsE
_ZN2fb4cuda5flash3bwd23bwd_main_tc_grid_kernelINS2_12TcGridTraitsI13__nv_bfloat16Li64ELi128ELi128ELi4ELi4ELi4ELb1ELb0ELb1ELb0ELb1ELb1ELb0ELb1ELb0ELb1ELb0ELb0ELb0ELb1ELb0ELb0ELb1EEEEEvNS2_8MainArgsE
_ZN2fb4cuda10flash_sm9021flash_sm90_bwd_kernelINS1_9BwdTraitsI13__nv_bfloat16Li64ELi8EEEEEvNS1_9BwdParamsE"
for f in $funcs; do cuobjdump -sass -fun "$f" "$fb" 2>/dev/null; done > "$out/four.sass"
python3 scripts/sass_spills.py "$out/four.sass" > "$out/four-defaults-sm90a.txt"
