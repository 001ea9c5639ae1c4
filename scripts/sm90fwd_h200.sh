#!/usr/bin/env bash
# flash-sm90's 16-bit forward, session 7 (issue 13): A/B of its timing probes in one device call, everything
# into OUTDIR:
#   the GPU tests of the forward's schedule and odd shapes ([sched], seq_q != seq_k) as shipped, with every new
#   variant on at once (FB_SM90_FWD_PROBE=desc,order,early,stages3,l2small,d64wide) and with
#   desc,order,d64wide,bc176 (the wide d = 64 tiles on the 2-stage ring, d = 128 on 176-key tiles); then
#   configs/sm90fwd-ab.json (d 64/128 x N 1k/4k/16k x causal or not, bf16) with flash-sm90 beside the
#   in-binary cudnn, verified; then flash-sm90 alone once per VARIANT (a comma-separated FB_SM90_FWD_PROBE
#   value; "ship" = unset), unverified (the tests above check the code paths), and the shipped forward once
#   more at the end (the device's drift between the first and last run). Last, a table: TFLOP/s per case and
#   variant, each variant / ship, ship / cudnn.
#     BUILD=build-h200 scripts/sm90fwd_h200.sh OUTDIR [VARIANT...]
# CONFIG (default configs/sm90fwd-ab.json) names another config with flash-sm90 and cudnn in it.
# Default variants: order desc,order d64wide,desc,order bc176,desc,order desc stages3,desc,order
# early,desc,order l2small,desc,order (order restores the intra-warpgroup overlap, desc is the cheaper
# descriptor arithmetic; the others are measured on top of both; d64wide runs only the d = 64 cases, bc176
# only the d = 128 ones). BUILD (default build-h200) must hold
# flashbench and tests/flashbench_gpu_tests built for sm_90a. A variant run starts only while the script has
# run under BUDGET_S seconds (default 52), so that the call stays within its slot; the table says which ran.
set -uo pipefail
out=${1:?usage: scripts/sm90fwd_h200.sh OUTDIR [VARIANT...]}
shift
variants=("$@")
[ ${#variants[@]} -gt 0 ] ||
  variants=(order desc,order d64wide,desc,order bc176,desc,order desc stages3,desc,order early,desc,order
            l2small,desc,order)
build=${BUILD:-build-h200}
budget=${BUDGET_S:-52}
config=${CONFIG:-configs/sm90fwd-ab.json}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
fb="$build/flashbench"
[ -x "$fb" ] && [ -x "$build/tests/flashbench_gpu_tests" ] ||
  { echo "sm90fwd_h200.sh: $build has no flashbench or tests/flashbench_gpu_tests" >&2; exit 2; }

step_timeout=30 step_tail=3 step_name_width=16
. scripts/h200_step.sh
t_start=$SECONDS

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
step tests "$build/tests/flashbench_gpu_tests" "[sched],*seq_q*"
FB_SM90_FWD_PROBE=desc,order,early,stages3,l2small,d64wide step tests-variants "$build/tests/flashbench_gpu_tests" \
  "[sched],*seq_q*"
FB_SM90_FWD_PROBE=desc,order,d64wide,bc176 step tests-wide "$build/tests/flashbench_gpu_tests" "[sched],*seq_q*"
step ship "$fb" run "$config" --kernels flash-sm90,cudnn --no-ceilings -q -o "$out/ship.json"
# The variants' runs: the same cases unverified.
python3 - "$config" "$out/ab-noverify.json" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["verify"] = False
spec["name"] += "-noverify"
json.dump(spec, open(sys.argv[2], "w"), indent=1)
PY
ran=()
for v in "${variants[@]}" ship; do
  if [ $((SECONDS - t_start)) -ge "$budget" ]; then
    summary+=("$(printf "%-16s skipped (budget %ss)" "$v" "$budget")")
    continue
  fi
  name="v-${v//,/+}"
  [ "$v" = ship ] && name=ship-again && v=
  filter=()
  [[ $v == *d64wide* ]] && filter=(--filter '-d64-')  # d = 64 only: other head dims ignore it
  [[ $v == *bc176* ]] && filter=(--filter '-d128-')   # d = 128 only
  FB_SM90_FWD_PROBE=$v step "$name" "$fb" run "$out/ab-noverify.json" --kernels flash-sm90 --no-ceilings -q \
    "${filter[@]}" -o "$out/$name.json"
  ran+=("$name")
done

python3 - "$out" "${ran[@]}" <<'PY' | tee "$out/table.txt"
import json, math, os, sys
out, names = sys.argv[1], sys.argv[2:]
nan = float("nan")
rows, cols = {}, []
def load(path, tag, kernels):
    try:
        results = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"({os.path.basename(path)}: {e})")
        return
    for r in results:
        if r["kernel"] not in kernels:
            continue
        c = r["case"]
        key = (c["dtype"], c["head_dim"], "causal" if c["causal"] else "full", c.get("seq_q", c.get("seq")))
        ok = r["status"] == "ok" and r.get("verified", True) is not False
        col = tag if r["kernel"] == "flash-sm90" else r["kernel"]
        rows.setdefault(key, {})[col] = r["tflops"] if ok else nan
        if col not in cols:
            cols.append(col)
load(os.path.join(out, "ship.json"), "ship", {"flash-sm90", "cudnn"})
for n in names:
    load(os.path.join(out, n + ".json"), n.removeprefix("v-"), {"flash-sm90"})
var = [c for c in cols if c not in ("ship", "cudnn")]
div = lambda x, y: x / y if y and y == y and x == x else nan
short = lambda c: c.replace("ship-again", "again")[:11]
print(f'{"dtype":5} {"d":>3} {"mask":6} {"N":>5} {"ship":>5} {"cudnn":>5} {"s/cud":>6} ' + " ".join(f"{short(c):>11}" for c in var))
logs = {c: [] for c in var + ["cudnn"]}
for key in sorted(rows):
    v = rows[key]
    s, cu = v.get("ship", nan), v.get("cudnn", nan)
    cells = []
    for c in var:
        x = div(v.get(c, nan), s)
        cells.append(f"{x:>10.3f}x" if x == x else f"{'-':>11}")
        if x == x:
            logs[c].append(math.log(x))
    r = div(s, cu)
    if r == r:
        logs["cudnn"].append(math.log(r))
    print(f"{key[0]:5} {key[1]:>3} {key[2]:6} {key[3]:>5} {s:>5.0f} {cu:>5.0f} {r:>5.3f}x " + " ".join(cells))
gm = lambda l: math.exp(sum(l) / len(l)) if l else nan
print("geomean variant/ship: " + ", ".join(f"{c} {gm(logs[c]):.3f}x" for c in var))
print(f"ship / cudnn: geomean {gm(logs['cudnn']):.3f}x over {len(logs['cudnn'])} rows")
PY
echo "--- steps (total $((SECONDS - t_start)) s)"
printf '%s\n' "${summary[@]}"
exit "$failed"
