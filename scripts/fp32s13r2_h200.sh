#!/usr/bin/env bash
# Session 13's round-2 call (call B) for flash-sm90's fp32 backward (issue 15, d = 64), in <= 38 s (BUDGET):
#   scripts/fp32s13r2_h200.sh OUTDIR [BUILD_DIR=build]
# Data for session 14 (no default changes after it; ran in call B, the probe removed after it: commit 58dae74 has it). The probe (FB_SM90_FP32_BWD_PROBE=trunc, Tf32BwdTruncHi in
# kernels/flash_sm90/flash_sm90_tf32_bwd_traits.h): Q's and dO's hi is the raw tile itself, which a .tf32 wgmma reads
# truncated, and lo = tf32_rn(x - trunc(x)); the producer's split then writes lo only and its transposes read the raw
# tile only: 32 KB a (128 keys x 32 queries) tile less shared-memory traffic (of ~576 KB; call A's ncu: LSU 75%).
# 1. Timing (scripts/fp32s8_h200.sh; configs/h200-fp32-sm90.json's d = 64 backward rows: non-causal N 1024 / 4096 /
#    8192, causal 4096; warmup 1, reps 3, every row verified against fp64; two rounds, each cell the faster): naive
#    (exact FP32, the peer), the default, trunc.
# 2. GPU tests [sm90tf32] under trunc (3xTF32 within the FP32 rule, 1xTF32 failing it).
# 3. Accuracy from the timing rows' verification: each output's max error against fp64 and its bound, default vs
#    trunc (a different hi: the errors should stay the default's order).
# 4. While time is left: ncu of one launch, d = 64 non-causal N = 4096, default then trunc (LSU wavefronts should fall
#    ~5%, the time with them if the shared-memory traffic bounds the kernel).
# Prints last: the steps, the accuracy lines, the ncu comparison, then the timing table (x = naive time / kernel time).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${1:?usage: scripts/fp32s13r2_h200.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
mkdir -p "$out"
fb="$build/flashbench"
tests="$build/tests/flashbench_gpu_tests"
step_timeout=20
step_tail=0
step_name_width=14
# shellcheck source=scripts/h200_step.sh
source scripts/h200_step.sh
ensure_build fp32s13r2_h200.sh
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null
budget=${BUDGET:-38}
left() { echo $((budget - SECONDS)); }
cap() { local l; l=$(left); echo $(( l < $1 ? l : $1 )); }  # a step's limit: at most $1 s, never past the budget
probes="trunc"
rows='n(1024|4096|8192)-d64-fp32-full-bwd|n4096-d64-fp32-causal-bwd'

# Timing: round 2 only if round 1 ended within 12 s (call A: 5 s for naive + default, 3 s a probe).
STEP_TIMEOUT=26 step timing env STEP_TIMEOUT=10 FP32_BWD_PROBES="$probes" FP32_BWD_CONFIG=configs/h200-fp32-sm90.json \
  FP32_BWD_BUDGET=12 FP32_BWD_FILTER="$rows" FP32_BWD_PROBE_FILTER="$rows" scripts/fp32s8_h200.sh "$out/timing" "$build"
for pr in $probes; do
  [ "$(cap 6)" -ge 2 ] || { echo "tests-$pr skipped: $(left) s left" >&2; continue; }
  FB_SM90_FP32_BWD_PROBE=$pr STEP_TIMEOUT=$(cap 6) step_result='test cases' step "tests-$pr" "$tests" "[sm90tf32]"
done

ncu=${NCU_BIN:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
sections=(--section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis
          --section MemoryWorkloadAnalysis --section SpeedOfLight)
ncu_runs=(default trunc)
for pr in "${ncu_runs[@]}"; do
  [ "$(left)" -ge 7 ] || { echo "ncu-$pr skipped: $(left) s left" >&2; continue; }
  FB_SM90_FP32_BWD_PROBE=$pr STEP_TIMEOUT=$(cap 9) step "ncu-$pr" "$ncu" \
    --kernel-name regex:flash_sm90_tf32_bwd_kernel --launch-count 1 "${sections[@]}" --page raw --csv \
    "$fb" run configs/h200-fp32-sm90.json --filter 'n4096-d64-fp32-full-bwd' --kernels flash-sm90 \
    --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q
done

printf '%s\n' "${summary[@]}"
python3 - "$out/timing" $probes <<'PY'
import json, os, sys
out, probes = sys.argv[1], sys.argv[2:]
def rows(name):
    try:
        return json.load(open(os.path.join(out, name + ".json")))["results"]
    except (OSError, ValueError, KeyError):
        return []
print("accuracy (round 1; max error against fp64 / its bound, per output):")
base = {r["key"]: r for r in rows("bwd.1") if r["kernel"] == "flash-sm90"}
for pr in probes:
    for r in rows(f"bwd-{pr}.1"):
        b = base.get(r["key"])
        def fmt(x):
            e = (x or {}).get("errors", {})
            return " ".join(f"{k} {v['ref']:.2e}/{v['bound']:.1e}" for k, v in sorted(e.items())
                            if isinstance(v, dict) and "ref" in v)
        print(f"  {r['key']}: default {fmt(b)}")
        print(f"  {' ' * len(r['key'])}  {pr:7} {fmt(r)}")
PY
python3 - "$out" "${ncu_runs[@]}" <<'PY'
import csv, os, sys
out, runs = sys.argv[1], sys.argv[2:]
metrics = [("gpu__time_duration.sum", "time"),
           ("sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
            "tensor pipe %"),
           ("l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed", "LSU wavefronts %"),
           ("l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed", "smem bank reads %"),
           ("l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed", "smem bank writes %"),
           ("smsp__issue_active.avg.pct_of_peak_sustained_active", "issue active %"),
           ("smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio", "stall gmma"),
           ("smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", "stall barrier"),
           ("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", "stall long sb"),
           ("smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio", "stall mio"),
           ("smsp__average_warps_issue_stalled_wait_per_issue_active.ratio", "stall wait")]
cols = {}
for pr in runs:
    try:
        lines = [l for l in open(os.path.join(out, f"ncu-{pr}.log")) if l.startswith('"')]
        rows = list(csv.DictReader(lines))
        if len(rows) > 1:
            cols[pr] = rows[1]  # units, then the one launch
    except OSError:
        pass
if cols:
    print("ncu, one launch, d = 64 non-causal N = 4096 (fp32 backward):", " | ".join(f"{p:>10}" for p in cols))
    for key, name in metrics:
        print(f"  {name:20}" + " | ".join(f"{cols[p].get(key, '-'):>10}" for p in cols))
    def count(c):  # the wavefronts themselves: % of peak x duration
        try:
            return f"{float(c['l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed']) * float(c['gpu__time_duration.sum'].replace(',', '')) / 1e8:10.3f}"
        except (KeyError, ValueError):
            return f"{'-':>10}"
    print(f"  {'LSU % x time (rel)':20}" + " | ".join(count(cols[p]) for p in cols))
PY
cat "$out/timing/table.txt" 2>/dev/null
cp "$out/timing/table.txt" "$out/table.txt" 2>/dev/null
echo "failed steps: $failed"
exit "$failed"
