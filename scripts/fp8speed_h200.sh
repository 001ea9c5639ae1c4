#!/usr/bin/env bash
# flash-sm90's fp8 forward against cuDNN's on an H100/H200 (issue 14 part 2), one device call of ~1
# minute: the GPU tests [fp8sm90] as shipped and with every new probe at once, then `flashbench run` on
# fp8, d = 128, 16k tokens, model dim 2048, N 4k/8k/16k, causal and not (the fp8-h200 cases: L2
# flushed, the V transpose timed, every row verified) once per variant of the fp8 forward, cudnn
# beside the first; a TFLOP/s table last (a column per variant, cudnn, then the ratios).
#     BUILD=build-h200 scripts/fp8speed_h200.sh OUTDIR
# Variants (probe variables, flash_sm90_fp8_launch.cuh): base = as shipped; late = session 6's loop
# (ptxas hoisted the wait for P V above the softmax: no overlap inside a warpgroup); vt2 = the V transpose with
# 4 x 4 byte blocks; dir = O stored directly (no staging tile); s3 = a third K/V stage (at 224 keys
# it needs dir); b192 = 192-key tiles. base2 repeats base last: the drift of the device over the call.
set -uo pipefail
out=${1:?usage: BUILD=DIR scripts/fp8speed_h200.sh OUTDIR}
build=${BUILD:-build-h200}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
fb="$build/flashbench"
tests="$build/tests/flashbench_gpu_tests"
for exe in "$fb" "$tests"; do
  [ -x "$exe" ] || { echo "fp8speed_h200.sh: $exe not found (BUILD=$build)" >&2; exit 2; }
done
step_timeout=40 step_tail=0 step_name_width=12
. scripts/h200_step.sh

step tests "$tests" "[fp8sm90]"
step tests-new env FB_FP8_VTPREP=2 FB_FP8_OSTORE=direct FB_FP8_STAGES=3 "$tests" "[fp8sm90]"

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
names=(base late vt2 vt2dir vt2s3 vt2b192s3 base2)
envs=("" "FB_FP8_WAIT=late" "FB_FP8_VTPREP=2" "FB_FP8_VTPREP=2 FB_FP8_OSTORE=direct" "FB_FP8_VTPREP=2 FB_FP8_STAGES=3"
      "FB_FP8_VTPREP=2 FB_FP8_BC=192 FB_FP8_STAGES=3 FB_FP8_OSTORE=direct" "")
for i in "${!names[@]}"; do
  kernels=flash-sm90
  [ "$i" -eq 0 ] && kernels=flash-sm90,cudnn
  # shellcheck disable=SC2086  # envs[i] is a list of NAME=VALUE words
  step "run-${names[$i]}" env ${envs[$i]} "$fb" run "$spec" --backend cuda --no-ceilings --kernels "$kernels" \
    -o "$out/run-${names[$i]}.json"
done

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
PY
exit "$failed"
