#!/usr/bin/env bash
# Session 12, final call 2, round 2 (data for the next session; no default changes): flash-sm90 forward
# `ustage` at d = 128 again (call A: level, 0.984-1.016x) and `noustage` at d = 64 (the new default off)
# beside the in-binary cudnn, every row verified; then ncu of the new d = 64 default (ustage) at N = 1024
# non-causal, the profile call A skipped for time. <= 40 s. BUILD=<build dir> OUTDIR=<dir>.
CONFIG=configs/fwd-bf16-h200.json RUN_ARGS='--warmup 3 --reps 10' \
  FILTER='n(1024|4096)-d64-bf16-full|n(512|1024|4096)-d128-bf16-full' TEST_PROBES=noustage BUDGET_S=22 \
  scripts/sm90fwd_h200.sh "$OUTDIR" ustage noustage
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 12 "$ncu" --clock-control none --kernel-name regex:flash_sm90_fwd_kernel --launch-count 1 \
  --section SourceCounters --section WarpStateStats --section SchedulerStats --section SpeedOfLight \
  --import-source no -f -o "$OUTDIR/ncu-d64-n1024-default" "$BUILD/flashbench" run configs/fwd-bf16-h200.json \
  --filter 'n1024-d64-bf16-full' --kernels flash-sm90 --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q \
  -o "$OUTDIR/ncu-run-default.json" > "$OUTDIR/ncu-default.log" 2>&1
echo "ncu rc=$?"
rep=$OUTDIR/ncu-d64-n1024-default.ncu-rep
if [ -f "$rep" ]; then
  timeout 5 "$ncu" --import "$rep" --page source --print-source sass --csv > "$OUTDIR/ncu-d64-n1024-default-sass.csv" 2>&1
  timeout 3 "$ncu" --import "$rep" --page details > "$OUTDIR/ncu-d64-n1024-default-details.txt" 2>&1
  rm -f "$rep"
  grep -E "Duration|Issue Slots Busy|No Eligible|Warp Cycles Per Issued" "$OUTDIR/ncu-d64-n1024-default-details.txt" | head -6
fi
tail -n 10 "$OUTDIR/table.txt"
