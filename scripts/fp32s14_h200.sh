#!/usr/bin/env bash
# Session 14's call A for flash-sm90's fp32 backward (issue 15, d = 64 non-causal), in <= 63 s (BUDGET):
#   scripts/fp32s14_h200.sh OUTDIR [BUILD_DIR=build]
# (Prepared in session 13 on branch fp3214; docs/perf-notes.md fp32 backward, "Session 14 (prepared in session 13)".)
# The probe (FB_SM90_FP32_BWD_PROBE=dotfirst, Tf32BwdDotFirst in kernels/flash_sm90/flash_sm90_tf32_bwd_traits.h): the
# producer transposes dO before Q and arrives on t_ready after dO^T, then on a new qt_ready after Q^T; the consumers issue
# dV's wgmmas once dO^T is written and dK's once Q^T is, instead of both after one barrier over both transposes. The
# same products into the same accumulation chains: dK and dV bit-identical to the default.
# 1. Timing (scripts/fp32s8_h200.sh; configs/h200-fp32-sm90.json's d = 64 backward rows: non-causal N 1024 / 4096 /
#    8192, causal 4096; warmup 1, reps 3, every row verified against fp64; two rounds, each cell the faster): naive
#    (exact FP32, the peer), the default, dotfirst. The probe's rows run without naive in the process, so they are
#    checked against the dtype bound; steps 2 and 3 apply the strict rule.
# 2. GPU tests [sm90tf32] under dotfirst (3xTF32 within the FP32 rule, 1xTF32 failing it).
# 3. Bits: one small d = 64 case (N = 1024, 2 heads on 1 K/V head, verified) dumped under the default and dotfirst
#    (--dump, to a scratch folder), compared byte for byte: dK and dV must be identical; dQ is added by reductions in
#    global memory in a varying order, so its last bits may differ between any two runs.
# 4. While time is left: ncu of one launch, d = 64 non-causal N = 4096, the default then dotfirst, with the source
#    counters (stall sampling per SASS instruction): the usual metrics (time, tensor pipe, LSU wavefronts, stalls) and
#    the samples at each mbarrier wait by barrier (the consumers' t_ready / qt_ready: the wait on the producer's
#    transposes that the probe is for; the producer's qd_empty / raw_full / t_empty) and at the wgmma waits.
#    The source pages stay in OUTDIR (source-*.csv.gz) for session 14.
# 5. While time is left: racecheck of the d = 64 race case under dotfirst (it adds a barrier).
# Prints last: the steps, the bit comparison, the ncu comparison, the waits, then the timing table (x = naive time /
# kernel time), also in OUTDIR/table.txt.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${1:?usage: scripts/fp32s14_h200.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
mkdir -p "$out"
fb="$build/flashbench"
tests="$build/tests/flashbench_gpu_tests"
step_timeout=20
step_tail=0
step_name_width=15
# shellcheck source=scripts/h200_step.sh
source scripts/h200_step.sh
ensure_build fp32s14_h200.sh
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null
budget=${BUDGET:-63}
left() { echo $((budget - SECONDS)); }
cap() { local l; l=$(left); echo $(( l < $1 ? l : $1 )); }  # a step's limit: at most $1 s, never past the budget
probes="dotfirst"
rows='n(1024|4096|8192)-d64-fp32-full-bwd|n4096-d64-fp32-causal-bwd'

# Timing: round 2 only if round 1 ended within 12 s (session 13's call B, the same shape with one probe: 16 s for both
# rounds).
STEP_TIMEOUT=26 step timing env STEP_TIMEOUT=10 FP32_BWD_PROBES="$probes" FP32_BWD_CONFIG=configs/h200-fp32-sm90.json \
  FP32_BWD_BUDGET=12 FP32_BWD_FILTER="$rows" FP32_BWD_PROBE_FILTER="$rows" scripts/fp32s8_h200.sh "$out/timing" "$build"
