#!/usr/bin/env bash
# Session 60, call G (one Hopper GPU; no rule, a diagnostic): where the 8-query-head GQA forwards lose to torch-cudnn
# (session 59's P2, six rounds: 16 x 8 / 8 and 16 x 8 / 1 heads, N = 1024, d = 128, bf16, non-causal, 0.93-0.95x)
# while the MHA row of the same N and d (16 x 16 heads) is level. Nsight Compute, one launch each, clocks free, warp
# states sampled per SASS instruction: flash-sm90 and the in-binary cudnn at the two GQA rows and at the MHA row
# (configs/gqa-h200.json, configs/issue13-h200.json); then the kernel PyTorch's cuDNN launches for the same three rows
# (its launch figures: grid, block, registers, shared memory, cycles; the third call of each).
set -uo pipefail
export DEADLINE=${DEADLINE:-330}
source scripts/call_step.sh
call_begin $OUT/G
NCU_SPEC=configs/gqa-h200.json ncu_prof ours-kv8 'b16-h8-kv8-n1024-d128-bf16-full-fwd' flash-sm90 flash_sm90_fwd_kernel
NCU_SPEC=configs/gqa-h200.json ncu_prof cudnn-kv8 'b16-h8-kv8-n1024-d128-bf16-full-fwd' cudnn 'cudnn_generated.*fprop'
NCU_SPEC=configs/gqa-h200.json ncu_prof ours-kv1 'b16-h8-kv1-n1024-d128-bf16-full-fwd' flash-sm90 flash_sm90_fwd_kernel
ncu_prof ours-mha 'b16-h16-kv16-n1024-d128-bf16-full-fwd' flash-sm90 flash_sm90_fwd_kernel
ncu_prof cudnn-mha 'b16-h16-kv16-n1024-d128-bf16-full-fwd' cudnn 'cudnn_generated.*fprop'
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for c in "8 8" "8 1" "16 16"; do
  set -- $c
  step tcudnn-h$1-kv$2 40 $ncu -f --clock-control none --launch-skip 2 --launch-count 1 \
    -k regex:'fprop|sdpa|attn|fmha' --section LaunchStats --section SpeedOfLight --section Occupancy \
    -o $R/trep-h$1-kv$2 python3 results/h200/s60/calls/tcudnn_call.py $1 $2
  $ncu -i $R/trep-h$1-kv$2.ncu-rep --page details > $R/tcudnn-h$1-kv$2.txt 2>&1
  rm -f $R/trep-h$1-kv$2.ncu-rep
  grep -E "^  [a-z_].*\(|Grid Size|Block Size|Registers Per|Dynamic Shared|Elapsed Cycles|Duration" \
    $R/tcudnn-h$1-kv$2.txt | head -7
done
call_end G
