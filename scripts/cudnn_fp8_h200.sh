#!/usr/bin/env bash
# cuDNN's FP8 attention forward as the `cudnn` kernel's fp8 (issue 14 parts 2 and 4) on an H100/H200,
# everything into OUTDIR, about a minute: the GPU tests tagged [cudnn] (fp8, the 16-bit graphs, and the
# backward for seq_k not a multiple of 128 through the padding-mask workaround on cuDNN < 9.16),
# then configs/cudnn-fp8-h200.json (fp8, d = 128, N 2k/8k, causal and not: naive, flash-sm90, cudnn,
# all verified; cudnn skipped with the reason where cuDNN's FP8 engine races, cudnn_sdpa.cpp,
# fp8_race_shape) with a table (TFLOP/s, O error / bound, LSE error, verdict per kernel and case), then
# configs/cudnn-decode-h200.json (decode timing: cudnn beside flash-decode; DECODE=0 skips it).
#     BUILD=build-h200 scripts/cudnn_fp8_h200.sh OUTDIR
# BUILD (default build-h200) must hold flashbench and tests/flashbench_gpu_tests built with cuDNN.
# Each step is limited to STEP_TIMEOUT seconds (default 120).
set -uo pipefail
. "$(dirname "$0")/h200_step.sh"
h200_dirs "${1:?usage: scripts/cudnn_fp8_h200.sh OUTDIR}"
step_timeout=120 step_tail=0 step_name_width=9

step tests "$build/tests/flashbench_gpu_tests" "[cudnn]"
# What a failing test said, and the warnings (which O type cuDNN stored, what it refused).
grep -E -A3 "FAILED|warning:|REQUIRE|CHECK\(|with expansion|errors \{|test cases" "$out/tests.log" | tail -n 60 >&2
step run "$fb" run configs/cudnn-fp8-h200.json --backend cuda --no-ceilings -o "$out/cudnn-fp8-h200.json" --csv "$out/cudnn-fp8-h200.csv"
tail -n 5 "$out/run.log" >&2

# Per case: TFLOP/s (median), O error / its bound, verdict; cudnn / flash-sm90 last.
python3 - "$out/cudnn-fp8-h200.json" <<'PY' | tee "$out/table.txt"
import json, sys
try:
    results = json.load(open(sys.argv[1]))["results"]
except (OSError, ValueError, KeyError) as e:
    sys.exit(f"({sys.argv[1]}: {e})")
kernels = ["naive", "flash-sm90", "cudnn"]
rows = {}
for r in results:
    c = r["case"]
    key = (c["seq_q"], "causal" if c["causal"] else "full")
    if r["status"] != "ok":
        rows.setdefault(key, {})[r["kernel"]] = (r["status"] + ": " + r.get("reason", "")[:60], None)
        continue
    o = r.get("errors", {}).get("O", {})
    lse = r.get("errors", {}).get("LSE", {})
    cell = f'{r["tflops"]:6.0f} O {o.get("ref", float("nan")):.1e}/{o.get("bound", float("nan")):.1e}' \
           f' LSE {lse.get("ref", float("nan")):.0e} {"ok" if r.get("verified") else "FAIL"}'
    rows.setdefault(key, {})[r["kernel"]] = (cell, r["tflops"])
print("N      mask   " + "".join(f"{k:<40}" for k in kernels) + "cudnn/sm90")
for key in sorted(rows):
    v = rows[key]
    ratio = "-"
    if v.get("cudnn", (0, None))[1] and v.get("flash-sm90", (0, None))[1]:
        ratio = f'{v["cudnn"][1] / v["flash-sm90"][1]:.2f}x'
    print(f"{key[0]:<6} {key[1]:<6} " + "".join(f'{v.get(k, ("-", None))[0]:<40}' for k in kernels) + ratio)
PY
# Decode (DECODE=0 skips): cudnn beside flash-decode, us and % of the copy ceiling per case.
if [ "${DECODE:-1}" != 0 ]; then
  step decode "$fb" run configs/cudnn-decode-h200.json --backend cuda -o "$out/cudnn-decode-h200.json"
  python3 - "$out/cudnn-decode-h200.json" <<'PY' | tee "$out/decode.txt"
import json, sys
try:
    results = json.load(open(sys.argv[1]))["results"]
except (OSError, ValueError, KeyError) as e:
    sys.exit(f"({sys.argv[1]}: {e})")
rows = {}
for r in results:
    c = r["case"]
    key = (c["batch"], c["seq_k"])
    if r["status"] != "ok":
        cell = r["status"]
    else:
        pct = (r.get("roofline") or {}).get("pct_of_copy_bandwidth")
        cell = f'{r["time_ms"]["median"] * 1e3:8.1f} us {r["gbps"]:6.0f} GB/s' + (f" {pct:3.0f}%" if pct else "") + \
               (" ok" if r.get("verified") else " FAIL")
    rows.setdefault(key, {})[r["kernel"]] = cell
print("batch  seq_k   " + "".join(f"{k:<36}" for k in ("flash-decode", "cudnn")))
for key in sorted(rows):
    print(f"{key[0]:<6} {key[1]:<7} " + "".join(f'{rows[key].get(k, "-"):<36}' for k in ("flash-decode", "cudnn")))
PY
fi
printf '%s\n' "${summary[@]}"
exit "$failed"
