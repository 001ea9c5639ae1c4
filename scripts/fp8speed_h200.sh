#!/usr/bin/env bash
# flash-sm90's fp8 forward against cuDNN's on an H100/H200 (issue 14 part 2), one device call of ~1
# minute: the GPU tests [fp8sm90] as shipped and with the new probes at once, then `flashbench run` on
# fp8, d = 128, 16k tokens, model dim 2048, N 4k/8k/16k, causal and not (the fp8-h200 cases: L2
# flushed, the V transpose timed) once per variant of the fp8 forward, cudnn and naive beside the
# first (naive is the baseline of the 2x rule: without it causal fp8 rows are judged by the dtype
# bound alone, whose LSE part does not allow for Hopper's FP8 S accumulation, and fail), while
# nvidia-smi logs the SM clock and the power every 100 ms; a TFLOP/s table last (a column per
# variant, cudnn, then the ratios), then the median clock and power under load in each variant's run
# and in two steady 1.5 s loads (flash-sm90 and cudnn at N = 8k); last an Nsight Compute pass over
# both kernels at 8k (pipe utilization, stall reasons; ncu.log, its nonzero lines printed).
#     BUILD=build-h200 scripts/fp8speed_h200.sh OUTDIR
# Variants (probe variables, flash_sm90_fp8_launch.cuh): base = as shipped (FB_FP8_WAIT=late: session 6's loop
# (ptxas hoisted the wait for P V above the softmax: no overlap inside a warpgroup; call A: 1-3%
# slower, not rerun here); vt2 = the V transpose with 4 x 4 byte blocks; s3 = a third K/V stage (at 224 keys with O
# stored directly, no staging tile); pE = E/8 of the exponentials on the FMA pipe; b96 = three
# consumer warpgroups (192 query rows) with 96-key tiles: a third warp per scheduler for the softmax;
# dir = O stored directly. base2 repeats base last: the drift of the device over the call.
set -uo pipefail
. "$(dirname "$0")/h200_step.sh"
h200_dirs "${1:?usage: BUILD=DIR scripts/fp8speed_h200.sh OUTDIR}"
step_timeout=40 step_tail=0 step_name_width=12
require_build fp8speed_h200.sh

# The shipped loop passed in call A; this one runs the new probes at once (not FB_FP8_EXP2_POLY: with
# O direct it is compiled for d = 128 only, and the tests have d = 64 shapes).
step tests-new env FB_FP8_VTPREP=2 FB_FP8_OSTORE=direct FB_FP8_STAGES=3 "$tests" "[fp8sm90]"
step tests-b96 env FB_FP8_BC=96 FB_FP8_STAGES=3 FB_FP8_OSTORE=direct "$tests" "[fp8sm90]"

# Clock and power while the variants run (stopped at the end; the windows of each run in windows.txt).
smi_pid=
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv,noheader,nounits \
    -lms 50 >"$out/smi.csv" 2>"$out/smi.err" &
  smi_pid=$!
fi
: >"$out/windows.txt"

# The cases: configs/fp8-h200.json's at N 4k-16k, fp8 only.
spec="$out/fp8speed-spec.json"
cat >"$spec" <<'JSON'
{
  "name": "fp8speed-h200",
  "description": "flash-sm90 fp8 variants beside cudnn: d = 128, 16k tokens, model dim 2048, N 4k-16k",
  "seq": [4096, 8192, 16384],
  "tokens": 16384,
  "model_dim": 2048,
  "head_dim": [128],
  "dtype": ["fp8"],
  "causal": [false, true],
  "pass": ["fwd"],
  "kernels": ["flash-sm90"],
  "warmup": 3,
  "reps": 10,
  "seed": 42,
  "verify": true
}
JSON
names=(base vt2s3 vt2s3p1 b96s3 b96s3vt2dir base2)
envs=("" "FB_FP8_VTPREP=2 FB_FP8_STAGES=3" "FB_FP8_VTPREP=2 FB_FP8_STAGES=3 FB_FP8_EXP2_POLY=1"
      "FB_FP8_BC=96 FB_FP8_STAGES=3" "FB_FP8_BC=96 FB_FP8_STAGES=3 FB_FP8_VTPREP=2 FB_FP8_OSTORE=direct" "")
for i in "${!names[@]}"; do
  kernels=flash-sm90
  [ "$i" -eq 0 ] && kernels=naive,flash-sm90,cudnn
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086  # envs[i] is a list of NAME=VALUE words
  step "run-${names[$i]}" env ${envs[$i]} "$fb" run "$spec" --backend cuda --no-ceilings --kernels "$kernels" \
    -o "$out/run-${names[$i]}.json"
  echo "${names[$i]} $t0 $(date +%s.%N)" >>"$out/windows.txt"
done
# Clock and power under a steady load: N = 8k non-causal for 1.5 s of kernel time, flash-sm90 (as
# shipped) then cudnn.
for k in flash-sm90 cudnn; do
  t0=$(date +%s.%N)
  step "load-$k" "$fb" run "$spec" --backend cuda --no-ceilings --kernels "$k" --filter 'n8192-d128-fp8-full' \
    --min-time 1.5 -o "$out/load-$k.json"
  echo "load-$k $t0 $(date +%s.%N)" >>"$out/windows.txt"
done
[ -n "$smi_pid" ] && kill "$smi_pid" 2>/dev/null

