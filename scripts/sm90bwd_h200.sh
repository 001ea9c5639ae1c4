#!/usr/bin/env bash
# The flash-sm90 backward at head dim 128 on an H100/H200 (issue 13, session 8), everything into OUTDIR,
# ~1.5 minutes: the GPU tests of the 16-bit backward (d = 64/128 odd shapes, [bwd128], GQA/MQA head split),
# then [bwd128] under three FB_SM90_BWD128 probes (a variant is picked once per process), then
# six cases of configs/sm90bwd-h200.json (bf16, 16k tokens; non-causal N 512/2048/8192, causal N
# 512/1024/2048; every row verified) for the default beside the in-binary cudnn, each probe on the same
# cases, and the default once more (the run-to-run spread); last a TFLOP/s table with each column's
# ratio to cudnn. CASES=REGEX (a run --filter) picks other cases of the config.
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
probes="persistent persistent-epi stages3 epi red kvsplit all"
d128_test="flash-sm90 meets the naive-relative rule*"
cases=${CASES:-'n(512|2048|8192)-d128-bf16-full|n(512|1024|2048)-d128-bf16-causal'}

step_timeout=60 step_tail=3 step_name_width=14
. scripts/h200_step.sh
ensure_build sm90bwd_h200.sh

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
step tests "$tests" "$d128_test,[bwd_gqa],[bwd128]"
# The [bwd128] shapes (odd lengths, many tiles, GQA) under the probes' code paths: epi (2-stage ring), all
# (stages3 + epi + red + kvsplit), persistent-epi (persistent forced on every pass: blocks loop over tiles).
for v in epi all; do
  step "tests-$v" env FB_SM90_BWD128=$v "$tests" "[bwd128]"
done
step tests-pers-epi env FB_SM90_BWD128=persistent-epi FB_SM90_BWD_PERSIST=on "$tests" "[bwd128]"
step run "$fb" run configs/sm90bwd-h200.json --no-ceilings -q --filter "$cases" -o "$out/sm90bwd.json"
for v in $probes; do
  step "run-$v" env FB_SM90_BWD128=$v "$fb" run configs/sm90bwd-h200.json --no-ceilings -q --kernels flash-sm90 \
    --filter "$cases" -o "$out/sm90bwd-$v.json"
done
step run-again "$fb" run configs/sm90bwd-h200.json --no-ceilings -q --kernels flash-sm90 --filter "$cases" \
  -o "$out/sm90bwd-again.json"

# TFLOP/s per case (median); default = FB_SM90_BWD128 unset, again = the same a last time; "!" marks a
# row that did not verify. Ratios: each column / cudnn.
python3 - "$out" "$probes" <<'PY' | tee "$out/table.txt"
import json, os, sys
out, probes = sys.argv[1], sys.argv[2].split()
cols, rows = ["default"] + probes + ["again", "cudnn"], {}
def load(name, col):
    path = os.path.join(out, name)
    try:
        results = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"({name}: {e})")
        return
    for r in results:
        c = col if r["kernel"] == "flash-sm90" else r["kernel"]
        ok = r.get("status") == "ok" and r.get("verified") is True
        rows.setdefault(r["key"], {})[c] = (r.get("tflops") or 0.0, ok)
load("sm90bwd.json", "default")
for v in probes:
    load(f"sm90bwd-{v}.json", v)
load("sm90bwd-again.json", "again")
def cell(v, c):
    return (f"{v[c][0]:.0f}" + ("" if v[c][1] else "!")) if c in v else "-"
def ratio(v, c):
    cu = v.get("cudnn", (0.0, False))[0]
    return f"{v[c][0] / cu:.3f}" if c in v and cu else "-"
order = sorted(rows, key=lambda k: ("causal" in k, int(k.split("-n")[1].split("-")[0])))
w = [max(6, len(c)) for c in cols]
for title, f, cs in (("TFLOP/s", cell, cols), ("ratio to cudnn", ratio, cols[:-1])):
    print(f"{title:40} " + " ".join(f"{c:>{w[i]}}" for i, c in enumerate(cs)))
    for key in order:
        print(f"{key:40} " + " ".join(f"{f(rows[key], c):>{w[i]}}" for i, c in enumerate(cs)))
PY
printf '%s\n' "${summary[@]}"
exit "$failed"
