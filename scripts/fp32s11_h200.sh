#!/usr/bin/env bash
# Session 11's device call for flash-sm90's fp32 backward (issue 15, d = 64 non-causal), in about 60 s:
#   scripts/fp32s11_h200.sh OUTDIR [BUILD_DIR=build]
# 1. Timing (scripts/fp32s8_h200.sh on configs/h200-fp32-sm90.json's backward, warmup 1, reps 3, every row verified
#    against fp64; two rounds while its budget lasts): naive and the default on d = 64 non-causal N 1024 / 4096 /
#    8192, d = 64 causal N 4096 and d = 128 non-causal N 4096; the d = 64 probes of
#    kernels/flash_sm90/flash_sm90_tf32_bwd.cu (FB_SM90_FP32_BWD_PROBE = dsreg: dK's A fragments from the dS
#    registers; dqp: dQ^T, its staging and its reductions by the producer warpgroup) on the d = 64 rows.
# 2. GPU tests [sm90tf32] under dqp and dsreg (3xTF32 within the FP32 rule, 1xTF32 failing it).
# 3. ncu, one launch each of the d = 64 kernel (non-causal, N = 4096): the default and dqp, a few metrics of the
#    SpeedOfLight / Compute / Memory / WarpState / Scheduler sections (shared-memory pipe and bank use, tensor
#    pipe, issue, stall reasons): where the time goes.
# 4. Under dqp (while time is left): synccheck, then racecheck on the d = 64 race case.
# Prints last: the steps' status lines, the ncu comparison, then the timing table (x = naive time / kernel time).
# Its probes ran in session 11's call A (results/h200/s11/callA/fp32/): after it dsreg is the shipping d = 64 kernel
# and dqp is removed with the probe words (each probe column then times the default again; the dqp steps test and
# profile the default).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${1:?usage: scripts/fp32s11_h200.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
mkdir -p "$out"
fb="$build/flashbench"
tests="$build/tests/flashbench_gpu_tests"
step_timeout=20
step_tail=0
step_name_width=14
# shellcheck source=scripts/h200_step.sh
source scripts/h200_step.sh
ensure_build fp32s11_h200.sh
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null
budget=${BUDGET:-63}
left() { echo $((budget - SECONDS)); }
probes="dsreg dqp"

# Timing: its own steps 14 s each at most, the whole 36 s; round 2 only if round 1 ended within 15 s (~13 s a round).
STEP_TIMEOUT=36 step timing env STEP_TIMEOUT=14 FP32_BWD_PROBES="$probes" FP32_BWD_CONFIG=configs/h200-fp32-sm90.json \
  FP32_BWD_BUDGET=15 FP32_BWD_FILTER='n(1024|4096|8192)-d64-fp32-full-bwd|n4096-d64-fp32-causal-bwd|n4096-d128-fp32-full-bwd' \
  FP32_BWD_PROBE_FILTER='n(1024|4096|8192)-d64-fp32-full-bwd|n4096-d64-fp32-causal-bwd' \
  scripts/fp32s8_h200.sh "$out/timing" "$build"
for pr in dqp dsreg; do
  FB_SM90_FP32_BWD_PROBE=$pr STEP_TIMEOUT=10 step_result='test cases' step "tests-$pr" "$tests" "[sm90tf32]"
done

ncu=${NCU_BIN:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
sections=(--section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis
          --section MemoryWorkloadAnalysis --section SpeedOfLight)
for pr in default dqp; do
  [ "$(left)" -ge 12 ] || break
  FB_SM90_FP32_BWD_PROBE=$pr STEP_TIMEOUT=$(( $(left) < 12 ? $(left) : 12 )) step "ncu-$pr" "$ncu" \
    --kernel-name regex:flash_sm90_tf32_bwd_kernel --launch-count 1 "${sections[@]}" --page raw --csv \
    "$fb" run configs/h200-fp32-sm90.json --filter 'n4096-d64-fp32-full-bwd' --kernels flash-sm90 \
    --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q
done
if [ "$(left)" -ge 5 ]; then
  FB_SM90_FP32_BWD_PROBE=dqp STEP_TIMEOUT=$(( $(left) < 6 ? $(left) : 6 )) step sync-dqp scripts/sanitize.sh -e "$fb" \
    -s configs/sanitize-fp32-bwd.json -t synccheck "$out/sync-dqp.json"
fi
if [ "$(left)" -ge 8 ]; then
  FB_SM90_FP32_BWD_PROBE=dqp STEP_TIMEOUT=$(left) step race-dqp compute-sanitizer --tool racecheck \
    --racecheck-report all --print-limit 1000000 --show-backtrace no --error-exitcode 86 "$fb" run \
    configs/sanitize-fp32-bwd-race.json --backend cuda -q --no-ceilings --warmup-time 0 --filter d64 \
    -o "$out/race-dqp.json"
fi

printf '%s\n' "${summary[@]}"
[ -f "$out/sync-dqp.log" ] && echo "sync-dqp: $(grep -hE '^synccheck ' "$out/sync-dqp.log" | tail -n 1)"
[ -f "$out/race-dqp.log" ] && echo "race-dqp: $(grep -hE 'RACECHECK SUMMARY' "$out/race-dqp.log" | tail -n 1)"
python3 - "$out" <<'PY'
import csv, os, sys
out = sys.argv[1]
metrics = [("gpu__time_duration.sum", "time"),
           ("sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
            "tensor pipe %"),
           ("sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_elapsed", "shared pipe %"),
           ("l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed", "smem bank reads %"),
           ("l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed", "smem bank writes %"),
           ("l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed", "LSU wavefronts %"),
           ("smsp__issue_active.avg.pct_of_peak_sustained_active", "issue active %"),
           ("smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio", "stall gmma"),
           ("smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", "stall barrier"),
           ("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", "stall long sb"),
           ("smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio", "stall short sb"),
           ("smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio", "stall mio"),
           ("smsp__average_warps_issue_stalled_membar_per_issue_active.ratio", "stall membar"),
           ("smsp__average_warps_issue_stalled_wait_per_issue_active.ratio", "stall wait"),
           ("smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio", "stall sleeping")]
cols = {}
for pr in ("default", "dqp"):
    try:
        lines = [l for l in open(os.path.join(out, f"ncu-{pr}.log")) if l.startswith('"')]
        rows = list(csv.DictReader(lines))
        cols[pr] = rows[1] if len(rows) > 1 else {}  # units, then the one launch
    except (OSError, IndexError):
        cols[pr] = {}
print("ncu, one launch, d = 64 non-causal N = 4096 (fp32 backward):", " | ".join(f"{p:>10}" for p in cols))
for key, name in metrics:
    print(f"  {name:20}" + " | ".join(f"{cols[p].get(key, '-'):>10}" for p in cols))
PY
cat "$out/timing/table.txt" 2>/dev/null
echo "failed steps: $failed"
exit "$failed"
