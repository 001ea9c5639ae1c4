#!/usr/bin/env bash
# Session 50 (no device lent): one K/V step of flash-sm90's forward against one of cuDNN's open-sourced Hopper forward
# (cuDNN frontend v1.19.0 published the source of "cuDNN's SDPA Fprop" for sm_90, the kernels its cuDNN 9.19.1 runs
# under the names knob_7_64x128x128 (d = 128) and knob_7_64x128x64 (d = 64); include/cudnn_frontend/generated/sdpa/
# sm90/prefill/full_seqlens/d{128,64}_fprop_kernel.h, MIT licence). Nothing of that source is kept here: this script
# extracts it from a clone of NVIDIA/cudnn-frontend (its HEAD; bare or not) into a scratch folder, compiles it with the flags the frontend
# gives NVRTC (sm_90a, --use_fast_math) with this machine's nvcc, and reads both kernels' SASS with
# scripts/sass_mix.py (cuobjdump and nvdisasm from PyPI's nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm wheels: this
# machine's CUDA toolkit has nvcc and ptxas only).
# Usage: bash results/sass/s50/run.sh FLASHBENCH_SM90A_BINARY CUDNN_FRONTEND_CHECKOUT OUTDIR
set -euo pipefail
fb=$1; fe=$2; out=$3
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for d in 128 64; do
  # The header holds the kernel as raw-string pieces; NVRTC's typedefs clash with the host's int64_t under nvcc.
  git -C "$fe" show "HEAD:include/cudnn_frontend/generated/sdpa/sm90/prefill/full_seqlens/d${d}_fprop_kernel.h" \
    > "$tmp/d$d.h"
  python3 - "$tmp/d$d.h" "$tmp/d$d.cu" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
body = re.search(r"_fprop_source\[\] =(.*?);\ninline constexpr size_t", src, re.S).group(1)
text = "".join(re.findall(r'R"KERNEL\((.*?)\)KERNEL"', body, re.S))
open(sys.argv[2], "w").write(text.replace("typedef long long int64_t;", "typedef long int64_t;"))
PY
  nvcc -arch=sm_90a -std=c++17 --use_fast_math -cubin -Xptxas -v -o "$tmp/d$d.cubin" "$tmp/d$d.cu" 2>&1 |
    grep -E "registers|spill" > "$out/cudnn-oss-d$d-ptxas.txt"
  cuobjdump -sass "$tmp/d$d.cubin" > "$tmp/cudnn-d$d.sass"
done
# flash-sm90's defaults on a bf16 non-causal forward (flash_sm90_launch.cuh, launch_fwd_ship): d = 128 kOpt 8215
# (desc, early, xtile, trec, fastlse), d = 64 kOpt 12313 (desc, ustage, trec, lazyres, fastlse; unsplit launches).
k='_ZN2fb4cuda10flash_sm9021flash_sm90_fwd_kernelINS1_9FwdTraitsI13__nv_bfloat16'
cuobjdump -sass -fun "${k}Li128ELi128ELb1ELb1ELi2ELb1ELi2EEELj8215EEEvNS1_9FwdParamsE" "$fb" > "$tmp/ours-d128.sass" 2>/dev/null  # a warning per cubin of the fat binary that lacks it
cuobjdump -sass -fun "${k}Li64ELi128ELb1ELb1ELi3ELb1ELi2EEELj12313EEEvNS1_9FwdParamsE" "$fb" > "$tmp/ours-d64.sass" 2>/dev/null
for d in 128 64; do
  python3 scripts/sass_mix.py "$tmp/ours-d$d.sass" "$tmp/cudnn-d$d.sass" --min-size 300 --json "$out/mix-d$d.json" \
    > "$out/mix-d$d.txt"
done
# What ran, for meta.json: the binaries' commit, the cuDNN frontend's commit, the tools.
{ "$fb" --version; git -C "$fe" rev-parse HEAD; nvcc --version | tail -1; cuobjdump --version | tail -1; } > "$out/versions.txt"
