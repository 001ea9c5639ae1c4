#!/usr/bin/env bash
# Quick check of flash-sm90's fp32 forward (3xTF32 on wgmma) on an H200, under ~90 s:
#   scripts/fp32fwd_h200.sh OUTDIR [BUILD_DIR=build]
# 1. `flashbench verify --dtype fp32 --pass fwd` at d 64 (GQA) and d 128 (seq_q != seq_k), causal and not
#    (30 s each; the script stops if either fails).
# 2. GPU tests [sm90tf32] (TF32 wgmma probe, the fp32 backward) and [fp32tc] (every fp32 variant against
#    fp64 under the FP32 rule; 1xTF32 must fail it).
# 3. The forward of configs/h200-fp32-sm90.json at N 1024 and 4096, d 64/128, causal or not: naive (exact
#    FP32), flash-sm90 (3xTF32) and flash-sm90-tf32x1 (1xTF32, the diagnostic that must fail), then a
#    table of TFLOP/s and speed-ups over naive (printed last).
# Each step's log is OUTDIR/<step>.log; the exit status is the number of failed steps.
set -uo pipefail
out=${1:?usage: scripts/fp32fwd_h200.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
mkdir -p "$out"
fb="$build/flashbench"
failed=0
step() {  # name, command...
  local name=$1
  shift
  local t0=$SECONDS
  echo "=== $name: $*"
  timeout "${STEP_TIMEOUT:-75}" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "--- $name rc=$rc $((SECONDS - t0))s"
  grep -E "passed|failed|FAILED|error|FAIL" "$out/$name.log" | tail -n 15
  [ "$rc" -eq 0 ] || failed=$((failed + 1))
}
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null
# verify first, with a short limit: a kernel that hangs or is wrong stops the script here.
STEP_TIMEOUT=30 step verify64 "$fb" verify --dtype fp32 --pass fwd --dim 64 --seq 1000 --heads 8 --kv-heads 2 \
  --causal both -o "$out/verify-fp32-d64.json"
STEP_TIMEOUT=30 step verify128 "$fb" verify --dtype fp32 --pass fwd --dim 128 --seq-q 300 --seq-k 1111 \
  --heads 8 --kv-heads 2 --causal both -o "$out/verify-fp32-d128.json"
if [ "$failed" -ne 0 ]; then
  echo "verify failed: stopping (logs in $out)"
  exit "$failed"
fi
step tests "$build/tests/flashbench_gpu_tests" "[sm90tf32],[fp32tc]"
step run "$fb" run configs/h200-fp32-sm90.json --filter 'n(1024|4096)-d(64|128)-fp32-(full|causal)-fwd' \
  --kernels naive,flash-sm90,flash-sm90-tf32x1 --warmup 2 --reps 5 --no-ceilings -q \
  -o "$out/fwd.json"
python3 - "$out/fwd.json" <<'PY' | tee "$out/table.txt"
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit(f"no results to tabulate: {e}")
cells = {}
for r in doc["results"]:
    c = r["case"]
    key = (c["head_dim"], c["causal"], c["seq"])
    o = r.get("errors", {}).get("O", {})
    cells.setdefault(key, {})[r["kernel"]] = (r["status"], r.get("tflops"), r.get("time_ms", {}).get("median"),
                                              o.get("ref"), o.get("bound"))
kernels = ["naive", "flash-sm90", "flash-sm90-tf32x1"]
print("fp32 forward TFLOP/s (O error vs fp64 / bound); x = naive time / flash-sm90 time")
print(f"{'d':>3} {'causal':>6} {'N':>5} | " + " | ".join(f"{k:>26}" for k in kernels) + " |  x sm90")
for key in sorted(cells):
    row = cells[key]
    def fmt(k):
        if k not in row:
            return f"{'-':>26}"
        st, tf, ms, err, bound = row[k]
        if st != "ok" or tf is None:
            return f"{st:>26}"
        e = f"{err:.1e}/{bound:.1e}" if err is not None and bound is not None else ""
        return f"{tf:7.1f} {e:>18}"
    try:
        x = f"{row['naive'][2] / row['flash-sm90'][2]:7.2f}x"
    except (KeyError, TypeError, ZeroDivisionError):
        x = f"{'-':>8}"
    print(f"{key[0]:>3} {str(key[1]):>6} {key[2]:>5} | " + " | ".join(fmt(k) for k in kernels) + f" | {x}")
for r in doc["results"]:
    if r["kernel"] != "flash-sm90-tf32x1" and r["status"] != "ok":
        print("NOT OK:", r["key"], r["kernel"], r["status"], r.get("reason", ""))
PY
echo "failed steps: $failed"
exit "$failed"