# Where the cycles go (Nsight Compute, one launch each of flash-sm90's fp8 kernel and cuDNN's at
# N = 8k): the pipes' utilization and the stall reasons per issued instruction. NCU=0 skips it.
ncu_bin=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
if [ "${NCU:-1}" != 0 ] && [ -x "$ncu_bin" ]; then
  step_timeout=35 step ncu "$ncu_bin" --target-processes all -k 'regex:flash_sm90_fp8_fwd_kernel|fprop_wgmma_f8' -c 3 \
    --metrics 'regex:sm__inst_executed_pipe_[a-z_]+\.avg\.pct_of_peak_sustained_active$,regex:smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active\.ratio$,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.max' \
    "$fb" run "$spec" --backend cuda --no-ceilings --kernels flash-sm90,cudnn --filter 'n8192-d128-fp8-full' \
    --reps 1 --warmup 0 --warmup-time 0 -o "$out/ncu-run.json"
  # Metric names differ between Nsight Compute versions: if these were refused, the sections' own.
  if grep -q "==ERROR==" "$out/ncu.log"; then
    mv "$out/ncu.log" "$out/ncu-refused.log"
    step_timeout=35 step ncu "$ncu_bin" --target-processes all -k 'regex:flash_sm90_fp8_fwd_kernel|fprop_wgmma_f8' -c 3 \
      --section WarpStateStats --section ComputeWorkloadAnalysis --print-details all \
      "$fb" run "$spec" --backend cuda --no-ceilings --kernels flash-sm90,cudnn --filter 'n8192-d128-fp8-full' \
      --reps 1 --warmup 0 --warmup-time 0 -o "$out/ncu-run.json"
  fi
fi

printf '%s\n' "${summary[@]}"
python3 - "$out" "${names[@]}" <<'PY' | tee "$out/table.txt"
import json, os, sys
out, names = sys.argv[1], sys.argv[2:]
tf, bad = {}, []
for n in names:
    path = os.path.join(out, f"run-{n}.json")
    try:
        results = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"({path}: {e})")
        continue
    for r in results:
        c = r["case"]
        key = (c["seq_q"], "causal" if c["causal"] else "full")
        if r["kernel"] == "naive":
            continue
        col = n if r["kernel"] == "flash-sm90" else r["kernel"]
        if r["status"] != "ok" or not r.get("verified"):
            bad.append(f"{col} {key}: {r['status']} verified={r.get('verified')}")
        if r["status"] == "ok":
            tf[key, col] = r["tflops"]
cols = names + ["cudnn"]
print("TFLOP/s (flashbench run: L2 flushed, V transpose included; fp8, d=128, 16k tokens, model dim 2048)")
print(f"{'case':<13}" + "".join(f"{c:>10}" for c in cols) + f"{'best/base':>10}{'best/cudnn':>11}  best")
for key in sorted({k for k, _ in tf}, key=lambda k: (k[1] != "full", k[0])):
    row = f"{key[0]:<6}{key[1]:<7}" + "".join(f"{tf.get((key, c), float('nan')):10.1f}" for c in cols)
    var = {c: tf[key, c] for c in names if (key, c) in tf and c != "base2"}  # base2: the control
    best = max(var, key=var.get) if var else None
    base, cud = tf.get((key, "base")), tf.get((key, "cudnn"))
    row += f"{var[best] / base:10.3f}" if best and base else f"{'-':>10}"
    row += f"{var[best] / cud:11.3f}" if best and cud else f"{'-':>11}"
    print(row + f"  {best}")
print("not ok / not verified: " + ("; ".join(bad) if bad else "none"))
print("(only base runs naive, the 2x rule's baseline: the other variants' causal rows fail the dtype bound's LSE part)")
# Median SM clock (MHz) and power (W) under load in each variant's run (nvidia-smi every 50 ms).
from datetime import datetime
try:
    samples = []
    for line in open(os.path.join(out, "smi.csv")):
        f = [x.strip() for x in line.split(",")]
        try:
            t = datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            samples.append((t, float(f[1]), float(f[2]), f[3]))
        except (ValueError, IndexError):
            continue
    for line in open(os.path.join(out, "windows.txt")):
        n, a, b = line.split()
        w = sorted(s[1:3] for s in samples if float(a) <= s[0] <= float(b))
        if not w:
            print(f"smi {n}: no samples"); continue
        # Under load: the samples at >= 80% of the window's highest power (the timed kernels; the
        # rest of a run is setup, inputs and verification).
        top = max(x[1] for x in w)
        busy = [x for x in w if x[1] >= 0.8 * top]
        clk = sorted(x[0] for x in busy); pw = sorted(x[1] for x in busy)
        print(f"smi {n:<16} {len(busy):3d}/{len(w):3d} samples under load: SM clock median {clk[len(clk)//2]:.0f} MHz"
              f" (min {clk[0]:.0f}), power median {pw[len(pw)//2]:.0f} W (max {pw[-1]:.0f}), limit {samples[0][3]} W")
except OSError as e:
    print(f"(no clock log: {e})")
PY
# The profile's figures, the kernel name and every nonzero metric line (the stall reasons are ratios
# per issued instruction: they add up to the cycles between two issues of a warp).
if [ -f "$out/ncu.log" ]; then
  grep -E "^  [a-zA-Z_]|pct_of_peak|stalled|cycles_elapsed|issue_active" "$out/ncu.log" |
    awk '/^  [a-zA-Z_]/ {print substr($0, 1, 90); next} $NF != "0" && $NF != "0.00" {print "   ", $1, $NF}' | head -n 80
fi
exit "$failed"
