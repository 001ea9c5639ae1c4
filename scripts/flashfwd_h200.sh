#!/usr/bin/env bash
# The portable flash forward's timing probes on an H100/H200 (issue 13), everything into OUTDIR (~45 s on a
# built tree):
#   the GPU tests of the forward as shipped ([flashfwd]: bf16/fp16 d 64/128 around the tiles; flash's accuracy
#   cases; seq_q != seq_k), then [flashfwd] once per probe setting (FB_FLASH_FWD_PROBE is read once per
#   process); CONFIG (default configs/flashfwd-h200.json) with FILTER (default: the rows that trailed
#   FlashAttention-2 in session 10's final sweep and their neighbours, both 16-bit types: d 128 non-causal
#   N 512/1k/2k, d 64 causal N 1k/2k/4k, d 128 causal N 1k, and d 64 non-causal N 512 (bf16) as a check),
#   verified: the shipped kernels, then the VARIANTs in groups of GROUP (default 4) with the shipped kernels again
#   after each group;
#   torch-flash (FlashAttention-2) on the same spec through scripts/peers.py. Last, a table: TFLOP/s shipped and
#   FA2, FA2 time / shipped time, and per variant its speed over the shipped kernels' (geometric mean of the
#   shipped runs just before and just after it); then fp16 time / bf16 time of each case, ours and FA2's.
#     BUILD=build-h200 scripts/flashfwd_h200.sh OUTDIR [VARIANT...]
# A VARIANT is an FB_FLASH_FWD_PROBE value (comma-separated words; kernels/flash/flash_fwd_config.h lists
# them). BUILD must hold flashbench and tests/flashbench_gpu_tests. A variant starts only while the script has
# run under BUDGET_S seconds (default 55); the summary names the skipped. PEERS=0 skips torch.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: scripts/flashfwd_h200.sh OUTDIR [VARIANT...]" >&2; exit 2; }
. "$(dirname "$0")/h200_step.sh"
h200_dirs "$1"
shift
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(band0 nopf)
budget=${BUDGET_S:-55}
group=${GROUP:-4}
config=${CONFIG:-configs/flashfwd-h200.json}
filter=${FILTER:-'n(512|1024|2048)-d128-(bf16|fp16)-full|n(1024|2048|4096)-d64-(bf16|fp16)-causal|n1024-d128-(bf16|fp16)-causal|n512-d64-bf16-full'}
require_build flashfwd_h200.sh

step_timeout=30 step_tail=2 step_name_width=20
t_start=$SECONDS

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
step tests "$tests" \
  "[flashfwd],naive meets its dtype tolerance and flash the naive-relative rule vs the fp64 reference,seq_q != seq_k*"
# The run order: ship-1, a group of variants, ship-2, the next group, ..., a last ship run.
order=(ship)
n=0
for v in "${variants[@]}"; do
  order+=("$v")
  n=$((n + 1))
  [ $((n % group)) -eq 0 ] && [ "$n" -lt ${#variants[@]} ] && order+=(ship)
done
order+=(ship)
ran=()
ships=0
for v in "${order[@]}"; do
  if [ "$v" = ship ]; then
    ships=$((ships + 1))
    name=ship-$ships v=
  else
    name="v-${v//,/+}"
    if [ $((SECONDS - t_start)) -ge "$budget" ]; then
      summary+=("$(printf "%-20s skipped (budget %ss)" "$name" "$budget")")
      continue
    fi
    FB_FLASH_FWD_PROBE=$v step "test-$name" "$tests" "[flashfwd]"
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
dim = lambda k: int(re.search(r"-d(\d+)-", k).group(1))
seq = lambda k: int(re.search(r"-n(\d+)-", k).group(1))
keys = sorted({k for r in runs.values() for k in r if filt.search(k)} | {k for k in fa2 if filt.search(k)},
              key=lambda k: (dim(k), "causal" in k, seq(k), "fp16" in k))
t = lambda n, k: runs[n][k]["time_ms"]["median"] if k in runs.get(n, {}) else nan
# Each variant against the shipped runs just before and just after it (the run order is the names' order).
ships = [i for i, n in enumerate(names) if n.startswith("ship-")]
var = [n for n in names if not n.startswith("ship-")]
around = {}
for i, n in enumerate(names):
    if n in var:
        before = max((j for j in ships if j < i), default=None)
        after = min((j for j in ships if j > i), default=None)
        around[n] = [names[j] for j in (before, after) if j is not None]
def base(n, k):
    ts = [t(s, k) for s in around[n] if t(s, k) == t(s, k)]
    return math.exp(sum(map(math.log, ts)) / len(ts)) if ts else nan
first, last = names[ships[0]], names[ships[-1]]
print("flash forward: TFLOP/s (ship = first shipped run), x = FA2 time / shipped time; variant columns:")
print("shipped time (geometric mean of the shipped runs just before and after it) / variant time (> 1: faster);")
print("drift = first shipped time / last; '-' = missing or not verified")
print(f'{"case":40}{"ship":>6}{"FA2":>6}{"x":>7}{"drift":>7}' + "".join(f"{v[2:][:14]:>15}" for v in var))
logs = {v: [] for v in var}
for k in keys:
    a, b = t(first, k), t(last, k)
    ship_tf = runs.get(first, {}).get(k, {}).get("tflops", nan)
    f = fa2.get(k)
    x = f["time_ms"]["median"] / a if f and a == a else nan
    row = f"{k:40}{ship_tf:>6.0f}{(f['tflops'] if f else nan):>6.0f}{x:>7.3f}{a / b if a == a and b == b else nan:>7.3f}"
    for v in var:
        r = base(v, k) / t(v, k)
        if r == r:
            logs[v].append(math.log(r))
            fx = f" ({f['time_ms']['median'] / t(v, k):.3f})" if f else ""
            row += f"{r:>7.3f}{fx:>8}"
        else:
            row += f'{"-":>15}'
    print(row)
print("in brackets: FA2 time / variant time. geomean variant speed over shipped: " +
      ", ".join(f"{v[2:]} {math.exp(sum(l) / len(l)):.3f}" for v, l in logs.items() if l))
# fp16 against bf16 on the same case, same process: ours (all shipped runs) and FA2's.
print("fp16 time / bf16 time (> 1: fp16 slower): ours (geomean of the shipped runs), FA2")
for k in keys:
    if "-bf16-" not in k:
        continue
    k16 = k.replace("-bf16-", "-fp16-")
    ours = [t(s, k16) / t(s, k) for s in (names[j] for j in ships) if t(s, k16) == t(s, k16) and t(s, k) == t(s, k)]
    if not ours:
        continue
    o = math.exp(sum(map(math.log, ours)) / len(ours))
    f = fa2[k16]["time_ms"]["median"] / fa2[k]["time_ms"]["median"] if k in fa2 and k16 in fa2 else nan
    print(f"  {k.replace('-bf16-', '-*-'):40} ours {o:.3f}  FA2 {f:.3f}")
PY
echo "--- steps (total $((SECONDS - t_start)) s)"
printf '%s\n' "${summary[@]}"
exit "$failed"
