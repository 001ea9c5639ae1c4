#!/usr/bin/env bash
# Session 12's device call for flash-sm90's fp32 backward (issue 15, d = 64 non-causal), in about 60 s:
#   scripts/fp32s12_h200.sh OUTDIR [BUILD_DIR=build]
# 1. Timing (scripts/fp32s8_h200.sh on configs/h200-fp32-sm90.json's backward, warmup 1, reps 3, every row verified
#    against fp64; a second round while its budget lasts): naive (exact FP32) and the default on d = 64 non-causal
#    N 1024 / 4096 / 8192 and causal N 4096, and the d = 64 probes of kernels/flash_sm90/flash_sm90_tf32_bwd.cu
#    (FB_SM90_FP32_BWD_PROBE = hilo: S^T / dP^T with B = [hi | lo] as one N = 64 operand, A hi read once per step,
#    the same sums bit for bit; hilo8: the same with hi*hi in one chain, no wait inside the GEMM; hilo_dqperm:
#    hilo with dS's keys permuted in groups of 8 so that dQ^T's A fragments load without bank conflicts) on those
#    rows.
# 2. GPU tests [sm90tf32] under each probe (3xTF32 within the FP32 rule, 1xTF32 failing it).
# 3. Bits: one small d = 64 case (N = 1024, 2 heads on 1 K/V head, verified) under the default, hilo and
#    hilo_dqperm with --dump (to a scratch folder off OUTDIR), then each probe's flash-sm90 outputs compared with
#    the default's byte for byte (cmp): dK and dV must be identical (the same sums); dQ is added by reductions in
#    global memory in a varying order, so its last bits may differ between any two runs.
# 4. While time is left: racecheck of the d = 128 backward (configs/sanitize-fp32-bwd-race.json's d = 128 case,
#    2 reps, unverified, the default 0.1 s warm-up loop: several launches), the default, then racebar (a second
#    `bar.sync 4, 256` right after the one that orders consumer 1's dS stores before consumer 0's dK loads):
#    session 11's audit says the reports at that pair are the tool's; if they vanish under racebar, that fits.
# Prints last: the steps' status lines, the bit comparison, the racecheck summaries with the distinct (kind, read pc, write pc)
# triples, then the timing table (x = naive time / kernel time).
# Its probes ran in session 12's call A (results/h200/s12/callA/fp32/): after it hilo is the shipping d = 64 3xTF32
# kernel, hilo8 and dqperm are removed with their probe words (each probe column then times the default; the bit
# comparison compares the default with itself), racebar stays (FB_SM90_FP32_BWD_PROBE=racebar, d = 128).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${1:?usage: scripts/fp32s12_h200.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
mkdir -p "$out"
fb="$build/flashbench"
tests="$build/tests/flashbench_gpu_tests"
step_timeout=20
step_tail=0
step_name_width=17
# shellcheck source=scripts/h200_step.sh
source scripts/h200_step.sh
ensure_build fp32s12_h200.sh
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null
budget=${BUDGET:-63}
left() { echo $((budget - SECONDS)); }
probes="hilo hilo8 hilo_dqperm"
rows='n(1024|4096|8192)-d64-fp32-full-bwd|n4096-d64-fp32-causal-bwd'

# Timing: its own steps 12 s each at most; round 2 only if round 1 ended within 16 s (~14 s a round expected), so
# that both end inside the 40 s limit (cut, fp32s8_h200.sh would print no table).
STEP_TIMEOUT=40 step timing env STEP_TIMEOUT=12 FP32_BWD_PROBES="$probes" FP32_BWD_CONFIG=configs/h200-fp32-sm90.json \
  FP32_BWD_BUDGET=16 FP32_BWD_FILTER="$rows" FP32_BWD_PROBE_FILTER="$rows" scripts/fp32s8_h200.sh "$out/timing" "$build"
for pr in $probes; do
  FB_SM90_FP32_BWD_PROBE=$pr STEP_TIMEOUT=6 step_result='test cases' step "tests-$pr" "$tests" "[sm90tf32]"
done

python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
s.update(name='fp32-bwd-bits-d64', seq=[1024], head_dim=[64], reps=1,
         description='the d = 64 fp32 backward dumped under each probe (scripts/fp32s12_h200.sh)')
json.dump(s, open(sys.argv[2], 'w'), indent=1)" configs/sanitize-fp32-bwd-race.json "$out/bits-spec.json"
dumps=$(mktemp -d)
for pr in default hilo hilo_dqperm; do
  FB_SM90_FP32_BWD_PROBE=$pr STEP_TIMEOUT=5 step "bits-$pr" "$fb" run "$out/bits-spec.json" --backend cuda -q \
    --no-ceilings --warmup-time 0 --dump "$dumps/$pr" -o "$out/bits-$pr.json"
done
bits=()
for pr in hilo hilo_dqperm; do
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

# The race case unverified (it is verified in every other run of it): racecheck instruments every kernel of the
# process, and the fp64 reference would take the step's time; 2 reps and the 0.1 s warm-up loop: several launches.
python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
s.update(name='sanitize-fp32-bwd-race-d128', head_dim=[128], reps=2, verify=False,
         description='racecheck of the d = 128 fp32 backward (scripts/fp32s12_h200.sh), unverified')
json.dump(s, open(sys.argv[2], 'w'), indent=1)" configs/sanitize-fp32-bwd-race.json "$out/race-spec.json"
races=(default racebar)
for i in "${!races[@]}"; do
  pr=${races[$i]}
  n_left=$((${#races[@]} - i))
  t=$(( ($(left) - 1) / n_left ))
  [ "$t" -ge 6 ] || { echo "race-$pr skipped: $(left) s left" >&2; continue; }
  [ "$t" -le 16 ] || t=16
  FB_SM90_FP32_BWD_PROBE=$pr STEP_TIMEOUT=$t step "race-$pr" compute-sanitizer --tool racecheck \
    --racecheck-report all --print-limit 1000000 --show-backtrace no --error-exitcode 86 "$fb" run \
    "$out/race-spec.json" --backend cuda -q --no-ceilings -o "$out/race-$pr.json"
done

printf '%s\n' "${summary[@]}"
echo "bits against the default (N = 1024, d = 64): ${bits[*]:-none compared}"
for r in "${races[@]}"; do
  log="$out/race-$r.log"
  [ -f "$log" ] || continue
  # A cut run has no summary line: count the hazards it printed. Distinct (kind, read pc, write pc) as
  # scripts/fp32s8_race_h200.sh.
  echo "race-$r: $(grep -hE 'RACECHECK SUMMARY' "$log" | tail -n 1) ($(grep -c 'Potential' "$log") printed)"
  sed 's/([a-z, ]*)+/+/' "$log" |
    awk '/Potential .* hazard/ {kind = $4} /Read Thread/ {r = $6} /Write Thread/ {w = $6}
         /Current Value/ {print kind, "read", r, "write", w}' |
    sort | uniq -c | sort -rn | head -n 4
done
cat "$out/timing/table.txt" 2>/dev/null
echo "failed steps: $failed"
exit "$failed"
