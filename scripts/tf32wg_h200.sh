#!/usr/bin/env bash
# flash-sm90's fp32 forward and backward (3xTF32 on wgmma) on an H200 over a build made with
# CMAKE_CUDA_ARCHITECTURES including 90a:
#   scripts/tf32wg_h200.sh OUTDIR [BUILD_DIR=build]
# 1. GPU tests: [sm90tf32] (the one-tile TF32 wgmma probe: fragment layouts, K split, permuted V^T;
#    the fp32 backward through the runner's FP32 rule, 1xTF32 failing it) and the fp32 tensor-core suite ([fp32tc]: every fp32 variant, flash-sm90's included, against
#    fp64 under the FP32 rule, odd N, causal, GQA, NaN-poisoned outputs).
# 2. `flashbench verify --dtype fp32 --pass all` at d 64 and 128 (every registered fp32 kernel),
#    seq_q != seq_k at d 128.
# 3. configs/h200-fp32-sm90.json (naive, naive-tf32, flash, flash-sm90, flash-sm90-tf32x1; N 1k-8k,
#    d 64/128, causal or not; forward and backward) into OUTDIR/h200-fp32-sm90.json, then a table of
#    TFLOP/s and speed-ups (FILTER=REGEX passes --filter to the run, e.g. 'bwd').
# Each step's log is OUTDIR/<step>.log (scripts/h200_step.sh); the summary of the steps comes last; the
# exit status is 1 when a step failed.
set -uo pipefail
out=${1:?usage: scripts/tf32wg_h200.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
mkdir -p "$out"
fb="$build/flashbench"
step_timeout=240 step_tail=60 step_name_width=9
step_grep="sm90-tf32-probe|sm90-fp32-bwd|^fp32-tc .*(O|dQ) |flash-sm90|passed|failed|FAILED|error"
. "$(dirname "$0")/h200_step.sh"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null
step probe "$build/tests/flashbench_gpu_tests" "[sm90tf32]" -s
step fp32tc "$build/tests/flashbench_gpu_tests" "[fp32tc]"
step verify64 "$fb" verify --dtype fp32 --pass all --dim 64 --seq 1000 --heads 8 --kv-heads 2 --causal both \
  -o "$out/verify-fp32-d64.json"
step verify128 "$fb" verify --dtype fp32 --pass all --dim 128 --seq-q 300 --seq-k 1111 --heads 8 \
  --kv-heads 2 --causal both -o "$out/verify-fp32-d128.json"
step run "$fb" run configs/h200-fp32-sm90.json ${FILTER:+--filter "$FILTER"} -o "$out/h200-fp32-sm90.json" \
  --csv "$out/h200-fp32-sm90.csv"
python3 - "$out/h200-fp32-sm90.json" <<'PY' | tee "$out/table.txt"
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit(f"no results to tabulate: {e}")
cells = {}
for r in doc["results"]:
    c = r["case"]
    key = (c["pass"], c["head_dim"], c["causal"], c["seq"])
    o = r.get("errors", {}).get("O", {})
    cells.setdefault(key, {})[r["kernel"]] = (r["status"], r.get("tflops"), r.get("time_ms", {}).get("median"),
                                              o.get("ref"), o.get("bound"), r.get("verified"))
kernels = ["naive", "naive-tf32", "flash", "flash-sm90", "flash-sm90-tf32x1"]
print("TFLOP/s (O error vs fp64 / bound); x = naive time / flash-sm90 time")
print(f"{'pass':>4} {'d':>3} {'causal':>6} {'N':>5} | " + " | ".join(f"{k:>26}" for k in kernels) + " |   x sm90 | x flash")
for key in sorted(cells):
    row = cells[key]
    def fmt(k):
        if k not in row:
            return f"{'-':>26}"
        st, tf, ms, err, bound, ver = row[k]
        if st != "ok" or tf is None:
            return f"{st:>26}"
        e = f"{err:.1e}/{bound:.1e}" if err is not None and bound is not None else ""
        return f"{tf:7.1f} {e:>18}"
    def speedup(k):
        try:
            return f"{row['naive'][2] / row[k][2]:7.2f}x"
        except (KeyError, TypeError, ZeroDivisionError):
            return f"{'-':>8}"
    print(f"{key[0]:>4} {key[1]:>3} {str(key[2]):>6} {key[3]:>5} | " + " | ".join(fmt(k) for k in kernels) +
          f" | {speedup('flash-sm90')} | {speedup('flash')}")
bad = [(r["key"], r["kernel"], r["status"], r.get("reason", "")) for r in doc["results"]
       if r["kernel"] not in ("flash-sm90-tf32x1", "naive-tf32") and r["status"] != "ok"]
for b in bad:
    print("NOT OK:", *b)
PY
printf '%s\n' "${summary[@]}"
exit "$failed"
