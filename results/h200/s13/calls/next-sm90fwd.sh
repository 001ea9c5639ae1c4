# Session 13, sm90fwd, optional (~35 s; env BUILD, OUTDIR; for a call with time to spare, else the next session):
# Nsight Compute on one launch of the shipped flash-sm90 d = 128 non-causal forward at N = 512 bf16 (b32 h16, 16k
# tokens: 0.972x the in-binary cudnn in session 13's call A, the row furthest behind at d = 128) and one launch of
# the in-binary cudnn's forward on the same shape, with per-instruction stall reasons (SourceCounters), warp
# states, scheduler, speed of light and memory (L2 hit rate, DRAM); the report, its details page as CSV and its SASS
# source page as CSV for each. No d = 128 profile at N <= 1024 exists yet: call A's kvpf said the gap there is not
# K/V arrival, and sessions 8-12 took the boundary's instructions apart; this is to see where cudnn's time differs.
#   BUILD=<build dir> OUTDIR=<dir> bash results/h200/s13/calls/next-sm90fwd.sh
mkdir -p "$OUTDIR"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for k in flash-sm90 cudnn; do
  case $k in flash-sm90) re=flash_sm90_fwd_kernel ;; cudnn) re=fprop ;; esac
  [ $SECONDS -le 40 ] || { echo "ncu-$k skipped (t=${SECONDS}s)"; continue; }
  timeout 14 "$ncu" --clock-control none --kernel-name regex:$re --launch-count 1 --section SourceCounters \
    --section WarpStateStats --section SchedulerStats --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section LaunchStats --import-source no -f -o "$OUTDIR/ncu-d128-n512-$k" \
    "$BUILD/flashbench" run configs/fwd-bf16-h200.json --filter '^b32-h16-kv16-n512-d128-bf16-full-fwd$' --kernels $k \
    --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q -o "$OUTDIR/ncu-run-$k.json" > "$OUTDIR/ncu-$k.log" 2>&1
  echo "ncu-$k rc=$? t=${SECONDS}s"
  rep=$OUTDIR/ncu-d128-n512-$k.ncu-rep
  [ -f "$rep" ] || continue
  timeout 6 "$ncu" --import "$rep" --page source --print-source sass --csv > "$OUTDIR/ncu-d128-n512-$k-sass.csv" 2>&1
  timeout 4 "$ncu" --import "$rep" --page details --csv > "$OUTDIR/ncu-d128-n512-$k-details.csv" 2>&1
  python3 - "$OUTDIR/ncu-d128-n512-$k-details.csv" <<'PY'
import csv, sys
keep = ("Duration", "Grid Size", "Block Size", "Registers Per Thread", "Dynamic Shared Memory Per Block",
        "Issue Slots Busy", "No Eligible", "Active Warps Per Scheduler", "Eligible Warps Per Scheduler",
        "Warp Cycles Per Issued Instruction", "Compute (SM) Throughput", "L2 Hit Rate", "DRAM Throughput")
try:
    for r in csv.DictReader(open(sys.argv[1])):
        if r.get("Metric Name") in keep:
            print(f'  {r["Metric Name"]}: {r["Metric Value"]} {r["Metric Unit"]}')
except (OSError, csv.Error) as e:
    print(f"  ({e})")
PY
done
