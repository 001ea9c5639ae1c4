#!/usr/bin/env bash
# PREPARED in session 27 for session 28, NOT RUN (the device time was spent; issue 13, diagnostic). Carry main's
# binaries (commit.txt = HEAD). ncu (clocks free, one launch each; sections: speed of light, compute and memory
# workload, scheduler and warp-state statistics, instruction mix, occupancy) of the two gaps to FlashAttention-2 that
# session 27's calls A and E located but did not explain:
#  1. the portable forward at d = 128, batch 3 x 12 heads, N = 1280 (call A: +4.9% SM-active cycles in every block):
#     FA2's forward kernel (torch_flash_one.py) and ours;
#  2. the portable backward's main kernel at 24 q / 1 kv head, batch 2, N = 4200, non-causal (call E: ~4.9 us a
#     modelled step where other shapes run 4.1-4.4; 0.960x FA2) and its MHA twin (24 / 24 heads, 0.994x).
R=$OUT/F; mkdir -p $R; export DEADLINE=${DEADLINE:-200}
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
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
sec="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis
  --section SchedulerStats --section WarpStateStats --section InstructionStats --section Occupancy
  --section LaunchStats"
one="--warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q"
s26=results/h200/s26/calls
s27=results/h200/s27/calls
step fwd-torch 45 $ncu --clock-control none --kernel-name regex:flash_fwd --launch-skip 1 --launch-count 1 $sec -f \
  -o $R/fwd-torch python3 $s26/torch_flash_one.py 3 12 1280 128
step fwd-flash 45 $ncu --clock-control none --kernel-name regex:flash_fwd_tc --launch-skip 1 --launch-count 1 $sec \
  -f -o $R/fwd-flash $fb run $s26/epi-odd.json --filter '^b3-h12-kv12-n1280-d128-bf16-full-fwd$' $one \
  -o $R/fwd-flash-run.json
step bwd-mqa 45 $ncu --clock-control none --kernel-name regex:bwd_main_tc_grid --launch-skip 1 --launch-count 1 $sec \
  -f -o $R/bwd-mqa $fb run $s27/gsplit-b2-h24-kv1-n4200.json $one -o $R/bwd-mqa-run.json
step bwd-mha 45 $ncu --clock-control none --kernel-name regex:bwd_main_tc_grid --launch-skip 1 --launch-count 1 $sec \
  -f -o $R/bwd-mha $fb run results/h200/s27/callE/mha-mqa-spec.json --filter kv24 $one -o $R/bwd-mha-run.json
for k in fwd-torch fwd-flash bwd-mqa bwd-mha; do
  [ -f $R/$k.ncu-rep ] && timeout 20 $ncu --import $R/$k.ncu-rep --page details --csv > $R/$k.csv 2>&1
done
python3 $s27/ncu_pairs.py $R | tee $R/table.txt
rm -f $R/*.ncu-rep
tar czf $OUT/F.tgz -C $OUT F && rm -rf $R; echo "done t=$((SECONDS-t0))"
