#!/usr/bin/env bash
# Session 16 round 2, sm90bwd (issue 13; branch sm90bwds16): round 1's job with limits that fit (call A killed every
# timed run: a verified run of 16 rows took ~8.5 s flash-only and ~16 s beside cudnn, the limits were 8 / 15 s), ncu
# dropped (call A has it), and the probe's word now running the default kernels wherever its plan splits nothing, so
# that those rows are true controls. <= 75 s (the step limits add up to 73 s; ~45-50 s expected).
# Run from the repository root with BUILD=<build dir> OUTDIR=<dir> [CALLA=<call A's runs dir>].
#   (a) The tail's cost, default kernels: shapes that fill whole rounds of 132 SMs (33 heads: 4224 tiles = 32 rounds
#       at d = 64, 2112 blocks = 16 waves at d = 128) beside the issue-13 shapes (d = 64 32 heads 4096 tiles = 31.03
#       rounds, d = 128 16 heads 2048 blocks = 15.52 waves): t(33 heads) / t(32 or 16 heads) is 1.000 if the partial
#       round costs a whole round, 1.031 if work flowed freely.
#   (b) FB_SM90_BWD64=qtail: the persistent d = 64 kernel with the last partial round's tiles split along the queries
#       (tail_plan(), flash_sm90_bwd.cu) where it splits: 32 heads N = 1k / 2k / 4k / 8k 4 tiles x 8 / 16 / 32 / 33
#       parts; b6 x 32 heads N = 2560 (3840 tiles) 12 x 11 parts; b2 x 40 heads N = 4k (2560 tiles) 52 x 2 parts (no
#       config names these two). Elsewhere (33 heads, 4 x 8 heads N = 4k, every d = 128 row) the word runs the
#       default kernels: controls.
# Steps:
#   1. [bwd64] GPU tests under qtail (limit 7 s; call A: 2 s). A failure or hang drops qtail from the timing.
#   2. Four runs of the 17 rows, interleaved, every row verified: default + cudnn (24 s), qtail, default, qtail (14 s
#      each; flash-sm90 only).
# Table last: OUTDIR/table.txt (the runs' JSON in OUTDIR/runs/); with call A's readings (CALLA, default
# results/h200/s16/callA/sm90bwd/runs: its journals and qtail-2.json) pooled in a last block.
set -uo pipefail
t0=$SECONDS
mkdir -p "$OUTDIR/runs"
out=$(cd "$OUTDIR" && pwd)
build=${BUILD:?BUILD=<build dir>}
fb="$build/flashbench"
tests="$build/tests/flashbench_gpu_tests"
step_tail=2 step_name_width=14 step_result='test cases|passed|failed'
. scripts/h200_step.sh

python3 - "$out" <<'PY'
import json, sys
common = {"head_dim": [64, 128], "dtype": ["bf16", "fp16"], "causal": [False], "pass": ["bwd"],
          "warmup": 3, "reps": 10, "seed": 42}
json.dump(dict(common, name="sm90bwd-s16-r2", verify=True,
               description="the backward's last partial round: full-round shapes and qtail (job2-sm90bwd.sh)",
               seq=[512, 1024, 2048, 2560, 4096, 8192], batch=[2, 4, 6, 8, 16, 32], heads=[8, 16, 32, 33, 40],
               kernels=["flash-sm90", "cudnn"]),
          open(sys.argv[1] + "/spec.json", "w"), indent=1)
PY
rows='b32-h16-kv16-n512-d128-bf16|b16-h33-kv33-n512-d128-bf16|b16-h16-kv16-n1024-d128-bf16|b8-h33-kv33-n1024-d128-bf16'
rows+='|b8-h16-kv16-n2048-d128-bf16|b4-h33-kv33-n2048-d128-bf16|b16-h32-kv32-n1024-d64-fp16|b8-h32-kv32-n2048-d64-fp16'
rows+='|b8-h33-kv33-n2048-d64-fp16|b4-h32-kv32-n4096-d64-fp16|b4-h33-kv33-n4096-d64-fp16|b2-h32-kv32-n8192-d64-fp16'
rows+='|b4-h32-kv32-n4096-d64-bf16|b4-h33-kv33-n4096-d64-bf16|b4-h8-kv8-n4096-d64-bf16|b6-h32-kv32-n2560-d64-fp16'
rows+='|b2-h40-kv40-n4096-d64-bf16'
cases="^($rows)-full-bwd\$"

