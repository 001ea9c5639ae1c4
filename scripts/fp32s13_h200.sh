#!/usr/bin/env bash
# Session 13's device call for flash-sm90's fp32 backward (issue 15, d = 64 non-causal), in about 60 s:
#   scripts/fp32s13_h200.sh OUTDIR [BUILD_DIR=build]
# (Prepared in session 12 on branch fp3213, dslate added in session 13; docs/perf-notes.md fp32 "Session 13". Ran in
# session 13's call A; the three probes were removed after it (commit ea0fa75 has them): this script records that call.)
# 1. Timing (scripts/fp32s8_h200.sh on configs/h200-fp32-sm90.json's backward, warmup 1, reps 3, every row verified
#    against fp64; a second round while its budget lasts): naive (exact FP32) and the default on d = 64 non-causal
#    N 1024 / 4096 / 8192 and causal N 4096, and the d = 64 probes of kernels/flash_sm90/flash_sm90_tf32_bwd.cu
#    (FB_SM90_FP32_BWD_PROBE = lofrag: lo*hi of S^T's / dP^T's first four k8 steps with A = K lo / V lo from
#    registers (RS wgmma), the fragments loaded at the top of each tile before its wait for Q / dO; lofragdq: the
#    same fragments loaded behind the previous tile's dQ^T; dslate: dS's stores to shared memory, and the barrier
#    before them, issued under dV's first wgmmas instead of ahead of dV / dK) on those rows.
# 2. GPU tests [sm90tf32] under each probe (3xTF32 within the FP32 rule, 1xTF32 failing it).
# 3. Bits: one small d = 64 case (N = 1024, 2 heads on 1 K/V head, verified) under the default and each probe with
#    --dump (to a scratch folder off OUTDIR), then each probe's flash-sm90 outputs compared with the default's byte
#    for byte (cmp): dK and dV must be identical (the same products into the same accumulation chains, under every
#    probe); dQ is added by reductions in global memory in a varying order, so its last bits may differ between any
#    two runs.
# 4. While time is left: racecheck of the d = 64 race case under dslate (it moves a barrier; 2 reps, unverified:
#    racecheck instruments the reference too); ncu, one launch each of the d = 64 kernel (non-causal, N = 4096),
#    the default and dslate: duration, tensor pipe, LSU wavefronts, shared bank reads, issue, stalls; then ncu of
#    lofragdq (the lofrag probes move 32 KB a tile from wgmma operand reads to LDS: the LSU total should stay).
# Prints last: the steps' status lines, the bit comparison, the ncu comparison, the racecheck summary, then the
# timing table (x = naive time / kernel time).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${1:?usage: scripts/fp32s13_h200.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
mkdir -p "$out"
fb="$build/flashbench"
tests="$build/tests/flashbench_gpu_tests"
step_timeout=20
step_tail=0
step_name_width=17
# shellcheck source=scripts/h200_step.sh
source scripts/h200_step.sh
ensure_build fp32s13_h200.sh
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null
budget=${BUDGET:-63}
left() { echo $((budget - SECONDS)); }
cap() { local l; l=$(left); echo $(( l < $1 ? l : $1 )); }  # a step's limit: at most $1 s, never past the budget
probes="lofrag lofragdq dslate"
rows='n(1024|4096|8192)-d64-fp32-full-bwd|n4096-d64-fp32-causal-bwd'

# Timing: its own steps 12 s each at most; round 2 only if round 1 ended within 16 s (session 12's call A: 14 and
# 15 s a round with three probes, 3-4 s a step), so that both end inside the 36 s limit (cut, fp32s8_h200.sh would
# print no table).
STEP_TIMEOUT=36 step timing env STEP_TIMEOUT=12 FP32_BWD_PROBES="$probes" FP32_BWD_CONFIG=configs/h200-fp32-sm90.json \
  FP32_BWD_BUDGET=16 FP32_BWD_FILTER="$rows" FP32_BWD_PROBE_FILTER="$rows" scripts/fp32s8_h200.sh "$out/timing" "$build"
for pr in $probes; do
  [ "$(cap 6)" -ge 2 ] || { echo "tests-$pr skipped: $(left) s left" >&2; continue; }
  FB_SM90_FP32_BWD_PROBE=$pr STEP_TIMEOUT=$(cap 6) step_result='test cases' step "tests-$pr" "$tests" "[sm90tf32]"
done

python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
s.update(name='fp32-bwd-bits-d64', seq=[1024], head_dim=[64], reps=1,
         description='the d = 64 fp32 backward dumped under each probe (scripts/fp32s13_h200.sh)')
