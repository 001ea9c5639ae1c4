#!/usr/bin/env bash
# flash-sm90's fp32 backward (3xTF32 on wgmma, issue 15) on an H200, in about a minute, over a build
# made with CMAKE_CUDA_ARCHITECTURES including 90a:
#   scripts/tf32bwd_h200.sh OUTDIR [BUILD_DIR=build]
# 1. GPU tests [sm90tf32] (the fp32 backward through the runner's FP32 rule on odd shapes, GQA/MQA,
#    seq_q != seq_k; 1xTF32 failing it).
# 2. `flashbench verify --dtype fp32 --pass bwd`: d 64 (N 300, GQA 4/2) and d 128 (seq_q 300,
#    seq_k 1111, GQA 8/2), causal and not.
# 3. configs/h200-fp32-bwd-quick.json: N 1024 and 4096, d 64 and 128, causal or not, naive (exact
#    FP32), flash-sm90 (3xTF32) and flash-sm90-tf32x1 (1xTF32: the split's cost apart from the
#    kernel's overheads), 3 reps, then a table (last): TFLOP/s and naive time / kernel time.
# Each step's log is OUTDIR/<step>.log (scripts/h200_step.sh); the summary of the steps comes last; the
# exit status is 1 when a step failed.
set -uo pipefail
out=${1:?usage: scripts/tf32bwd_h200.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
mkdir -p "$out"
fb="$build/flashbench"
step_timeout=60 step_tail=30 step_name_width=9 step_grep="sm90-fp32-bwd|flash-sm90|passed|failed|FAILED|error"
. "$(dirname "$0")/h200_step.sh"
# A hang (timeout) of the kernel would hang every later step too: stop there (a slow profile is no hang,
# so the ncu steps go through plain step).
kernel_step() {  # name, command...
  step "$@"
  if [ "$step_rc" -eq 124 ]; then
    echo "$1 timed out: stopping" >&2
    printf '%s\n' "${summary[@]}"
    exit 1
  fi
}
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null
kernel_step tests "$build/tests/flashbench_gpu_tests" "[sm90tf32]"
kernel_step verify64 "$fb" verify --dtype fp32 --pass bwd --dim 64 --seq 300 --heads 4 --kv-heads 2 --causal both \
  -o "$out/verify-bwd-d64.json"
kernel_step verify128 "$fb" verify --dtype fp32 --pass bwd --dim 128 --seq-q 300 --seq-k 1111 --heads 8 \
  --kv-heads 2 --causal both -o "$out/verify-bwd-d128.json"
kernel_step time "$fb" run configs/h200-fp32-bwd-quick.json -o "$out/fp32-bwd.json"
# 4. NCU=1 (default when ncu is on PATH): one Nsight Compute profile (--set full, source counters) of
#    the backward kernel per head dim (configs/h200-fp32-bwd-profile.json), exported as CSV: details
#    (OUTDIR/ncu-dD-details.csv), every metric (-raw.csv) and per-SASS-instruction stall samples
#    (-source.csv); a few headline metrics printed.
ncu_bin=${NCU_BIN:-ncu}
if [ "${NCU:-1}" = 1 ] && command -v "$ncu_bin" >/dev/null 2>&1; then
  for d in 64 128; do
    STEP_TIMEOUT=${NCU_TIMEOUT:-90} step "ncu-d$d" "$ncu_bin" --set full --import-source yes -k regex:flash_sm90_tf32_bwd -c 1 -f \
      -o "$out/ncu-d$d" "$fb" run configs/h200-fp32-bwd-profile.json --filter "d$d-" -o "$out/prof-d$d.json"
    "$ncu_bin" -i "$out/ncu-d$d.ncu-rep" --page details --csv >"$out/ncu-d$d-details.csv" 2>&1
    "$ncu_bin" -i "$out/ncu-d$d.ncu-rep" --page raw --csv >"$out/ncu-d$d-raw.csv" 2>&1
    "$ncu_bin" -i "$out/ncu-d$d.ncu-rep" --page source --csv --print-source sass >"$out/ncu-d$d-source.csv" 2>&1
    grep -E '"(Duration|Issue Slots Busy|Issued Ipc Active|No Eligible|Warp Cycles Per Issued Instruction|Active Warps Per Scheduler|Eligible Warps Per Scheduler|Executed Ipc Active|Registers Per Thread|Achieved Occupancy)"' \
      "$out/ncu-d$d-details.csv" | awk -F'","' '{print "ncu d'"$d"':", $(NF-2), $(NF-1), $NF}' | head -n 20
  done
else
  echo "ncu step skipped (NCU=${NCU:-1}, $ncu_bin on PATH: $(command -v "$ncu_bin" || echo no))"
fi
python3 - "$out/fp32-bwd.json" <<'PY' | tee "$out/table.txt"
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit(f"no results to tabulate: {e}")
cells = {}
for r in doc["results"]:
    c = r["case"]
    cells.setdefault((c["head_dim"], c["causal"], c["seq"]), {})[r["kernel"]] = (
        r["status"], r.get("tflops"), r.get("time_ms", {}).get("median"))
kernels = ["naive", "flash-sm90", "flash-sm90-tf32x1"]
print("fp32 backward: TFLOP/s, ms, x = naive time / kernel time")
print(f"{'d':>3} {'causal':>6} {'N':>5} | " + " | ".join(f"{k:>24}" for k in kernels))
for key in sorted(cells):
    row = cells[key]
    def fmt(k):
        if k not in row:
            return f"{'-':>24}"
        st, tf, ms = row[k]
        if st != "ok" or tf is None:
            return f"{st:>24}"
        try:
            x = row["naive"][2] / ms
        except (KeyError, TypeError, ZeroDivisionError):
            x = float("nan")
        return f"{tf:6.1f} {ms:8.3f}ms {x:5.2f}x"
    print(f"{key[0]:>3} {str(key[1]):>6} {key[2]:>5} | " + " | ".join(fmt(k) for k in kernels))
PY
printf '%s\n' "${summary[@]}"
exit "$failed"
