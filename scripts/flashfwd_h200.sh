#!/usr/bin/env bash
# The portable flash forward's timing probes on an H100/H200 (issue 13), everything into OUTDIR (~85 s on a
# built tree):
#   the GPU tests of the forward as shipped ([flashfwd]: bf16 d 64/128 around the tiles; flash's accuracy
#   cases; seq_q != seq_k), then [flashfwd] once per probe setting (FB_FLASH_FWD_PROBE is read once per
#   process); CONFIG (default configs/flashfwd-h200.json) with FILTER (default: the rows that trailed
#   FlashAttention-2 in session 7, bf16: d 128 non-causal N 1k/4k/16k, d 128 causal N 2k, d 64 causal N 2k/4k;
#   fp16 d 128 non-causal 4k and causal 2k: the probes are bf16 only, fp16 runs the default), verified: the
#   shipped kernels, each VARIANT, the shipped kernels again (drift); torch-flash (FlashAttention-2) on the
#   same spec through scripts/peers.py. Last, a table: TFLOP/s shipped and FA2, FA2 time / shipped time, and
#   per variant its speed over the shipped kernels' (geometric mean of the runs before and after).
#     BUILD=build-h200 scripts/flashfwd_h200.sh OUTDIR [VARIANT...]
# A VARIANT is an FB_FLASH_FWD_PROBE value (comma-separated words; kernels/flash/flash_fwd_config.h lists them).
# BUILD must hold flashbench and tests/flashbench_gpu_tests. A variant
# starts only while the script has run under BUDGET_S seconds (default 60); the summary names the skipped.
# PEERS=0 skips torch.
set -uo pipefail
out=${1:?usage: scripts/flashfwd_h200.sh OUTDIR [VARIANT...]}
shift
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(old)
build=${BUILD:-build-h200}
budget=${BUDGET_S:-60}
config=${CONFIG:-configs/flashfwd-h200.json}
filter=${FILTER:-'n(1024|4096|16384)-d128-bf16-full|n2048-d128-bf16-causal|n(2048|4096)-d64-bf16-causal|n4096-d128-fp16-full|n2048-d128-fp16-causal'}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
fb="$build/flashbench"
[ -x "$fb" ] && [ -x "$build/tests/flashbench_gpu_tests" ] ||
  { echo "flashfwd_h200.sh: $build has no flashbench or tests/flashbench_gpu_tests" >&2; exit 2; }

step_timeout=30 step_tail=2 step_name_width=20
. scripts/h200_step.sh
t_start=$SECONDS

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
step tests "$build/tests/flashbench_gpu_tests" \
  "[flashfwd],naive meets its dtype tolerance and flash the naive-relative rule vs the fp64 reference,seq_q != seq_k*"
ran=()
for v in ship "${variants[@]}" ship; do
  name="v-${v//,/+}"
  if [ "$v" = ship ]; then
    name=ship-first v=
    [ ${#ran[@]} -gt 0 ] && name=ship-last
  fi
  if [ "$name" != ship-last ] && [ "$name" != ship-first ] && [ $((SECONDS - t_start)) -ge "$budget" ]; then
    summary+=("$(printf "%-20s skipped (budget %ss)" "$name" "$budget")")
    continue
  fi
  if [ -n "$v" ]; then
    FB_FLASH_FWD_PROBE=$v step "test-$name" "$build/tests/flashbench_gpu_tests" "[flashfwd]"
  fi
  FB_FLASH_FWD_PROBE=$v step "$name" "$fb" run "$config" --kernels flash --no-ceilings -q --filter "$filter" \
    -o "$out/$name.json"
  ran+=("$name")
done
if [ "${PEERS:-1}" = 1 ]; then
  # FA2 on the same cases, timed only (the flash rows are verified; peers are measured, not judged).
  python3 - "$config" "$out/peers-spec.json" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["verify"] = False
spec["name"] += "-peers"
json.dump(spec, open(sys.argv[2], "w"), indent=1)
PY
  step_timeout=45 step peers python3 scripts/peers.py "$out/peers-spec.json" --backends flash -o "$out/peers.json"
fi

python3 - "$out" "$filter" "${ran[@]}" <<'PY' | tee "$out/table.txt"
import json, math, os, re, sys
out, filt, names = sys.argv[1], re.compile(sys.argv[2]), sys.argv[3:]
nan = float("nan")
def load(name, kernel):
    try:
        res = json.load(open(os.path.join(out, name)))["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"({name}: {e})")
        return {}
    # Unverified or failed rows count as missing (nan): every flash row must verify.
    return {r["key"]: r for r in res if r["kernel"] == kernel and r["status"] == "ok"
            and (kernel != "flash" or r.get("verified") is True)}
runs = {n: load(n + ".json", "flash") for n in names}
fa2 = load("peers.json", "torch-flash")
keys = sorted({k for r in runs.values() for k in r if filt.search(k)} | {k for k in fa2 if filt.search(k)},
              key=lambda k: (int(re.search(r"-d(\d+)-", k).group(1)), "causal" in k, int(re.search(r"-n(\d+)-", k).group(1))))
t = lambda n, k: runs[n][k]["time_ms"]["median"] if k in runs.get(n, {}) else nan
var = [n for n in names if n not in ("ship-first", "ship-last")]
print("flash forward: TFLOP/s (ship = first shipped run), x = FA2 time / shipped time; variant columns:")
print("shipped time (geometric mean of the runs before and after the variants) / variant time (> 1: faster);")
print("drift = first shipped time / last; '-' = missing or not verified")
print(f'{"case":40}{"ship":>6}{"FA2":>6}{"x":>7}{"drift":>7}' + "".join(f"{v[2:][:14]:>15}" for v in var))
logs = {v: [] for v in var}
for k in keys:
    a, b = t("ship-first", k), t("ship-last", k)
    base = math.sqrt(a * b) if a == a and b == b else (a if a == a else b)
    ship_tf = runs.get("ship-first", {}).get(k, {}).get("tflops", nan)
    f = fa2.get(k)
    x = f["time_ms"]["median"] / a if f and a == a else nan
    row = f"{k:40}{ship_tf:>6.0f}{(f['tflops'] if f else nan):>6.0f}{x:>7.3f}{a / b if a == a and b == b else nan:>7.3f}"
    for v in var:
        r = base / t(v, k)
        if r == r:
            logs[v].append(math.log(r))
            fx = f" ({f['time_ms']['median'] / t(v, k):.3f})" if f else ""
            row += f"{r:>7.3f}{fx:>8}"
        else:
            row += f'{"-":>15}'
    print(row)
print("in brackets: FA2 time / variant time. geomean variant speed over shipped: " +
      ", ".join(f"{v[2:]} {math.exp(sum(l) / len(l)):.3f}" for v, l in logs.items() if l))
PY
echo "--- steps (total $((SECONDS - t_start)) s)"
printf '%s\n' "${summary[@]}"
exit "$failed"
