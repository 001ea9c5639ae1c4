#!/usr/bin/env bash
# racecheck on flash-sm90's fp32 backward at d = 128 (two consumers sharing keys), session 8, in about 40 s:
#   scripts/fp32s8_race_h200.sh OUTDIR [BUILD_DIR=build]
# Runs compute-sanitizer racecheck on configs/sanitize-fp32-bwd-race.json (one case: d = 128, N = 130, GQA) twice:
# the shipping kernel, and FB_SM90_FP32_BWD_PROBE=latetempty, the same kernel with the consumers' t_empty
# mbarrier arrival moved from right after dV / dK to after the "both past dV" barrier and the dQ staging (its
# shared-memory accesses and named barriers are the shipping kernel's). Then the GPU tests [sm90tf32] under the
# probe and synccheck under it. Prints last: per setting, the RACECHECK SUMMARY line and the distinct (hazard,
# reader pc, writer pc) pairs.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${1:?usage: scripts/fp32s8_race_h200.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
mkdir -p "$out"
fb="$build/flashbench"
step_timeout=40
step_tail=0
step_name_width=16
# shellcheck source=scripts/h200_step.sh
source scripts/h200_step.sh
ensure_build fp32s8_race_h200.sh
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null

race() {  # name: racecheck on the one-case config, every hazard kept
  step "$1" compute-sanitizer --tool racecheck --racecheck-report all --print-limit 1000000 --show-backtrace no \
    --error-exitcode 86 "$fb" run configs/sanitize-fp32-bwd-race.json --backend cuda -q --no-ceilings \
    -o "$out/$1.json"
}
race race-default
FB_SM90_FP32_BWD_PROBE=latetempty race race-latetempty
FB_SM90_FP32_BWD_PROBE=latetempty STEP_TIMEOUT=30 step tests-latetempty "$build/tests/flashbench_gpu_tests" "[sm90tf32]"
FB_SM90_FP32_BWD_PROBE=latetempty STEP_TIMEOUT=30 step sync-latetempty scripts/sanitize.sh -e "$fb" \
  -s configs/sanitize-fp32-bwd.json -t synccheck "$out/sync-latetempty.json"

printf '%s\n' "${summary[@]}"
echo "tests-latetempty: $(grep -hE "test cases" "$out/tests-latetempty.log" | tail -n 1)"
echo "sync-latetempty: $(grep -hE '^synccheck ' "$out/sync-latetempty.log" | tail -n 1)"
for r in race-default race-latetempty; do
  echo "$r: $(grep -hE 'RACECHECK SUMMARY' "$out/$r.log" | tail -n 1)"
  sed 's/([a-z, ]*)+/+/' "$out/$r.log" |
    awk '/Potential .* hazard/ {kind = $4} /Read Thread/ {r = $6} /Write Thread/ {print kind, "read", r, "write", $6}' |
    sort | uniq -c | sort -rn | head -n 6
done
echo "failed steps: $failed"
exit "$failed"
