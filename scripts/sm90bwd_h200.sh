#!/usr/bin/env bash
# The flash-sm90 16-bit backward's session-8 variants on an H100/H200 (issue 13), everything into OUTDIR,
# ~1 minute: the GPU tests of the backward (d = 64/128 odd shapes, [bwd128], [bwd64], GQA/MQA head
# split) with the defaults, [bwd64] again under FB_SM90_BWD64=direct (a variant is picked once per
# process); then configs/sm90bwd-h200.json's cases (bf16, 16k tokens; d = 128 non-causal N
# 512/2048/8192 and causal 512/1024/2048, d = 64 non-causal 512/1024/2048/8192 and causal 512/1024;
# every row verified) for the defaults beside the in-binary cudnn, session 7's d = 128 kernel
# (FB_SM90_BWD128=direct: dK/dV stored from the accumulators), session 7's d = 64 kernel
# (FB_SM90_BWD64=direct, the same), and the defaults again (the run-to-run spread); last two tables
# (TFLOP/s, ratio to cudnn). CASES=REGEX (a run --filter) picks other cases of the config.
#     BUILD=build-h200 scripts/sm90bwd_h200.sh OUTDIR
# BUILD (default build-h200) is configured for sm_90a and built when it has no flashbench yet (minutes;
# not part of the minute). Each step is limited to STEP_TIMEOUT seconds (default 60).
set -uo pipefail
out=${1:?usage: scripts/sm90bwd_h200.sh OUTDIR}
build=${BUILD:-build-h200}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."

fb="$build/flashbench"
tests="$build/tests/flashbench_gpu_tests"
d128='n(512|2048|8192)-d128-bf16-full|n(512|1024|2048)-d128-bf16-causal'
d64='n(512|1024|2048|8192)-d64-bf16-full|n(512|1024)-d64-bf16-causal'
cases=${CASES:-"$d128|$d64"}

step_timeout=60 step_tail=3 step_name_width=14
. scripts/h200_step.sh
ensure_build sm90bwd_h200.sh

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
step tests "$tests" "flash-sm90 meets the naive-relative rule*,[bwd_gqa],[bwd128],[bwd64]"
step tests-64dir env FB_SM90_BWD64=direct "$tests" "[bwd64]"
step run "$fb" run configs/sm90bwd-h200.json --no-ceilings -q --filter "$cases" -o "$out/sm90bwd.json"
step run-direct env FB_SM90_BWD128=direct "$fb" run configs/sm90bwd-h200.json --no-ceilings -q --kernels flash-sm90 \
  --filter "$d128" -o "$out/sm90bwd-direct.json"
step run-64dir env FB_SM90_BWD64=direct "$fb" run configs/sm90bwd-h200.json --no-ceilings -q --kernels flash-sm90 \
  --filter "$d64" -o "$out/sm90bwd-64direct.json"
step run-again "$fb" run configs/sm90bwd-h200.json --no-ceilings -q --kernels flash-sm90 --filter "$cases" \
  -o "$out/sm90bwd-again.json"

# TFLOP/s per case (median); default = no variant set, again = the same a last time; "!" marks a row
# that did not verify. Ratios: each column / cudnn.
python3 - "$out" <<'PY' | tee "$out/table.txt"
import json, os, sys
out = sys.argv[1]
files = (("sm90bwd.json", "default"), ("sm90bwd-direct.json", "d128-direct"), ("sm90bwd-64direct.json", "d64-direct"),
         ("sm90bwd-again.json", "again"))
cols, rows = [c for _, c in files] + ["cudnn"], {}
for name, col in files:
    path = os.path.join(out, name)
    try:
        results = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"({name}: {e})")
        continue
    for r in results:
        c = col if r["kernel"] == "flash-sm90" else r["kernel"]
        ok = r.get("status") == "ok" and r.get("verified") is True
        rows.setdefault(r["key"], {})[c] = (r.get("tflops") or 0.0, ok)
def cell(v, c):
    return (f"{v[c][0]:.0f}" + ("" if v[c][1] else "!")) if c in v else "-"
def ratio(v, c):
    cu = v.get("cudnn", (0.0, False))[0]
    return f"{v[c][0] / cu:.3f}" if c in v and cu else "-"
order = sorted(rows, key=lambda k: ("-d64-" in k, "causal" in k, int(k.split("-n")[1].split("-")[0])))
w = [max(6, len(c)) for c in cols]
for title, f, cs in (("TFLOP/s", cell, cols), ("ratio to cudnn", ratio, cols[:-1])):
    print(f"{title:40} " + " ".join(f"{c:>{w[i]}}" for i, c in enumerate(cs)))
    for key in order:
        print(f"{key:40} " + " ".join(f"{f(rows[key], c):>{w[i]}}" for i, c in enumerate(cs)))
PY
printf '%s\n' "${summary[@]}"
exit "$failed"
