#!/usr/bin/env bash
# flash-sm90's 16-bit forward, session 7 (issue 13): A/B of its timing probes in one device call, everything
# into OUTDIR:
#   the GPU tests of the forward ([sched]: many tiles per block, GQA, causal, fp16/bf16; seq_q != seq_k) as shipped, then
#   [sched] and seq_q != seq_k again with the variants on (FB_SM90_FWD_PROBE=lean,early,l2small,bc176, then nopp);
#   CONFIG (default configs/sm90fwd-b.json: bf16 and fp16, d 64/128, N 512..16k, causal or not) with flash-sm90
#   beside the in-binary cudnn, verified; then flash-sm90 alone, unverified (the tests check the code paths):
#   shipped, once per VARIANT (a FB_SM90_FWD_PROBE value, comma-separated words), shipped again. Last, a table:
#   TFLOP/s per case (shipped, cudnn, their ratio), drift (last shipped run / first) and each variant / shipped
#   (the geometric mean of the two unverified shipped runs: call A showed that verified and unverified runs
#   differ in clocks).
#     BUILD=build-h200 scripts/sm90fwd_h200.sh OUTDIR [VARIANT...]
# Default variants: nodesc lean early bc176 l2small nopp (nodesc: session 6's main loop; bc176 runs only the
# d = 128 cases). BUILD (default build-h200) must hold flashbench and tests/flashbench_gpu_tests built for
# sm_90a. A variant run starts only while the script has run under BUDGET_S seconds (default 60); the summary
# says which were skipped.
set -uo pipefail
out=${1:?usage: scripts/sm90fwd_h200.sh OUTDIR [VARIANT...]}
shift
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(nodesc lean early bc176 l2small nopp)
build=${BUILD:-build-h200}
budget=${BUDGET_S:-60}
config=${CONFIG:-configs/sm90fwd-b.json}
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
FB_SM90_FWD_PROBE=lean,early,l2small,bc176 step tests-variants "$build/tests/flashbench_gpu_tests" "[sched],*seq_q*"
FB_SM90_FWD_PROBE=nopp step tests-nopp "$build/tests/flashbench_gpu_tests" "[sched],*seq_q*"
step ship "$fb" run "$config" --kernels flash-sm90,cudnn --no-ceilings -q -o "$out/ship.json"
# The variants' runs: the same cases unverified.
python3 - "$config" "$out/ab-noverify.json" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["verify"] = False
spec["name"] += "-noverify"
json.dump(spec, open(sys.argv[2], "w"), indent=1)
PY
# The shipped forward, unverified, before and after the variants: each variant is compared with the geometric
# mean of the two (call A showed verified and unverified runs at different clocks, and drift over a call).
ran=()
for v in ship "${variants[@]}" ship; do
  name="v-${v//,/+}"
  if [ "$v" = ship ]; then
    name=ship-first v=
    [ ${#ran[@]} -gt 0 ] && name=ship-last
  fi
  if [ "$name" != ship-last ] && [ $((SECONDS - t_start)) -ge "$budget" ]; then
    summary+=("$(printf "%-16s skipped (budget %ss)" "$name" "$budget")")
    continue
  fi
  filter=()
  [[ $v == *bc176* ]] && filter=(--filter '-d128-')  # d = 128 only: other head dims ignore it
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
var = [c for c in cols if c not in ("ship", "cudnn", "ship-first", "ship-last")]
div = lambda x, y: x / y if y and y == y and x == x else nan
gm2 = lambda a, b: math.sqrt(a * b) if a == a and b == b else (a if a == a else b)
print("TFLOP/s: ship and cudnn from the verified run; variant columns: variant / shipped (geometric mean of the")
print("unverified shipped runs before and after the variants); drift = last shipped run / first")
print(f'{"dtype":5} {"d":>3} {"mask":6} {"N":>5} {"ship":>5} {"cudnn":>5} {"s/cud":>6} {"drift":>6} ' +
      " ".join(f"{c[:11]:>11}" for c in var))
logs = {c: [] for c in var + ["cudnn"]}
for key in sorted(rows):
    v = rows[key]
    s, cu = v.get("ship", nan), v.get("cudnn", nan)
    base = gm2(v.get("ship-first", nan), v.get("ship-last", nan))
    drift = div(v.get("ship-last", nan), v.get("ship-first", nan))
    cells = []
    for c in var:
        x = div(v.get(c, nan), base)
        cells.append(f"{x:>10.3f}x" if x == x else f"{'-':>11}")
        if x == x:
            logs[c].append(math.log(x))
    r = div(s, cu)
    if r == r:
        logs["cudnn"].append(math.log(r))
    print(f"{key[0]:5} {key[1]:>3} {key[2]:6} {key[3]:>5} {s:>5.0f} {cu:>5.0f} {r:>5.3f}x {drift:>5.3f}x " + " ".join(cells))
gm = lambda l: math.exp(sum(l) / len(l)) if l else nan
print("geomean variant/shipped: " + ", ".join(f"{c} {gm(logs[c]):.3f}x" for c in var))
r = [math.exp(x) for x in logs["cudnn"]]
if r:
    print(f"ship / cudnn: {min(r):.3f}-{max(r):.3f}x, geomean {gm(logs['cudnn']):.3f}x over {len(r)} rows")
PY
echo "--- steps (total $((SECONDS - t_start)) s)"
printf '%s\n' "${summary[@]}"
exit "$failed"