STEP_TIMEOUT=7 step tests-qtail env FB_SM90_BWD64=qtail "$tests" "[bwd64]"
probe_ok=$([ "$step_rc" -eq 0 ] && echo 1 || echo 0)
[ "$probe_ok" = 1 ] || echo "qtail: tests failed (rc=$step_rc), not timed" >&2

run() {  # name, limit (s), word ("" = the default, beside cudnn when the name is default-1)
  local kernels=(--kernels flash-sm90)
  [ "$1" = default-1 ] && kernels=()
  STEP_TIMEOUT=$2 step "$1" env ${3:+FB_SM90_BWD64=$3} "$fb" run "$out/spec.json" --no-ceilings -q \
    ${kernels[@]+"${kernels[@]}"} --filter "$cases" -o "$out/runs/$1.json"
}
run default-1 24 ""
[ "$probe_ok" = 1 ] && run qtail-1 14 qtail
run default-2 14 ""
[ "$probe_ok" = 1 ] && run qtail-2 14 qtail

printf '%s\n' "${summary[@]}"

python3 - "$out" "${CALLA:-results/h200/s16/callA/sm90bwd/runs}" <<'PY' | tee "$out/table.txt"
import csv, glob, json, math, os, re, sys
out = sys.argv[1]
SMS = 132
runs = {}  # (row, column) -> [(tflops, time_ms, verified)]
def records(path):  # a run's JSON, else (a killed run) its journal
    try:
        return json.load(open(path))["results"]
    except (OSError, ValueError, KeyError):
        pass
    try:
        return [r for r in map(json.loads, open(path + ".journal.jsonl")) if "key" in r]
    except (OSError, ValueError) as e:
        print(f"({os.path.basename(path)}: {e})")
        return []
def load(into, folder):
    for name in ("default-1", "qtail-1", "default-2", "qtail-2"):
        for r in records(os.path.join(folder, name + ".json")):
            c = name.split("-")[0] if r["kernel"] == "flash-sm90" else r["kernel"]
            ok = r.get("status") == "ok" and r.get("verified") is True
            t = (r.get("time_ms") or {}).get("median") or 0.0
            into.setdefault((r["key"].replace("-full-bwd", ""), c), []).append((r.get("tflops") or 0.0, t, ok))
load(runs, os.path.join(out, "runs"))

def shape(k):
    b, h, n, d = (int(re.search(p, k).group(1)) for p in (r"^b(\d+)", r"-h(\d+)", r"-n(\d+)", r"-d(\d+)"))
    return b, h, n, d
def tiles(k):  # work tiles (d = 64) or blocks (d = 128): 128 keys of a K/V plane
    b, h, n, d = shape(k)
    return b * h * math.ceil(n / 128)