for pr in $probes; do
  [ "$(cap 6)" -ge 2 ] || { echo "tests-$pr skipped: $(left) s left" >&2; continue; }
  FB_SM90_FP32_BWD_PROBE=$pr STEP_TIMEOUT=$(cap 6) step_result='test cases' step "tests-$pr" "$tests" "[sm90tf32]"
done

python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
s.update(name='fp32-bwd-bits-d64', seq=[1024], head_dim=[64], reps=1,
         description='the d = 64 fp32 backward dumped under each probe (scripts/fp32s14_h200.sh)')
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

# ncu with the source counters (session 12's call P0 profile, fewer sections), one report per setting; the metrics
# (raw page) and the per-instruction source page are read back from the report, which is then deleted.
ncu=${NCU_BIN:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
sections=(--section WarpStateStats --section SourceCounters --section SchedulerStats --section ComputeWorkloadAnalysis
          --section MemoryWorkloadAnalysis --section SpeedOfLight)
read -ra probe_list <<<"$probes"
ncu_runs=(default "${probe_list[@]}")
for pr in "${ncu_runs[@]}"; do
  [ "$(left)" -ge 8 ] || { echo "ncu-$pr skipped: $(left) s left" >&2; continue; }
  rm -f "$out/ncu-$pr.ncu-rep"
  FB_SM90_FP32_BWD_PROBE=$pr STEP_TIMEOUT=$(cap 13) step "ncu-$pr" "$ncu" -f -o "$out/ncu-$pr" \
    --kernel-name regex:flash_sm90_tf32_bwd_kernel --launch-count 1 "${sections[@]}" \
    "$fb" run configs/h200-fp32-sm90.json --filter 'n4096-d64-fp32-full-bwd' --kernels flash-sm90 \
    --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q
  if [ -f "$out/ncu-$pr.ncu-rep" ]; then
    # Reading a report back takes a second or two; never past the budget.
    [ "$(left)" -ge 2 ] && timeout "$(cap 8)" "$ncu" -i "$out/ncu-$pr.ncu-rep" --page raw --csv >"$out/ncu-$pr.csv" 2>&1
    [ "$(left)" -ge 2 ] && timeout "$(cap 8)" "$ncu" -i "$out/ncu-$pr.ncu-rep" --page source --csv --print-source sass \
      >"$out/source-$pr.csv" 2>&1
    rm -f "$out/ncu-$pr.ncu-rep"
  fi
done
if [ "$(left)" -ge 6 ]; then
  python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
s.update(name='sanitize-fp32-bwd-race-d64', head_dim=[64], reps=2, verify=False,
         description='racecheck of the d = 64 fp32 backward (scripts/fp32s14_h200.sh), unverified')
json.dump(s, open(sys.argv[2], 'w'), indent=1)" configs/sanitize-fp32-bwd-race.json "$out/race-spec.json"
  FB_SM90_FP32_BWD_PROBE=dotfirst STEP_TIMEOUT=$(( $(left) < 10 ? $(left) - 1 : 9 )) step "race-dotfirst" \
    compute-sanitizer --tool racecheck --racecheck-report all --print-limit 1000000 --show-backtrace no \
    --error-exitcode 86 "$fb" run "$out/race-spec.json" --backend cuda -q --no-ceilings -o "$out/race-dotfirst.json"
else
  echo "race-dotfirst skipped: $(left) s left" >&2
fi

printf '%s\n' "${summary[@]}"
echo "bits against the default (N = 1024, d = 64): ${bits[*]:-none compared}"
[ -f "$out/race-dotfirst.log" ] &&
  echo "race-dotfirst: $(grep -hE 'RACECHECK SUMMARY' "$out/race-dotfirst.log" | tail -n 1) ($(grep -c 'Potential' "$out/race-dotfirst.log") printed)"
python3 scripts/fp32s14_waits.py "$out" "${ncu_runs[@]}"
for pr in "${ncu_runs[@]}"; do [ -f "$out/source-$pr.csv" ] && gzip -f "$out/source-$pr.csv"; done
cat "$out/timing/table.txt" 2>/dev/null
cp "$out/timing/table.txt" "$out/table.txt" 2>/dev/null
echo "failed steps: $failed"
exit "$failed"
