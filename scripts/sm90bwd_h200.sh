#!/usr/bin/env bash
# The flash-sm90 16-bit backward's d = 128 probes on an H100/H200 (issue 13), everything into OUTDIR,
# ~55 s (session 10's call A: 4-5 s for a probe's tests, 8-13 s a run): [bwd128] and the GQA/MQA
# verification under each probe (default list: FB_SM90_BWD128=q64, the 64-query kernel on every pass,
# and mbranch, session 11's; a probe is picked once per process; a probe whose tests fail or
# hang is not timed), then
# 6 cases of configs/sm90bwd-h200.json (16k tokens, 16 heads, d = 128: non-causal bf16 N 2048/4096/16384,
# fp16 2048/8192, causal bf16 4096; every row verified) as default (beside the in-binary cudnn), each
# probe, each probe again in reverse order, default again (runs drift 1-3%). Last a table: TFLOP/s of each
# column (mean of its runs, "!" = a row that did not verify), the default's runs, and each column's ratio
# to the default and to cudnn. CASES=REGEX (a run --filter) picks other cases of the config; VARIANTS="a b"
# other probes; TESTS=1 also runs the backward's GPU tests with the defaults first ([bwd128], [bwd64],
# GQA/MQA). CONFIG=FILE times another config's cases (e.g. configs/mqabwd-h200.json's GQA rows; the
# probes run the unsplit kernel, so pick shapes where the default does not split the query heads);
# ROUNDS=1 runs each probe once (no reversed second round); TEST_VARIANTS="a" runs the probe tests for
# those probes only (the others are timed without them; "" for none); PEER2=0 runs the last default run
# without cudnn. A variant named splitN runs the default with FB_SM90_BWD_SPLIT=N (N query-head subsets forced
# on GQA/MQA passes where N divides the group; MHA rows run the default) instead of an FB_SM90_BWD128 word;
# groupedT the default with FB_SM90_BWD_GROUPED=T (T key tiles in plane groups on causal key-tail passes, the
# rest over all planes; non-causal rows run the default); d64-WORD runs FB_SM90_BWD64=WORD (d = 64 rows; the
# d = 128 rows run the default; its tests step runs the [bwd128] filter, so time it with TEST_VARIANTS without it
# and run [bwd64] under it separately).
#     BUILD=build-h200 scripts/sm90bwd_h200.sh OUTDIR
# BUILD (default build-h200) is configured for sm_90a and built when it has no flashbench yet (minutes;
# not part of the 55 s). Each step is limited to STEP_TIMEOUT seconds (default 20); TEST_TIMEOUT and
# PEER_TIMEOUT (default STEP_TIMEOUT) limit the probe tests and the first default run (beside cudnn) instead.
set -uo pipefail
out=${1:?usage: scripts/sm90bwd_h200.sh OUTDIR}
build=${BUILD:-build-h200}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."

fb="$build/flashbench"
tests="$build/tests/flashbench_gpu_tests"
cases=${CASES:-'n(2048|4096|16384)-d128-bf16-full|n(2048|8192)-d128-fp16-full|n4096-d128-bf16-causal'}
read -r -a variants <<<"${VARIANTS:-q64 mbranch}"
config=${CONFIG:-configs/sm90bwd-h200.json}
rounds=${ROUNDS:-2}
test_variants=" ${TEST_VARIANTS-${variants[*]}} "
variant_env() {  # the environment setting that picks variant $1
  case "$1" in
    split[0-9]*) echo "FB_SM90_BWD_SPLIT=${1#split}" ;;
    grouped[0-9]*) echo "FB_SM90_BWD_GROUPED=${1#grouped}" ;;
    d64-*) echo "FB_SM90_BWD64=${1#d64-}" ;;
    *) echo "FB_SM90_BWD128=$1" ;;
  esac
}

