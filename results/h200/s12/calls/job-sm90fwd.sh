# Session 12 call A, sm90fwd (issue 13; ~58 s): flash-sm90's 16-bit forward as shipped beside its main-loop
# probes `ustage` (the loop once per ring stage of a work tile's first K/V tile, so that stages are literals
# and descriptors/barrier addresses are built on the uniform datapath: d = 64 loop 487 -> 425-443 SASS
# instructions a K/V tile, d = 128 531 -> 480-507), `poly` (one exponential in 8 on the FMA pipe) and both,
# each run beside the in-binary cudnn and verified (same-process ratios); the GPU tests as shipped and
# [sm90fwd],[sched] under ustage,poly. Rows: d = 64 causal and not at N 512/1k/4k/16k, d = 128 non-causal at
# N 512/1k/4k (bf16, configs/fwd-bf16-h200.json: 16k tokens, model dim 2048). Then, if time is left, one
# Nsight Compute launch of the shipped d = 64 N = 1024 non-causal kernel with per-instruction stall reasons
# (SourceCounters; the report and its SASS page as CSV), and the same for ustage.
CONFIG=configs/fwd-bf16-h200.json RUN_ARGS='--warmup 3 --reps 10' \
  FILTER='n(512|1024|4096|16384)-d64-bf16-(full|causal)|n(512|1024|4096)-d128-bf16-full' \
  TEST_PROBES='ustage,poly' PROBE_TESTS='[sm90fwd],[sched]' BUDGET_S=42 \
  scripts/sm90fwd_h200.sh "$OUTDIR" ustage poly ustage,poly
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in ship ustage; do
  [ $((SECONDS + 14)) -le 60 ] || { echo "ncu-$v skipped (t=${SECONDS}s)"; break; }
  FB_SM90_FWD_PROBE=${v#ship} timeout 12 "$ncu" --clock-control none --kernel-name regex:flash_sm90_fwd_kernel \
    --launch-count 1 --section SourceCounters --section WarpStateStats --section SchedulerStats \
    --section SpeedOfLight --import-source no -f -o "$OUTDIR/ncu-d64-n1024-$v" \
    "$BUILD/flashbench" run configs/fwd-bf16-h200.json --filter 'n1024-d64-bf16-full' --kernels flash-sm90 \
    --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q -o "$OUTDIR/ncu-run-$v.json" > "$OUTDIR/ncu-$v.log" 2>&1
  echo "ncu-$v rc=$? t=${SECONDS}s"
  rep=$OUTDIR/ncu-d64-n1024-$v.ncu-rep
  [ -f "$rep" ] || continue
  timeout 5 "$ncu" --import "$rep" --page source --print-source sass --csv > "$OUTDIR/ncu-d64-n1024-$v-sass.csv" 2>&1
  timeout 3 "$ncu" --import "$rep" --page details --csv > "$OUTDIR/ncu-d64-n1024-$v-details.csv" 2>&1
  python3 - "$OUTDIR/ncu-d64-n1024-$v-details.csv" <<'PY'
import csv, sys
keep = ("Duration", "Issue Slots Busy", "No Eligible", "Active Warps Per Scheduler", "Eligible Warps Per Scheduler",
        "Warp Cycles Per Issued Instruction", "Compute (SM) Throughput")
try:
    for r in csv.DictReader(open(sys.argv[1])):
        if r.get("Metric Name") in keep:
            print(f'  {r["Metric Name"]}: {r["Metric Value"]} {r["Metric Unit"]}')
except (OSError, csv.Error) as e:
    print(f"  ({e})")
PY
done
echo "--- table again (t=${SECONDS}s)"
tail -n 16 "$OUTDIR/table.txt"
