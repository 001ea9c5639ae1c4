#!/usr/bin/env bash
# flash-sm90's 16-bit forward (issue 13): A/B of its timing probes in one device call, everything into OUTDIR:
#   the GPU tests of the forward (the naive-relative rule, [sched]: many tiles per block, GQA, causal,
#   fp16/bf16; seq_q != seq_k; head dims 256/96; [sm90fwd]: the probes' shapes) as shipped, then PROBE_TESTS
#   (default [sched] and seq_q != seq_k) under each of the session's code variants (TEST_PROBES,
#   space-separated FB_SM90_FWD_PROBE values, default noearly,noxtile);
#   then CONFIG (default configs/sm90fwd-s8.json, cases kept by FILTER) once as shipped and once per VARIANT,
#   each run flash-sm90 beside the in-binary cudnn and verified, so that every variant has a same-process
#   ratio to cudnn (the device's clocks drift between runs: session 7 saw 0.92-1.10x on single rows between
#   two runs of one kernel), and the shipped forward again last. Last, a table per case: TFLOP/s of the first
#   shipped run and cudnn, ship/cudnn, drift (last shipped ratio / first), and for each variant
#   (variant/cudnn) / (ship/cudnn) (ship/cudnn = the geometric mean of the two shipped runs' ratios).
#     BUILD=build-h200 scripts/sm90fwd_h200.sh OUTDIR [VARIANT...]
# Default variants: noearly noxtile noearly,noxtile l2small (the shipped defaults off, one at a time, and
# l2small at d = 64; at rows a word does not change it runs the shipped kernel, a noise reference: noxtile
# at d = 64, l2small at d = 128). Session 9 ran early, pin+ones, wg2, l2small; session 10 xskip, qalign
# (docs/perf-notes.md).
# RUN_ARGS: more arguments for each `flashbench run` (e.g. --warmup 3 --reps 10 over a config's own).
# Session 11 ran ostg, stlate+kv4, trec, all five and l2hint on configs/fwd-bf16-h200.json.
# BUILD (default build-h200) must hold flashbench and tests/flashbench_gpu_tests built for sm_90a. A variant
# run starts only while the script has run under BUDGET_S seconds (default 70); the summary says which were
# skipped. Rows that did not verify print as '-'.
set -uo pipefail
out=${1:?usage: scripts/sm90fwd_h200.sh OUTDIR [VARIANT...]}
shift
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(noearly noxtile noearly,noxtile l2small)
build=${BUILD:-build-h200}
budget=${BUDGET_S:-70}
config=${CONFIG:-configs/sm90fwd-s8.json}
filter=${FILTER:-'n(1024|4096|16384)-d128-bf16-full|n(1024|16384)-d128-bf16-causal|n(512|1024)-d64-bf16-causal|n(512|2048)-d64-bf16-full'}
read -r -a test_probes <<<"${TEST_PROBES:-noearly,noxtile}"
read -r -a run_args <<<"${RUN_ARGS:-}"
probe_tests=${PROBE_TESTS:-'[sched],*seq_q*'}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
fb="$build/flashbench"
[ -x "$fb" ] && [ -x "$build/tests/flashbench_gpu_tests" ] ||
  { echo "sm90fwd_h200.sh: $build has no flashbench or tests/flashbench_gpu_tests" >&2; exit 2; }

step_timeout=40 step_tail=3 step_name_width=18
. scripts/h200_step.sh
t_start=$SECONDS
tests="flash-sm90 meets*,[sched],*seq_q*,head dims 256 and 96*,[sm90fwd]"

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
step tests "$build/tests/flashbench_gpu_tests" "$tests"
for v in "${test_probes[@]}"; do
  FB_SM90_FWD_PROBE=$v step "tests-${v//,/+}" "$build/tests/flashbench_gpu_tests" "$probe_tests"
done

ran=()
for v in ship "${variants[@]}" ship; do
  name="v-${v//,/+}"
  if [ "$v" = ship ]; then
    name=ship-first v=
    [ ${#ran[@]} -gt 0 ] && name=ship-last
  fi
  if [ "$name" != ship-last ] && [ "$name" != ship-first ] && [ $((SECONDS - t_start)) -ge "$budget" ]; then
    summary+=("$(printf "%-18s skipped (budget %ss)" "$name" "$budget")")
    continue
  fi
  FB_SM90_FWD_PROBE=$v step "$name" "$fb" run "$config" --filter "$filter" --kernels flash-sm90,cudnn \
    --no-ceilings -q "${run_args[@]}" -o "$out/$name.json"
  ran+=("$name")
done

python3 - "$out" "${ran[@]}" <<'PY' | tee "$out/table.txt"
import json, math, os, sys
out, names = sys.argv[1], sys.argv[2:]
nan = float("nan")
tf = {}  # (run, case key) -> {kernel: TFLOP/s or nan when not ok/verified}
keys = []
for n in names:
    try:
        results = json.load(open(os.path.join(out, n + ".json")))["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"({n}.json: {e})")
        continue
    for r in results:
        c = r["case"]
        key = (c["head_dim"], "causal" if c["causal"] else "full", c.get("seq_q", c.get("seq")))
        ok = r["status"] == "ok" and r.get("verified", True) is not False
        tf.setdefault((n, key), {})[r["kernel"]] = r["tflops"] if ok else nan
        if key not in keys:
            keys.append(key)
def ratio(n, key):
    v = tf.get((n, key), {})
    a, b = v.get("flash-sm90", nan), v.get("cudnn", nan)
    return a / b if a == a and b == b and b else nan
gm2 = lambda a, b: math.sqrt(a * b) if a == a and b == b else (a if a == a else b)
var = [n for n in names if n not in ("ship-first", "ship-last")]
print("bf16; ship and cudnn TFLOP/s from the first shipped run; s/cud = ship / cudnn there; drift = the last shipped")
print("run's ratio / the first's; variant columns: (variant / cudnn) / (ship / cudnn), same-process ratios, ship's")
print("the geometric mean of the two shipped runs; '-' = not run, failed or not verified")
print(f'{"d":>3} {"mask":6} {"N":>5} {"ship":>5} {"cudnn":>5} {"s/cud":>6} {"drift":>6} ' +
      " ".join(f"{c.removeprefix('v-')[:14]:>14}" for c in var))
logs = {c: [] for c in var + ["ship"]}
for key in sorted(keys):
    first = tf.get(("ship-first", key), {})
    r1, r2 = ratio("ship-first", key), ratio("ship-last", key)
    base = gm2(r1, r2)
    drift = r2 / r1 if r1 == r1 and r2 == r2 else nan
    cells = []
    for c in var:
        x = ratio(c, key) / base if base == base else nan
        cells.append(f"{x:>13.3f}x" if x == x else f"{'-':>14}")
        if x == x:
            logs[c].append(math.log(x))
    if r1 == r1:
        logs["ship"].append(math.log(r1))
    print(f"{key[0]:>3} {key[1]:6} {key[2]:>5} {first.get('flash-sm90', nan):>5.0f} {first.get('cudnn', nan):>5.0f} "
          f"{r1:>5.3f}x {drift:>5.3f}x " + " ".join(cells))
gm = lambda l: math.exp(sum(l) / len(l)) if l else nan
print("geomean variant/ship: " + ", ".join(f"{c.removeprefix('v-')} {gm(logs[c]):.3f}x" for c in var))
print(f"ship / cudnn geomean {gm(logs['ship']):.3f}x over {len(logs['ship'])} rows")
PY
echo "--- steps (total $((SECONDS - t_start)) s)"
printf '%s\n' "${summary[@]}"
exit "$failed"
