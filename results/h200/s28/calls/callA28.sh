#!/usr/bin/env bash
# Session 28, call A (issue 13, diagnostic): session 27's prepared call F (s27/calls/callF27.sh) with the source
# counters added, and flash-sm90's forward at N = 1280 beside cuDNN's. Carry main's binaries (commit.txt = HEAD).
# ncu (clocks free, one launch each after a warm-up launch; sections: speed of light, compute and memory workload,
# scheduler and warp-state statistics, instruction mix, occupancy, launch, and for the forwards the source counters:
# executed instructions and warp-stall samples per SASS line):
#  1. the portable forward at d = 128, batch 3 x 12 heads, N = 1280 (session 27's call A: +4.9% SM-active cycles in
#     every block): FlashAttention-2's forward kernel and ours;
#  2. the portable backward's main kernel at 24 q / 1 kv head, batch 2, N = 4200, non-causal (0.960x FA2) and its MHA
#     twin (24 / 24 heads, 0.994x);
#  3. flash-sm90's d = 128 non-causal forward at batch 3 x 12 heads N = 1280 (session 25's call B: the N = 1280
#     forwards 0.951-0.997x torch-cudnn; 360 query tiles, 2.7 rounds of 132) and torch-cudnn's forward kernel.
#     (The grid's N = 1k row was profiled in session 16: level per cycle, the gap the clock under the power cap.)
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-330}
set -uo pipefail
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {  # step NAME MAX_SECONDS CMD...: skipped when under MAX/2 is left
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt $(( max / 2 )) ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; timeout -k 3 $max "$@" < /dev/null > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"
}
tar xJf out/b.txz
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
fb=$src/build-dev/flashbench
cat out/commit.txt > $R/commit.txt 2>/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > $R/gpu.txt 2>&1
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
sec="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis
  --section SchedulerStats --section WarpStateStats --section InstructionStats --section Occupancy
  --section LaunchStats"
src_sec="--section SourceCounters --import-source no"
one="--warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q"
s25=results/h200/s25/calls
s26=results/h200/s26/calls
s27=results/h200/s27/calls
step fwd-torch 60 $ncu --clock-control none --kernel-name regex:flash_fwd --launch-skip 1 --launch-count 1 $sec \
  $src_sec -f -o $R/fwd-torch python3 $s26/torch_flash_one.py 3 12 1280 128
step fwd-flash 60 $ncu --clock-control none --kernel-name regex:flash_fwd_tc --launch-skip 1 --launch-count 1 $sec \
  $src_sec -f -o $R/fwd-flash $fb run $s26/epi-odd.json --filter '^b3-h12-kv12-n1280-d128-bf16-full-fwd$' $one \
  -o $R/fwd-flash-run.json
step sm90-cudnn 60 $ncu --clock-control none --kernel-name regex:fprop --launch-skip 1 --launch-count 1 $sec \
  $src_sec -f -o $R/sm90-cudnn python3 $s25/torch_cudnn_one.py 3 12 1280 128
step sm90-ours 60 $ncu --clock-control none --kernel-name regex:flash_sm90_fwd_kernel --launch-skip 1 \
  --launch-count 1 $sec $src_sec -f -o $R/sm90-ours $fb run $s26/epi-odd.json --kernels flash-sm90 \
  --filter '^b3-h12-kv12-n1280-d128-bf16-full-fwd$' $one -o $R/sm90-ours-run.json
step bwd-mqa 45 $ncu --clock-control none --kernel-name regex:bwd_main_tc_grid --launch-skip 1 --launch-count 1 $sec \
  -f -o $R/bwd-mqa $fb run $s27/gsplit-b2-h24-kv1-n4200.json $one -o $R/bwd-mqa-run.json
step bwd-mha 45 $ncu --clock-control none --kernel-name regex:bwd_main_tc_grid --launch-skip 1 --launch-count 1 $sec \
  -f -o $R/bwd-mha $fb run results/h200/s27/callE/mha-mqa-spec.json --filter kv24 $one -o $R/bwd-mha-run.json
for k in fwd-torch fwd-flash sm90-cudnn sm90-ours bwd-mqa bwd-mha; do
  [ -f $R/$k.ncu-rep ] || continue
  timeout 20 $ncu --import $R/$k.ncu-rep --page details --csv > $R/$k.csv 2>&1
  case $k in bwd-*) ;; *) timeout 30 $ncu --import $R/$k.ncu-rep --page source --csv --print-source sass \
    > $R/$k-sass.csv 2>&1; python3 results/h200/s28/calls/sass_hot.py $R/$k-sass.csv 40 > $R/$k-hot.txt 2>&1 ;; esac
done
python3 $s27/ncu_pairs.py $R fwd-torch:fwd-flash sm90-cudnn:sm90-ours bwd-mha:bwd-mqa > $R/table.txt 2>&1
rm -f $R/*.ncu-rep
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
