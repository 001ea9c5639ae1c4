#!/usr/bin/env bash
# compute-sanitizer on flash-sm90's fp32 backward, plus the fp32 GPU tests, in about 25 s:
#   scripts/fp32s8_race_h200.sh OUTDIR [BUILD_DIR=build] [PROBE...]
# (Named for session 8, where it began; session 9 made it what it is.)
# 1. racecheck on configs/sanitize-fp32-bwd-race.json (N = 130, GQA, d = 64 and d = 128: one case each, ~10 s each
#    under racecheck; no warm-up time loop: each instrumented run is slow), every hazard kept (--print-limit), exit
#    status 86 on any hazard; synccheck on configs/sanitize-fp32-bwd.json.
# 2. GPU tests [sm90tf32],[fp32tc] (every fp32 kernel against fp64 under the FP32 rule; 1xTF32 must fail it).
# 3. Per PROBE word given, set as FB_SM90_FP32_BWD_PROBE (read by kernels/flash_sm90/flash_sm90_tf32_bwd.cu in a
#    session that adds probes): racecheck on the case FP32_RACE_FILTER selects (default d128), the GPU tests
#    [sm90tf32] and synccheck under it.
# Prints last: per setting, the RACECHECK SUMMARY line and the distinct (hazard, reader pc, writer pc) triples,
# so that one look tells which accesses racecheck pairs.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${1:?usage: scripts/fp32s8_race_h200.sh OUTDIR [BUILD_DIR] [PROBE...]}
build=${2:-build}
shift $(($# < 2 ? $# : 2))
probes=${*:-}
mkdir -p "$out"
fb="$build/flashbench"
step_timeout=30
step_tail=0
step_name_width=16
# shellcheck source=scripts/h200_step.sh
source scripts/h200_step.sh
ensure_build fp32s8_race_h200.sh
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null

race() {  # name, flashbench run options...: racecheck on the race config, every hazard kept
  local name=$1
  shift
  step "$name" compute-sanitizer --tool racecheck --racecheck-report all --print-limit 1000000 --show-backtrace no \
    --error-exitcode 86 "$fb" run configs/sanitize-fp32-bwd-race.json --backend cuda -q --no-ceilings \
    --warmup-time 0 -o "$out/$name.json" "$@"
}
tests="$build/tests/flashbench_gpu_tests"
race race-default
STEP_TIMEOUT=30 step sync-default scripts/sanitize.sh -e "$fb" -s configs/sanitize-fp32-bwd.json -t synccheck \
  "$out/sync-default.json"
STEP_TIMEOUT=30 step tests "$tests" "[sm90tf32],[fp32tc]"
for pr in $probes; do
  FB_SM90_FP32_BWD_PROBE=$pr race "race-$pr" --filter "${FP32_RACE_FILTER:-d128}"
  FB_SM90_FP32_BWD_PROBE=$pr STEP_TIMEOUT=30 step "tests-$pr" "$tests" "[sm90tf32]"
  FB_SM90_FP32_BWD_PROBE=$pr STEP_TIMEOUT=30 step "sync-$pr" scripts/sanitize.sh -e "$fb" \
    -s configs/sanitize-fp32-bwd.json -t synccheck "$out/sync-$pr.json"
done

printf '%s\n' "${summary[@]}"
for t in "$out"/tests*.log; do echo "$(basename "$t" .log): $(grep -hE "test cases" "$t" | tail -n 1)"; done
for s in "$out"/sync-*.log; do
  case $s in *-synccheck.log) continue ;; esac
  [ -f "$s" ] && echo "$(basename "$s" .log): $(grep -hE '^synccheck ' "$s" | tail -n 1)"
done
for r in race-default $(for pr in $probes; do echo "race-$pr"; done); do
  # A clean run prints "0 hazards displayed"; a hazard prints "Potential X hazard ...", a "Read Thread (..) at
  # FN+0xPC in F:L" and a "Write Thread (..)" line (in either order: RAW names the writer first), then "Current
  # Value": count the distinct (kind, read pc, write pc).
  echo "$r: $(grep -hE 'RACECHECK SUMMARY' "$out/$r.log" | tail -n 1)"
  sed 's/([a-z, ]*)+/+/' "$out/$r.log" |
    awk '/Potential .* hazard/ {kind = $4} /Read Thread/ {r = $6} /Write Thread/ {w = $6}
         /Current Value/ {print kind, "read", r, "write", w}' |
    sort | uniq -c | sort -rn | head -n 6
done
echo "failed steps: $failed"
exit "$failed"