step_timeout=20 step_tail=3 step_name_width=16 step_result='test cases|passed|failed'
. scripts/h200_step.sh
ensure_build sm90bwd_h200.sh

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
[ "${TESTS:-0}" = 1 ] && step tests "$tests" "flash-sm90 meets the naive-relative rule*,[bwd_gqa],[bwd128],[bwd64]"
timed=()
for v in "${variants[@]}"; do
  if [[ "$test_variants" != *" $v "* ]]; then timed+=("$v"); continue; fi  # its rows still verify
  # Not the split-choice test: most probes run GQA unsplit (the split exists for the default kernels, q64 and q80c).
  STEP_TIMEOUT=${TEST_TIMEOUT:-${STEP_TIMEOUT:-$step_timeout}} \
    step "tests-$v" env "$(variant_env "$v")" "$tests" "[bwd128],GQA/MQA: the flash-sm90 backward verifies*"
  if [ "$step_rc" -eq 0 ]; then timed+=("$v"); else echo "$v: tests failed (rc=$step_rc), not timed" >&2; fi
done
variants=(${timed[@]+"${timed[@]}"})
run() {  # name, variant ("" = the default, with cudnn)
  if [ -z "$2" ] && { [ "$1" != default-2 ] || [ "${PEER2:-1}" = 1 ]; }; then
    step "$1" "$fb" run "$config" --no-ceilings -q --filter "$cases" -o "$out/$1.json"
  elif [ -z "$2" ]; then
    step "$1" "$fb" run "$config" --no-ceilings -q --kernels flash-sm90 --filter "$cases" -o "$out/$1.json"
  else
    step "$1" env "$(variant_env "$2")" "$fb" run "$config" --no-ceilings -q --kernels flash-sm90 \
      --filter "$cases" -o "$out/$1.json"
  fi
}
STEP_TIMEOUT=${PEER_TIMEOUT:-${STEP_TIMEOUT:-$step_timeout}} run default-1 ""
for v in "${variants[@]}"; do run "$v-1" "$v"; done
if [ "$rounds" -ge 2 ]; then
  for ((i = ${#variants[@]} - 1; i >= 0; i--)); do run "${variants[$i]}-2" "${variants[$i]}"; done
fi
run default-2 ""
printf '%s\n' "${summary[@]}"

python3 - "$out" "${variants[@]}" <<'PY' | tee "$out/table.txt"
import glob, json, os, re, sys
out, variants = sys.argv[1], sys.argv[2:]
cols = ["default"] + variants + ["cudnn"]
runs = {}  # (key, col) -> [(tflops, ok)]
for path in sorted(glob.glob(os.path.join(out, "*-[12].json"))):
    col = re.sub(r"-[12]\.json$", "", os.path.basename(path))
    try:
        results = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"({path}: {e})")
        continue
    for r in results:
        c = col if r["kernel"] == "flash-sm90" else r["kernel"]
        ok = r.get("status") == "ok" and r.get("verified") is True
        runs.setdefault((r["key"], c), []).append((r.get("tflops") or 0.0, ok))
def mean(key, c):
    v = runs.get((key, c))
    return sum(t for t, _ in v) / len(v) if v else 0.0
def cell(key, c):
    v = runs.get((key, c))
    return (f"{mean(key, c):.0f}" + ("" if all(ok for _, ok in v) else "!")) if v else "-"
keys = sorted({k for k, _ in runs}, key=lambda k: ("causal" in k, "fp16" in k, int(k.split("-n")[1].split("-")[0])))
w = [max(7, len(c)) for c in cols]
print(f"{'TFLOP/s (mean of runs)':40} " + " ".join(f"{c:>{w[i]}}" for i, c in enumerate(cols)) + "  default runs")
for k in keys:
    d = " ".join(f"{t:.0f}" for t, _ in runs.get((k, "default"), []))
    print(f"{k:40} " + " ".join(f"{cell(k, c):>{w[i]}}" for i, c in enumerate(cols)) + f"  {d}")
for title, ref in (("ratio to the default", "default"), ("ratio to cudnn", "cudnn")):
    cs = [c for c in cols if c != ref]
    print(f"{title:40} " + " ".join(f"{c:>{max(7, len(c))}}" for c in cs))
    for k in keys:
        r = mean(k, ref)
        print(f"{k:40} " + " ".join(f"{(mean(k, c) / r if r and mean(k, c) else 0):>{max(7, len(c))}.3f}" for c in cs))
PY
exit "$failed"
