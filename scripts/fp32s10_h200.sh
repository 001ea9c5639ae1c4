#!/usr/bin/env bash
# Session 10's device call for flash-sm90's fp32 backward (issue 15, d = 64 non-causal), in about 60 s:
#   scripts/fp32s10_h200.sh OUTDIR [BUILD_DIR=build]
# 1. Timing (scripts/fp32s8_h200.sh, two rounds, every row verified against fp64): naive and the default on the
#    non-causal rows (d 64 / 128, N 1024 / 4096) and d = 64 causal; the d = 64 probes of
#    kernels/flash_sm90/flash_sm90_tf32_bwd.cu (FB_SM90_FP32_BWD_PROBE = pp1, pp: the consumers' ping-pong; eq:
#    Q / dO released before the softmax; pp,eq) on d = 64 non-causal and causal N = 4096.
# 2. GPU tests [sm90tf32] under pp,eq and pp1 (3xTF32 within the FP32 rule, 1xTF32 failing it).
# 3. Under pp,eq (while time is left): racecheck on the d = 64 race case and synccheck.
# Prints last: the steps' status lines, then the timing table (x = naive time / kernel time).
# Its probes ran in session 10's call A (results/h200/s10/callA/fp32/); after it eq is the shipping d = 64 kernel
# and the probe words are gone (each column then times the default again).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${1:?usage: scripts/fp32s10_h200.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
mkdir -p "$out"
fb="$build/flashbench"
tests="$build/tests/flashbench_gpu_tests"
step_timeout=20
step_tail=0
step_name_width=14
# shellcheck source=scripts/h200_step.sh
source scripts/h200_step.sh
ensure_build fp32s10_h200.sh
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null
probes="pp1 pp eq pp,eq"

# (its own steps 12 s each, the whole 42 s)
STEP_TIMEOUT=42 step timing env STEP_TIMEOUT=12 FP32_BWD_PROBES="$probes" \
  FP32_BWD_FILTER='d64-fp32-(full|causal)|d128-fp32-full' FP32_BWD_PROBE_FILTER='d64-fp32-full|n4096-d64-fp32-causal' \
  scripts/fp32s8_h200.sh "$out/timing" "$build"
for pr in pp,eq pp1; do
  FB_SM90_FP32_BWD_PROBE=$pr STEP_TIMEOUT=12 step_result='test cases' step "tests-$pr" "$tests" "[sm90tf32]"
done
if [ "$SECONDS" -lt 48 ]; then
  FB_SM90_FP32_BWD_PROBE=pp,eq STEP_TIMEOUT=10 step race-ppeq compute-sanitizer --tool racecheck --racecheck-report all \
    --print-limit 1000000 --show-backtrace no --error-exitcode 86 "$fb" run configs/sanitize-fp32-bwd-race.json \
    --backend cuda -q --no-ceilings --filter d64 -o "$out/race-ppeq.json"
fi
if [ "$SECONDS" -lt 55 ]; then
  FB_SM90_FP32_BWD_PROBE=pp,eq STEP_TIMEOUT=8 step sync-ppeq scripts/sanitize.sh -e "$fb" \
    -s configs/sanitize-fp32-bwd.json -t synccheck "$out/sync-ppeq.json"
fi

printf '%s\n' "${summary[@]}"
[ -f "$out/race-ppeq.log" ] && echo "race-ppeq: $(grep -hE 'RACECHECK SUMMARY' "$out/race-ppeq.log" | tail -n 1)"
[ -f "$out/sync-ppeq.log" ] && echo "sync-ppeq: $(grep -hE '^synccheck ' "$out/sync-ppeq.log" | tail -n 1)"
cat "$out/timing/table.txt" 2>/dev/null
echo "failed steps: $failed"
exit "$failed"
