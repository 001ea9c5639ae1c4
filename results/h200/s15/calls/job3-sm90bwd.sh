#!/usr/bin/env bash
# Session 15 round 3, sm90bwd (issue 13; branch sm90bwds15c): causal d = 128 GQA/MQA head splits with one-head
# units, bf16, beside the in-binary cudnn, <= 50 s (the step limits add up to 49 s; ~25-30 s expected).
# Since calls D and E (results/h200/s15/callD/, callE/) unit2h is the default and the word is refused; to repeat
# this A/B, run FB_SM90_BWD128=unit1h (the split before) against the default.
# Run from the repository root with BUILD=<build dir> OUTDIR=<dir>. Word (FB_SM90_BWD128):
#   unit2h   the probe: the default, except that a causal d = 128 head split takes at most group / 2 subsets
#            (units of >= 2 query heads) where the group has >= 4 heads, and never fewer than the model's
#            count (head_split(), flash_sm90_bwd.cu); same kernels, L2 plane groups, key-tail order, T model.
# Rows (bf16 causal d = 128, 1 kv head; subsets default -> unit2h on 132 SMs; "=": unchanged):
#   4 q heads: b12 N = 1536, b8 N = 2048, b7 N = 2000, b6 N = 2560, b5 N = 3072, b4 N = 4096   4 -> 2   CHANGED
#   8 q heads: b12 N = 1536, b4 N = 1800, b8 N = 2048, b6 N = 2560, b5 N = 3072, b4 N = 4096   8 -> 4   CHANGED
#   controls: 2 q heads b8 N = 2048, b4 N = 4096, b2 N = 8192 (2 =: a one-head unit is the only split);
#             b2 N = 8192 with 4 and 8 q heads (4 =, 8 =: the model's own count is the group there).
#   b7 N = 2000, b4 N = 1800, N = 2560 / 3072 at b6 / b5 and 12-batch rows: no config names them.
# Steps:
#   1. GPU tests under unit2h: [bwd128] + GQA/MQA verification (a 4 x 8 / 1 N = 1800 shape takes 4 subsets under
#      unit2h, 8 under the default) + the split-choice test (limit 9 s). A failure or hang drops unit2h from the
#      timing.
#   2. Four runs of the 17 rows, interleaved, every row verified: default + cudnn (16 s), unit2h, default,
#      unit2h (8 s each; flash-sm90 only). Call B's 12 rows took 8 s / 3 s a run; these are ~1.3x the work.
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
json.dump({"name": "sm90bwd-s15-r3-gqa",
           "description": "GQA/MQA causal bf16 d = 128: one-head units in the head split (job3-sm90bwd.sh)",
           "seq": [1536, 1800, 2000, 2048, 2560, 3072, 4096, 8192], "batch": [2, 4, 5, 6, 7, 8, 12],
           "heads": [2, 4, 8], "kv_heads": [1],
           "head_dim": [128], "dtype": ["bf16"], "causal": [True], "pass": ["bwd"],
           "kernels": ["flash-sm90", "cudnn"], "warmup": 3, "reps": 10, "seed": 42, "verify": True},
          open(sys.argv[1], "w"), indent=1)
PY
cases='^(b12-h(4|8)-kv1-n1536|b4-h8-kv1-n1800|b7-h4-kv1-n2000|b8-h(2|4|8)-kv1-n2048|b6-h(4|8)-kv1-n2560|b5-h(4|8)-kv1-n3072|b4-h(2|4|8)-kv1-n4096|b2-h(2|4|8)-kv1-n8192)-'

STEP_TIMEOUT=9 step tests-unit2h env FB_SM90_BWD128=unit2h "$tests" \
  "[bwd128],GQA/MQA: the flash-sm90 backward verifies*,GQA/MQA: the backward splits*"
probe_ok=$([ "$step_rc" -eq 0 ] && echo 1 || echo 0)
[ "$probe_ok" = 1 ] || echo "unit2h: tests failed (rc=$step_rc), not timed" >&2

run() {  # name, limit (s), word ("" = the default, beside cudnn when the name is default-1)
  local kernels=(--kernels flash-sm90)
  [ "$1" = default-1 ] && kernels=()
  STEP_TIMEOUT=$2 step "$1" env ${3:+FB_SM90_BWD128=$3} "$fb" run "$out/spec.json" --no-ceilings -q \
    ${kernels[@]+"${kernels[@]}"} --filter "$cases" -o "$out/runs/$1.json"
}
run default-1 16 ""
[ "$probe_ok" = 1 ] && run unit2h-1 8 unit2h
run default-2 8 ""
[ "$probe_ok" = 1 ] && run unit2h-2 8 unit2h
printf '%s\n' "${summary[@]}"

python3 - "$out" <<'PY' | tee "$out/table.txt"
import glob, json, os, re, sys
out = sys.argv[1]
changed = {"b12-h4-kv1-n1536": "4>2", "b8-h4-kv1-n2048": "4>2", "b7-h4-kv1-n2000": "4>2", "b6-h4-kv1-n2560": "4>2",
           "b5-h4-kv1-n3072": "4>2", "b4-h4-kv1-n4096": "4>2",
           "b12-h8-kv1-n1536": "8>4", "b4-h8-kv1-n1800": "8>4", "b8-h8-kv1-n2048": "8>4", "b6-h8-kv1-n2560": "8>4",
           "b5-h8-kv1-n3072": "8>4", "b4-h8-kv1-n4096": "8>4"}
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
cols = ["default", "unit2h", "cudnn"]
def vals(k, c): return [t for t, _ in runs.get((k, c), [])]
def mean(k, c):
    v = vals(k, c)
    return sum(v) / len(v) if v else 0.0
def cell(k, c):
    v = runs.get((k, c))
    return (f"{mean(k, c):.0f}" + ("" if all(ok for _, ok in v) else "!")) if v else "-"
def ratio(a, b): return f"{a / b:.3f}" if a and b else "-"
keys = sorted({k for k, _ in runs},
              key=lambda k: (int(k.split("-h")[1].split("-")[0]), int(k.split("-n")[1]), k))
print("GQA/MQA causal bf16 d = 128 (TFLOP/s, mean of runs; ! = a run that did not verify); split: default>unit2h")
print(f"{'case':18} {'split':>5} " + " ".join(f"{c:>8}" for c in cols) + "  default runs  unit2h runs")
for k in keys:
    print(f"{k:18} {changed.get(k, '='):>5} " + " ".join(f"{cell(k, c):>8}" for c in cols) +
          f"  {' '.join(f'{t:.0f}' for t in vals(k, 'default')):12}  {' '.join(f'{t:.0f}' for t in vals(k, 'unit2h'))}")
print(f"{'ratio to the default':24} {'u2h-1':>7} {'u2h-2':>7} {'u2h':>7} {'cudnn':>7}  (u2h-n: each unit2h run / the default's mean)")
for k in keys:
    d = mean(k, "default")
    u = vals(k, "unit2h") + [0.0, 0.0]
    print(f"{k:18} {changed.get(k, '='):>5} {ratio(u[0], d):>7} {ratio(u[1], d):>7} {ratio(mean(k, 'unit2h'), d):>7} "
          f"{ratio(mean(k, 'cudnn'), d):>7}")
print(f"{'ratio to cudnn':24} {'default':>7} {'u2h':>7}")
for k in keys:
    cu = mean(k, "cudnn")
    print(f"{k:18} {changed.get(k, '='):>5} " + " ".join(f"{ratio(mean(k, c), cu):>7}" for c in cols[:2]))
PY
echo "job3-sm90bwd: $((SECONDS - t0)) s"
exit "$failed"
