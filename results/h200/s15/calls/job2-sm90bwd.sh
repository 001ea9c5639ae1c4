#!/usr/bin/env bash
# Session 15 round 2, sm90bwd (issue 13; branch sm90bwds15): the GQA/MQA head split's subset count on causal
# d = 128, bf16, beside the in-binary cudnn, <= 50 s (the step limits add up to 49 s; ~30-40 s expected).
# Run from the repository root with BUILD=<build dir> OUTDIR=<dir>. Words (FB_SM90_BWD128):
#   splitunit   the probe: the default, except that a causal head split takes the most subsets (at most 8) whose
#               units average at least 16 query-tile steps a key tile (long_enough_units(), flash_sm90_bwd.cu),
#               else the model's count; same kernels, order (L2 plane groups, key tail) and everything else.
#   splitflat   the split before session 14's flip (the model's subsets, one plane group, key tiles outermost).
# Rows (16k tokens unless named; 132 SMs; default split -> splitunit's, splitflat's; "=": unchanged):
#   b16 4 q / 1 kv N = 1024   4 -> 2, 2 (same count as splitflat: only the order differs)   CHANGED
#   b16 8 / 1 N = 1024        8 -> 4, 2                                                       CHANGED
#   b12 8 / 1 N = 1024        8 -> 4, 4 (12288 tokens: no config names it)                    CHANGED
#   b12 4 / 1 N = 1536        4 -> 2, 2 (18432 tokens; units of 13 steps at the default)      CHANGED
#   b12 8 / 1 N = 1536        8 -> 4, 4                                                       CHANGED
#   b16 16 / 1 N = 1024 (8 =, 2), b8 4 / 1 / 8 / 1 / 16 / 1 N = 2048 (4 =, 2; 8 =, 2; 8 =, 4),
#   b4 4 / 1 / 8 / 1 / 16 / 1 N = 4096 (4 =, 2; 8 =, 4; 8 =, 4): unchanged (controls).
# Steps:
#   1. GPU tests under splitunit: [bwd128] + GQA/MQA verification + the split-choice test (limit 9 s). A failure
#      or hang drops splitunit from the timing (the default and splitflat still run).
#   2. Five runs of the 12 rows, interleaved, every row verified: default + cudnn (16 s), splitunit, splitflat,
#      default, splitunit (6 s each; flash-sm90 only).
# Round 1 removed cvwave (no flip), so there is no round-1 A/B here.
# Table last: OUTDIR/table.txt (the runs' JSON in OUTDIR/runs/).
set -uo pipefail
t0=$SECONDS
mkdir -p "$OUTDIR/runs"
out=$(cd "$OUTDIR" && pwd)
build=${BUILD:?BUILD=<build dir>}
fb="$build/flashbench"
tests="$build/tests/flashbench_gpu_tests"
step_tail=2 step_name_width=14 step_result='test cases|passed|failed'
. scripts/h200_step.sh

python3 - "$out/spec.json" <<'PY'
import json, sys
json.dump({"name": "sm90bwd-s15-r2-gqa",
           "description": "GQA/MQA causal bf16 d = 128: the head split's subset count (job2-sm90bwd.sh)",
           "seq": [1024, 1536, 2048, 4096], "batch": [4, 8, 12, 16], "heads": [4, 8, 16], "kv_heads": [1],
           "head_dim": [128], "dtype": ["bf16"], "causal": [True], "pass": ["bwd"],
           "kernels": ["flash-sm90", "cudnn"], "warmup": 3, "reps": 10, "seed": 42, "verify": True},
          open(sys.argv[1], "w"), indent=1)
PY
cases='^(b16-h(4|8|16)-kv1-n1024|b12-h8-kv1-n1024|b12-h(4|8)-kv1-n1536|b8-h(4|8|16)-kv1-n2048|b4-h(4|8|16)-kv1-n4096)-'

STEP_TIMEOUT=9 step tests-splitunit env FB_SM90_BWD128=splitunit "$tests" \
  "[bwd128],GQA/MQA: the flash-sm90 backward verifies*,GQA/MQA: the backward splits*"
probe_ok=$([ "$step_rc" -eq 0 ] && echo 1 || echo 0)
[ "$probe_ok" = 1 ] || echo "splitunit: tests failed (rc=$step_rc), not timed" >&2

