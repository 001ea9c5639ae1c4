#!/usr/bin/env bash
# Session 64, call I0 (one Hopper GPU; issue 13; no rule: the test must pass): peers.py's GPU test through the C API
# (tests/gpu_fb_torch.py), now run twice: the reps back to back, then --interleave with PyTorch's cuDNN among the
# kernels (every fb_torch record verified but the wrong-scale one's, in both). Then callW.sh under INTERLEAVE=1
# (chained after it by chain.sh): the grids with the five kernels' reps taken in turn.
set -uo pipefail
export DEADLINE=${DEADLINE:-200}
source scripts/call_step.sh
call_begin $OUT/I0
step gpu-fb-torch 180 python3 tests/gpu_fb_torch.py
grep -E "gpu_fb_torch.py:|FAIL" $R/gpu-fb-torch.log | tail -8
call_end I0
