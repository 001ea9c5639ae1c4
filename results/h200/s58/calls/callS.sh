#!/usr/bin/env bash
# Session 58, call S (one Hopper GPU; no rule, a diagnostic): where flash-sm90's d = 64 forward spends its time at
# N = 512, the grid's rows still behind torch-cudnn in both rounds (session 58's T2: 0.963-0.978x, non-causal and
# causal, bf16 and fp16), and what k0rec / k0try did not move there (call C: level). Session 55's call S for d = 64:
# Nsight Compute with warp-state sampling per SASS instruction (SourceCounters), one launch each of flash-sm90 and the
# in-binary cudnn at 32 x 32 heads N = 512 and 16 x 32 heads N = 1024 (both 3072 work tiles of 192 rows, 4 and 8 K/V
# steps: the fit a + steps x b per tile) non-causal, and N = 512 causal; clocks free. Kept: the SASS page as CSV, the
# details page.
set -uo pipefail
export DEADLINE=${DEADLINE:-200}
source scripts/call_step.sh
call_begin $OUT/S
ncu_prof ours-n512 'b32-h32-kv32-n512-d64-bf16-full-fwd' flash-sm90 flash_sm90_fwd_kernel
ncu_prof cudnn-n512 'b32-h32-kv32-n512-d64-bf16-full-fwd' cudnn 'cudnn_generated.*fprop'
ncu_prof ours-n1024 'b16-h32-kv32-n1024-d64-bf16-full-fwd' flash-sm90 flash_sm90_fwd_kernel
ncu_prof cudnn-n1024 'b16-h32-kv32-n1024-d64-bf16-full-fwd' cudnn 'cudnn_generated.*fprop'
ncu_prof ours-n512c 'b32-h32-kv32-n512-d64-bf16-causal-fwd' flash-sm90 flash_sm90_fwd_kernel
ncu_prof cudnn-n512c 'b32-h32-kv32-n512-d64-bf16-causal-fwd' cudnn 'cudnn_generated.*fprop'
call_end S