run() {  # name, limit (s), word ("" = the default, beside cudnn when the name is default-1)
  local kernels=(--kernels flash-sm90)
  [ "$1" = default-1 ] && kernels=()
  STEP_TIMEOUT=$2 step "$1" env ${3:+FB_SM90_BWD128=$3} "$fb" run "$out/spec.json" --no-ceilings -q \
    ${kernels[@]+"${kernels[@]}"} --filter "$cases" -o "$out/runs/$1.json"
}
run default-1 16 ""
[ "$probe_ok" = 1 ] && run splitunit-1 6 splitunit
run splitflat-1 6 splitflat
run default-2 6 ""
[ "$probe_ok" = 1 ] && run splitunit-2 6 splitunit
printf '%s\n' "${summary[@]}"

python3 - "$out" <<'PY' | tee "$out/table.txt"
import glob, json, os, re, sys
out = sys.argv[1]
changed = {"b16-h4-kv1-n1024": "4>2", "b16-h8-kv1-n1024": "8>4", "b12-h8-kv1-n1024": "8>4",
           "b12-h4-kv1-n1536": "4>2", "b12-h8-kv1-n1536": "8>4"}
runs = {}  # (key, column) -> [(tflops, verified)]
for path in sorted(glob.glob(os.path.join(out, "runs", "*-[12].json"))):
    col = re.sub(r"-[12]\.json$", "", os.path.basename(path))
    try:
        results = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"({os.path.basename(path)}: {e})")
        continue
    for r in results:
        c = col if r["kernel"] == "flash-sm90" else r["kernel"]
        ok = r.get("status") == "ok" and r.get("verified") is True
        runs.setdefault((r["key"].replace("-d128-bf16-causal-bwd", ""), c), []).append((r.get("tflops") or 0.0, ok))
cols = ["default", "splitunit", "splitflat", "cudnn"]
def vals(k, c): return [t for t, _ in runs.get((k, c), [])]
def mean(k, c):
    v = vals(k, c)
    return sum(v) / len(v) if v else 0.0
def cell(k, c):
    v = runs.get((k, c))
    return (f"{mean(k, c):.0f}" + ("" if all(ok for _, ok in v) else "!")) if v else "-"
def ratio(a, b): return f"{a / b:.3f}" if a and b else "-"
keys = sorted({k for k, _ in runs}, key=lambda k: (int(k.split("-n")[1]), int(k.split("-h")[1].split("-")[0]), k))
print("GQA/MQA causal bf16 d = 128 (TFLOP/s, mean of runs; ! = a run that did not verify); split: default>splitunit")
print(f"{'case':20} {'split':>5} " + " ".join(f"{c:>9}" for c in cols) + "  default runs  splitunit runs")
for k in keys:
    print(f"{k:20} {changed.get(k, '='):>5} " + " ".join(f"{cell(k, c):>9}" for c in cols) +
          f"  {' '.join(f'{t:.0f}' for t in vals(k, 'default')):12}  {' '.join(f'{t:.0f}' for t in vals(k, 'splitunit'))}")
print(f"{'ratio to the default':26} {'unit-1':>7} {'unit-2':>7} {'unit':>7} {'flat':>7} {'cudnn':>7}  (unit-n: each splitunit run / the default's mean)")
for k in keys:
    d = mean(k, "default")
    u = vals(k, "splitunit") + [0.0, 0.0]
    print(f"{k:20} {changed.get(k, '='):>5} {ratio(u[0], d):>7} {ratio(u[1], d):>7} {ratio(mean(k, 'splitunit'), d):>7} "
          f"{ratio(mean(k, 'splitflat'), d):>7} {ratio(mean(k, 'cudnn'), d):>7}")
print(f"{'ratio to cudnn':26} {'default':>7} {'unit':>7} {'flat':>7}")
for k in keys:
    cu = mean(k, "cudnn")
    print(f"{k:20} {changed.get(k, '='):>5} " + " ".join(f"{ratio(mean(k, c), cu):>7}" for c in cols[:3]))
PY
echo "job2-sm90bwd: $((SECONDS - t0)) s"
exit "$failed"