json.dump(s, open(sys.argv[2], 'w'), indent=1)" configs/sanitize-fp32-bwd-race.json "$out/bits-spec.json"
dumps=$(mktemp -d)
for pr in default $probes; do
  [ "$(cap 5)" -ge 2 ] || { echo "bits-$pr skipped: $(left) s left" >&2; continue; }
  FB_SM90_FP32_BWD_PROBE=$pr STEP_TIMEOUT=$(cap 5) step "bits-$pr" "$fb" run "$out/bits-spec.json" --backend cuda -q \
    --no-ceilings --warmup-time 0 --dump "$dumps/$pr" -o "$out/bits-$pr.json"
done
bits=()
for pr in $probes; do
  for f in "$dumps/default"/*/flash-sm90.*.npy; do
    [ -f "$f" ] || continue
    g="$dumps/$pr/${f#"$dumps/default/"}"
    name=$(basename "$f" .npy)
    if [ ! -f "$g" ]; then bits+=("$pr ${name#flash-sm90.}: missing")
    elif cmp -s "$f" "$g"; then bits+=("$pr ${name#flash-sm90.}: identical")
    else bits+=("$pr ${name#flash-sm90.}: differs")
    fi
  done
done
rm -rf "$dumps"

ncu=${NCU_BIN:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
sections=(--section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis
          --section MemoryWorkloadAnalysis --section SpeedOfLight)
ncu_one() {  # probe word (default: none)
  [ "$(left)" -ge 10 ] || { echo "ncu-$1 skipped: $(left) s left" >&2; return; }
  FB_SM90_FP32_BWD_PROBE=$1 STEP_TIMEOUT=$(( $(left) < 12 ? $(left) : 12 )) step "ncu-$1" "$ncu" \
    --kernel-name regex:flash_sm90_tf32_bwd_kernel --launch-count 1 "${sections[@]}" --page raw --csv \
    "$fb" run configs/h200-fp32-sm90.json --filter 'n4096-d64-fp32-full-bwd' --kernels flash-sm90 \
    --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q
}
ncu_runs=(default dslate lofragdq)
# The d = 64 race case unverified (it is verified in every other run of it): racecheck instruments every kernel of
# the process, and the fp64 reference would take the step's time; 2 reps and the 0.1 s warm-up loop: several launches.
# Under dslate: it moves the barrier before dS's stores to behind dV's first wgmmas.
race_word=dslate
python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
s.update(name='sanitize-fp32-bwd-race-d64', head_dim=[64], reps=2, verify=False,
         description='racecheck of the d = 64 fp32 backward (scripts/fp32s13_h200.sh), unverified')
json.dump(s, open(sys.argv[2], 'w'), indent=1)" configs/sanitize-fp32-bwd-race.json "$out/race-spec.json"
if [ "$(left)" -ge 6 ]; then
  FB_SM90_FP32_BWD_PROBE=$race_word STEP_TIMEOUT=$(( $(left) < 10 ? $(left) - 1 : 9 )) step "race-$race_word" \
    compute-sanitizer --tool racecheck --racecheck-report all --print-limit 1000000 --show-backtrace no \
    --error-exitcode 86 "$fb" run "$out/race-spec.json" --backend cuda -q --no-ceilings -o "$out/race-$race_word.json"
else
  echo "race-$race_word skipped: $(left) s left" >&2
fi
# ncu in pairs that compare: the default first.
ncu_one default
ncu_one dslate
ncu_one lofragdq

printf '%s\n' "${summary[@]}"
echo "bits against the default (N = 1024, d = 64): ${bits[*]:-none compared}"
[ -f "$out/race-$race_word.log" ] &&
  echo "race-$race_word: $(grep -hE 'RACECHECK SUMMARY' "$out/race-$race_word.log" | tail -n 1) ($(grep -c 'Potential' "$out/race-$race_word.log") printed)"
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
           ("smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio", "stall short sb"),
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
    # The wavefronts themselves (the probes move bytes, they should not change this): % of peak x duration.
    def count(c):
        try:
            return f"{float(c['l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed']) * float(c['gpu__time_duration.sum'].replace(',', '')) / 1e8:10.3f}"
        except (KeyError, ValueError):
            return f"{'-':>10}"
    print(f"  {'LSU % x time (rel)':20}" + " | ".join(count(cols[p]) for p in cols))
PY
cat "$out/timing/table.txt" 2>/dev/null
echo "failed steps: $failed"
exit "$failed"
