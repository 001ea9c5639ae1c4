#!/usr/bin/env bash
# flash-sm90's fp8 forward on an H100/H200 (issue 14 part 2), one device call of ~1 minute:
#   the GPU tests [fp8sm90] (shipping configuration), `flashbench verify --dtype fp8` on odd shapes
#   (shipping, and FB_FP8_EXP2_POLY=4: half the exponentials on the FMA pipe), then the kernel-only
#   timing test [fp8sm90perf] once per FMA-pipe share FB_FP8_EXP2_POLY = 0..4 eighths
#   (flash_sm90_fp8_launch.cuh), printed last as one TFLOP/s table: a row per case, a column per share.
#     BUILD=build-h200 scripts/fp8_h200.sh OUTDIR
# BUILD must hold flashbench and tests/flashbench_gpu_tests built for sm_90a. Each step has a timeout.
set -uo pipefail
out=${1:?usage: BUILD=DIR scripts/fp8_h200.sh OUTDIR}
build=${BUILD:-build-h200}
mkdir -p "$out"
cd "$(dirname "$0")/.."
fb="$build/flashbench"
tests="$build/tests/flashbench_gpu_tests"
for exe in "$fb" "$tests"; do
  [ -x "$exe" ] || { echo "fp8_h200.sh: $exe not found (BUILD=$build)" >&2; exit 2; }
done

failed=0
summary=()
step() {  # name, seconds, command...
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  [ "$rc" -eq 0 ] || failed=1
  summary+=("$(printf '%-14s rc=%-3s %3ss  %s' "$name" "$rc" "$((SECONDS - t0))" "$(grep -E 'passed|failed|PASS|FAIL' "$out/$name.log" | tail -n 1)")")
}

step tests 40 "$tests" "[fp8sm90]"
step verify 20 "$fb" verify --dtype fp8 --seq-q 1000 --seq-k 3001 --heads 8 --kv-heads 2 --dim 128 --causal both \
  -o "$out/verify-q1000-k3001-d128.json"
step verify-poly4 20 env FB_FP8_EXP2_POLY=4 "$fb" verify --dtype fp8 --seq 777 --heads 4 --kv-heads 1 --dim 64 \
  --causal both -o "$out/verify-777-d64-poly4.json"
for e in 0 1 2 3 4; do
  step "perf-poly$e" 30 env FB_FP8_EXP2_POLY=$e "$tests" "[fp8sm90perf]"
done

printf '%s\n' "${summary[@]}"
# fp8 TFLOP/s per case (16k tokens, model dim 2048; the V transpose included) per eighths on the FMA pipe.
echo "fp8 flash-sm90 TFLOP/s by FB_FP8_EXP2_POLY (eighths of exp2 on the FMA pipe; bf16 beside)"
for e in 0 1 2 3 4; do
  grep -h '^fp8-sm90-perf' "$out/perf-poly$e.log" | awk -v e="$e" '{print e, $2, $3, $4, $5, $(NF-1)}'
done | awk '
  { key = $3 " " $4 " " $5; if (!(key in seen)) { seen[key] = 1; order[++n] = key }
    if ($2 == "fp8") tf[key, $1] = $6; else bf[key] = $6 }
  END {
    printf "%-22s %7s %7s %7s %7s %7s %7s\n", "case", "0/8", "1/8", "2/8", "3/8", "4/8", "bf16"
    for (i = 1; i <= n; ++i) {
      k = order[i]; printf "%-22s", k
      for (e = 0; e <= 4; ++e) printf " %7s", ((k, e) in tf) ? tf[k, e] : "-"
      printf " %7s\n", (k in bf) ? bf[k] : "-"
    }
  }'
exit "$failed"
