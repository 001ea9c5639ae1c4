#!/usr/bin/env bash
# Session 55, call S (one Hopper GPU; no rule, a diagnostic): where flash-sm90's d = 128 forward spends its per-tile
# time. Session 53's ncu (results/h100/s53/W/ncu-summary.txt, 132-block grids of both) read, in cycles, ours 230348 /
# 386513 against cuDNN's 219140 / 385000 at 32 x 16 heads N = 512 / 16 x 16 N = 1024 (the same 2048 work tiles of 4
# and 8 K/V steps): fitted per work tile, ours ~2519 cycles a K/V step against cuDNN's ~2675, but ~4785 a tile
# outside the steps against ~3438. Nsight Compute with warp-state sampling per SASS instruction (SourceCounters), one
# launch each of flash-sm90 and the in-binary cudnn at both rows, clocks free: the SASS page as CSV (samples and
# stall reasons an instruction), the details page, for the prologue / loop / epilogue split of the samples.
set -uo pipefail
export DEADLINE=${DEADLINE:-240}
source scripts/call_step.sh
call_begin $OUT/S
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
prof() {  # name filter kernel kernel-regex
  local n=$1
  mkdir -p $R/$n
  step ncu-$n 60 $ncu -f --clock-control none -o $R/$n/rep -k regex:$4 --launch-count 1 --section WarpStateStats \
    --section SourceCounters --section SchedulerStats --section SpeedOfLight --section LaunchStats \
    $fb run configs/issue13-h200.json --kernels $3 --filter "$2" --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q
  if [ -f $R/$n/rep.ncu-rep ]; then
    $ncu -i $R/$n/rep.ncu-rep --page details > $R/$n/details.txt 2>&1
    $ncu -i $R/$n/rep.ncu-rep --page source --csv --print-source sass > $R/$n/source-sass.csv 2>&1
    rm -f $R/$n/rep.ncu-rep
  fi
  grep -E "Duration|Elapsed Cycles|Issued Ipc|No Eligible|Warp Cycles Per Issued" $R/$n/details.txt | head -6
}
prof ours-n512 'b32-h16-kv16-n512-d128-bf16-full-fwd' flash-sm90 flash_sm90_fwd_kernel
prof ours-n1024 'b16-h16-kv16-n1024-d128-bf16-full-fwd' flash-sm90 flash_sm90_fwd_kernel
prof cudnn-n512 'b32-h16-kv16-n512-d128-bf16-full-fwd' cudnn 'cudnn_generated.*fprop'
prof cudnn-n1024 'b16-h16-kv16-n1024-d128-bf16-full-fwd' cudnn 'cudnn_generated.*fprop'
call_end S
