#!/usr/bin/env bash
# Session 55, call B (one Hopper GPU; no rule, a diagnostic): why the 32-query-head non-causal d = 128 backward at
# N = 16384 (batch 1) runs behind torch-cudnn (results/h100/s55/T: 0.940x on 1 K/V head, 0.930x on 8) while the
# papers' 16-head one runs ahead (Y: 1.057x). Ours took 21.40 ms at 32 / 8 against 9.56 at 16 / 16: 2.24x the time
# for 2x the work (torch-cudnn 1.98x). Nsight Compute on one backward of each (the K/V-head split's plan as built):
# every launch's duration, grid and DRAM / L2 throughput (a light pass), then the main kernel with warp-state
# sampling per SASS instruction and the memory workload (L2 atomics, hit rates), clocks free.
set -uo pipefail
export DEADLINE=${DEADLINE:-300}
source scripts/call_step.sh
call_begin $OUT/B
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for row in 1,16,16 1,32,8 1,32,1; do
  IFS=, read -r b h kv <<< "$row"
  n=b$b-h$h-kv$kv
  echo "{\"name\": \"$n\", \"seq\": [16384], \"batch\": [$b], \"heads\": [$h], \"kv_heads\": [$kv], \"head_dim\": [128],
    \"dtype\": [\"bf16\"], \"causal\": [false], \"pass\": [\"bwd\"], \"kernels\": [\"flash-sm90\"], \"seed\": 42,
    \"verify\": false}" > $R/$n.json
  $fb run $R/$n.json --list > $R/$n-list.txt 2>&1
  step light-$n 40 $ncu -f --clock-control none --section SpeedOfLight --section LaunchStats --section MemoryWorkloadAnalysis \
    -o $R/light-$n $fb run $R/$n.json --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q
  [ -f $R/light-$n.ncu-rep ] && $ncu -i $R/light-$n.ncu-rep --page details > $R/light-$n.txt 2>&1 && rm -f $R/light-$n.ncu-rep
  grep -E "^  [a-z_].*\(|Duration|Grid Size|DRAM Throughput|L2 Hit Rate|Memory Throughput" $R/light-$n.txt | head -40
done
for n in b1-h16-kv16 b1-h32-kv8; do
  mkdir -p $R/src-$n
  step src-$n 60 $ncu -f --clock-control none -k regex:flash_sm90_bwd_kernel --launch-count 1 --section WarpStateStats \
    --section SourceCounters --section SchedulerStats --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables \
    -o $R/src-$n/rep $fb run $R/$n.json --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q
  if [ -f $R/src-$n/rep.ncu-rep ]; then
    $ncu -i $R/src-$n/rep.ncu-rep --page details > $R/src-$n/details.txt 2>&1
    $ncu -i $R/src-$n/rep.ncu-rep --page source --csv --print-source sass > $R/src-$n/source-sass.csv 2>&1
    rm -f $R/src-$n/rep.ncu-rep
  fi
  grep -E "Duration|Elapsed Cycles|No Eligible|Warp Cycles Per Issued|L2 Hit" $R/src-$n/details.txt | head -8
done
call_end B
