#!/usr/bin/env bash
# Quick check of flash-sm90's fp32 forward (3xTF32 on wgmma) on an H200, under ~90 s:
#   scripts/fp32fwd_h200.sh OUTDIR [BUILD_DIR=build]
# 1. `flashbench verify --dtype fp32 --pass fwd` at d 64 (GQA) and d 128 (seq_q != seq_k), causal and not
#    (30 s each; the script stops if either fails).
# 2. GPU tests [sm90tf32] (TF32 wgmma probe, the fp32 backward) and [fp32tc] (every fp32 variant against
#    fp64 under the FP32 rule; 1xTF32 must fail it).
# 3. The forward of configs/h200-fp32-sm90.json at N 1024 and 4096, d 64/128, causal or not: naive (exact
#    FP32), flash-sm90 (3xTF32) and flash-sm90-tf32x1 (1xTF32, the diagnostic that must fail); then
#    flash-sm90 again under each timing probe of FB_SM90_FP32_FWD_PROBE (flash_sm90_tf32_launch.cuh);
#    a table of TFLOP/s and the speed-up over naive (printed last).
# Each step's log is OUTDIR/<step>.log (scripts/h200_step.sh); the summary of the steps comes last; the
# exit status is 1 when a step failed.
set -uo pipefail
out=${1:?usage: scripts/fp32fwd_h200.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
mkdir -p "$out"
fb="$build/flashbench"
step_timeout=75 step_tail=15 step_grep="passed|failed|FAILED|error|FAIL" step_name_width=18
. "$(dirname "$0")/h200_step.sh"
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null
# verify first, with a short limit: a kernel that hangs or is wrong stops the script here.
STEP_TIMEOUT=30 step verify64 "$fb" verify --dtype fp32 --pass fwd --dim 64 --seq 1000 --heads 8 --kv-heads 2 \
  --causal both -o "$out/verify-fp32-d64.json"
STEP_TIMEOUT=30 step verify128 "$fb" verify --dtype fp32 --pass fwd --dim 128 --seq-q 300 --seq-k 1111 \
  --heads 8 --kv-heads 2 --causal both -o "$out/verify-fp32-d128.json"
if [ "$failed" -ne 0 ]; then
  echo "verify failed: stopping (logs in $out)" >&2
  printf '%s\n' "${summary[@]}"
  exit "$failed"
fi
step tests "$build/tests/flashbench_gpu_tests" "[sm90tf32],[fp32tc]"
filter='n(1024|4096)-d(64|128)-fp32-(full|causal)-fwd'
step run "$fb" run configs/h200-fp32-sm90.json --filter "$filter" \
  --kernels naive,flash-sm90,flash-sm90-tf32x1 --warmup 2 --reps 5 --no-ceilings -q -o "$out/fwd.json"
# Timing probes (kernels/flash_sm90/flash_sm90_tf32_launch.cuh): session 6's steps taken apart.
probes="plane grouped"  # the kernel-variant words were removed in session 8
for pr in $probes; do
  FB_SM90_FP32_FWD_PROBE=$pr step "probe-$pr" "$fb" run configs/h200-fp32-sm90.json --filter "$filter" \
    --kernels naive,flash-sm90 --warmup 2 --reps 5 --no-ceilings -q -o "$out/fwd-$pr.json"
done
python3 - "$out" $probes <<'PY' | tee "$out/table.txt"
import json, os, sys
out, probes = sys.argv[1], sys.argv[2:]
def load(name):
    try:
        return json.load(open(os.path.join(out, name)))["results"]
    except (OSError, ValueError, KeyError):
        return []
cells = {}
def add(results, col_of):
    for r in results:
        c = r["case"]
        key = (c["head_dim"], c["causal"], c["seq"])
        col = col_of(r["kernel"])
        if col:
            o = r.get("errors", {}).get("O", {})
            cells.setdefault(key, {})[col] = (r["status"], r.get("tflops"), r.get("time_ms", {}).get("median"),
                                              o.get("ref"), o.get("bound"))
add(load("fwd.json"), lambda k: k)
for pr in probes:
    add(load(f"fwd-{pr}.json"), lambda k, pr=pr: pr if k == "flash-sm90" else None)
cols = ["naive", "flash-sm90", "flash-sm90-tf32x1"] + probes
print("fp32 forward TFLOP/s (probe columns: flash-sm90 under FB_SM90_FP32_FWD_PROBE=...; * = not ok)")
print(f"{'d':>3} {'causal':>6} {'N':>5} | " + " | ".join(f"{c[:14]:>14}" for c in cols) + " | x naive | err/bound")
for key in sorted(cells):
    row = cells[key]
    def fmt(c):
        if c not in row or row[c][1] is None:
            return f"{'-':>14}"
        st, tf = row[c][0], row[c][1]
        return f"{tf:13.1f}{'' if st == 'ok' else '*'}"
    try:
        x = f"{row['naive'][2] / row['flash-sm90'][2]:6.2f}x"
    except (KeyError, TypeError, ZeroDivisionError):
        x = f"{'-':>7}"
    e = row.get("flash-sm90")
    eb = f"{e[3]:.1e}/{e[4]:.1e}" if e and e[3] is not None and e[4] is not None else ""
    print(f"{key[0]:>3} {str(key[1]):>6} {key[2]:>5} | " + " | ".join(fmt(c) for c in cols) + f" | {x} | {eb}")
for name in ["fwd.json"] + [f"fwd-{pr}.json" for pr in probes]:
    for r in load(name):
        if r["kernel"] != "flash-sm90-tf32x1" and r["status"] != "ok":
            print("NOT OK:", name, r["key"], r["kernel"], r["status"], r.get("reason", ""))
PY
printf '%s\n' "${summary[@]}"
exit "$failed"