def plan(k):  # tail_plan() on 132 SMs (non-causal, no head split: these rows)
    b, h, n, d = shape(k)
    t = tiles(k)
    if d != 64 or t <= SMS or t % SMS == 0 or math.ceil(n / 128) < 8: return "-"
    r = t % SMS
    parts = min(SMS // r, math.ceil(n / 128))
    return f"{r}x{parts}" if parts >= 2 else "-"
def vals(k, c, i=0): return [v[i] for v in runs.get((k, c), [])]
def mean(k, c, i=0):
    v = vals(k, c, i)
    return sum(v) / len(v) if v else 0.0
def cell(k, c):
    v = runs.get((k, c))
    return (f"{mean(k, c):.0f}" + ("" if all(ok for _, _, ok in v) else "!")) if v else "-"
def ratio(a, b): return f"{a / b:.3f}" if a and b else "-"
keys = sorted({k for k, _ in runs}, key=lambda k: (shape(k)[3], k.split("-")[-1], shape(k)[2], shape(k)[1]))
cols = ["default", "qtail", "cudnn"]
print("(b) TFLOP/s, mean of runs (! = a run that did not verify); plan = split tiles x parts under qtail on 132 SMs")
print(f"{'row':30} {'tiles':>5} {'rounds':>6} {'plan':>6} " + " ".join(f"{c:>8}" for c in cols) +
      "  default runs  qtail runs")
for k in keys:
    t = tiles(k)
    print(f"{k:30} {t:5d} {t / SMS:6.2f} {plan(k):>6} " + " ".join(f"{cell(k, c):>8}" for c in cols) +
          f"  {' '.join(f'{x:.0f}' for x in vals(k, 'default')):12}  {' '.join(f'{x:.0f}' for x in vals(k, 'qtail'))}")
print(f"{'ratio to the default mean':30} {'plan':>6} {'qt-1':>7} {'qt-2':>7} {'qtail':>7} {'cudnn':>7} {'def/cudnn':>9}")
for k in keys:
    d = mean(k, "default")
    q = vals(k, "qtail") + [0.0, 0.0]
    print(f"{k:30} {plan(k):>6} {ratio(q[0], d):>7} {ratio(q[1], d):>7} {ratio(mean(k, 'qtail'), d):>7} "
          f"{ratio(mean(k, 'cudnn'), d):>7} {ratio(d, mean(k, 'cudnn')):>9}")

print()
print("(a) the tail's cost (default runs' median times, mean over runs): B fills whole rounds, A leaves a partial one")
print("    t_B/t_A measured; 'fluid' = work ratio (no tail cost); 'rounds' = ratio of rounds run (a whole round lost);")
print("    idle(A) = 1 - (t_B * work_A / work_B) / t_A = the share of A's time its partial round wastes")
pairs = [("b32-h16-kv16-n512-d128-bf16", "b16-h33-kv33-n512-d128-bf16"),
         ("b16-h16-kv16-n1024-d128-bf16", "b8-h33-kv33-n1024-d128-bf16"),
         ("b8-h16-kv16-n2048-d128-bf16", "b4-h33-kv33-n2048-d128-bf16"),
         ("b8-h32-kv32-n2048-d64-fp16", "b8-h33-kv33-n2048-d64-fp16"),
         ("b4-h32-kv32-n4096-d64-fp16", "b4-h33-kv33-n4096-d64-fp16"),
         ("b4-h32-kv32-n4096-d64-bf16", "b4-h33-kv33-n4096-d64-bf16")]
print(f"{'A':30} {'B':30} {'t_A us':>8} {'t_B us':>8} {'t_B/t_A':>8} {'fluid':>7} {'rounds':>7} {'idle(A)':>8}"
      f" {'cudnn t_B/t_A':>13}")
for a, b in pairs:
    ta, tb = mean(a, "default", 1), mean(b, "default", 1)
    ca, cb = mean(a, "cudnn", 1), mean(b, "cudnn", 1)
    wa, wb = tiles(a), tiles(b)
    fluid, rounds = wb / wa, math.ceil(wb / SMS) / math.ceil(wa / SMS)
    idle = 1 - (tb * wa / wb) / ta if ta and tb else float("nan")
    print(f"{a:30} {b:30} {ta * 1e3:8.1f} {tb * 1e3:8.1f} {ratio(tb, ta):>8} {fluid:7.3f} {rounds:7.3f} "
          f"{idle * 100:7.1f}% {ratio(cb, ca):>13}")

print()
calla = {}
load(calla, sys.argv[2])
print(f"(b') calls A and B pooled (call A: {sys.argv[2]}; its runs were killed at their limits, the journals kept what")
print("     finished): qtail readings / the mean of every default reading, per row")
print(f"{'row':30} {'plan':>6} {'n def':>5} {'n qt':>4} {'qtail / default (each)':40} {'mean':>6}")
for k in keys:
    d = vals(k, "default") + [v[0] for v in calla.get((k, "default"), [])]
    q = vals(k, "qtail") + [v[0] for v in calla.get((k, "qtail"), [])]
    dm = sum(d) / len(d) if d else 0.0
    each = " ".join(f"{x / dm:.3f}" for x in q) if dm else "-"
    qm = sum(q) / len(q) if q else 0.0
    print(f"{k:30} {plan(k):>6} {len(d):5d} {len(q):4d} {each:40} {ratio(qm, dm):>6}")
PY
echo "job2-sm90bwd: $((SECONDS - t0)) s"
exit "$failed"
