#!/usr/bin/env bash
# Session 16 round 1, sm90bwd (issue 13; branch sm90bwds16): the flash-sm90 backward's last partial round, measured
# two ways, beside the in-binary cudnn, <= 60 s (the step limits add up to 60 s; ~30-40 s expected).
# Run from the repository root with BUILD=<build dir> OUTDIR=<dir>.
#   (a) The tail's cost, with the default kernels only: shapes whose work tiles (d = 64, persistent) or blocks
#       (d = 128, one per tile) fill whole rounds of 132 SMs beside the issue-13 shapes, which leave one partial
#       round (d = 64 32 heads: 4096 tiles = 31.03 rounds; d = 128 16 heads: 2048 blocks = 15.52 waves; 8 heads
#       d = 64 N = 4k: 1024 = 7.76). 33 heads make 4224 tiles = 32 rounds (d = 64), 2112 blocks = 16 waves
#       (d = 128); 3 x 11 heads N = 4k 1056 = 8 rounds. If the partial round costs a whole round, the 33-head
#       shape takes the 32-head shape's time (3.1% more work for nothing); if work flowed freely, 1.031x.
#   (b) The probe FB_SM90_BWD64=qtail: the persistent d = 64 kernel with the last partial round's tiles split along
#       the queries (tail_plan(), flash_sm90_bwd.cu: 32 heads N = 1k / 2k / 4k / 8k: 4 tiles x 8 / 16 / 32 / 33
#       parts; 33 heads, 3 x 11 and 4 x 8 heads: nothing split, the word runs the unsplit item order there).
#       d = 128 rows are unchanged by the word (two more default readings there).
#   (c) ncu's kernel durations (gpu__time_duration, clocks and caches as in a timed run) of one backward of ours
#       (pre-pass, main, dQ convert) and of the in-binary cudnn at d = 128 bf16 N = 512 / 1k / 2k, d = 64 fp16 2k.
# Steps:
#   1. [bwd64] GPU tests under qtail (the 2 x 16 x 1025, 15 x 1100 x 1150 and GQA 3 x 4/2 x 2000 x 8500 shapes
#      split on 132 SMs; limit 7 s). A failure or hang drops qtail from the timing.
#   2. Four runs of the 16 rows, interleaved, every row verified: default + cudnn (15 s), qtail, default, qtail
#      (8 s each; flash-sm90 only).
#   3. ncu (limit 14 s).
# Table last: OUTDIR/table.txt (the runs' JSON in OUTDIR/runs/, ncu's CSV in OUTDIR/ncu.log).
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
json.dump(dict(common, name="sm90bwd-s16-r1", verify=True,
               description="the backward's last partial round: full-round shapes and qtail (job1-sm90bwd.sh)",
               seq=[512, 1024, 2048, 4096, 8192], batch=[2, 3, 4, 8, 16, 32], heads=[8, 11, 16, 32, 33],
               kernels=["flash-sm90", "cudnn"]),
          open(sys.argv[1] + "/spec.json", "w"), indent=1)
json.dump(dict(common, name="sm90bwd-s16-r1-ncu", verify=False, description="one backward each under ncu",
               seq=[512, 1024, 2048], batch=[8, 16, 32], heads=[16, 32],
               kernels=["flash-sm90", "cudnn"]),
          open(sys.argv[1] + "/spec-ncu.json", "w"), indent=1)
PY
rows='b32-h16-kv16-n512-d128-bf16|b16-h33-kv33-n512-d128-bf16|b16-h16-kv16-n1024-d128-bf16|b8-h33-kv33-n1024-d128-bf16'
rows+='|b8-h16-kv16-n2048-d128-bf16|b4-h33-kv33-n2048-d128-bf16|b16-h32-kv32-n1024-d64-fp16|b8-h32-kv32-n2048-d64-fp16'
rows+='|b8-h33-kv33-n2048-d64-fp16|b4-h32-kv32-n4096-d64-fp16|b4-h33-kv33-n4096-d64-fp16|b2-h32-kv32-n8192-d64-fp16'
rows+='|b4-h32-kv32-n4096-d64-bf16|b4-h33-kv33-n4096-d64-bf16|b4-h8-kv8-n4096-d64-bf16|b3-h11-kv11-n4096-d64-bf16'
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
run default-1 15 ""
[ "$probe_ok" = 1 ] && run qtail-1 8 qtail
run default-2 8 ""
[ "$probe_ok" = 1 ] && run qtail-2 8 qtail

STEP_TIMEOUT=14 step ncu ncu --csv --metrics gpu__time_duration.sum --clock-control none --cache-control none \
  -k 'regex:bwd|bprop|fprop|sdpa|cudnn|convert|dot|reduce' -c 60 "$fb" run "$out/spec-ncu.json" --no-ceilings -q \
  --warmup 0 --reps 1 --warmup-time 0 \
  --filter '^(b32-h16-kv16-n512-d128-bf16|b16-h16-kv16-n1024-d128-bf16|b8-h16-kv16-n2048-d128-bf16|b8-h32-kv32-n2048-d64-fp16)-full-bwd$'
printf '%s\n' "${summary[@]}"

python3 - "$out" <<'PY' | tee "$out/table.txt"
import csv, glob, json, math, os, re, sys
out = sys.argv[1]
SMS = 132
runs = {}  # (row, column) -> [(tflops, time_ms, verified)]
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
        t = (r.get("time_ms") or {}).get("median") or 0.0
        runs.setdefault((r["key"].replace("-full-bwd", ""), c), []).append((r.get("tflops") or 0.0, t, ok))

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
         ("b4-h32-kv32-n4096-d64-bf16", "b4-h33-kv33-n4096-d64-bf16"),
         ("b4-h8-kv8-n4096-d64-bf16", "b3-h11-kv11-n4096-d64-bf16")]
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
print("(c) ncu: kernel durations of one backward (us), in launch order; clocks and caches not controlled")
try:
    lines = [l for l in open(os.path.join(out, "ncu.log")) if l.startswith('"')]
    rows = list(csv.DictReader(lines))
    for r in rows:
        if r.get("Metric Name") != "gpu__time_duration.sum": continue
        v = float(r["Metric Value"].replace(",", ""))
        us = v / 1e3 if r.get("Metric Unit") == "nsecond" or r.get("Metric Unit") == "ns" else v
        if r.get("Metric Unit") in ("usecond", "us"): us = v
        if r.get("Metric Unit") in ("msecond", "ms"): us = v * 1e3
        print(f"  {r.get('ID', ''):>4} {us:9.1f}  grid {r.get('Grid Size', ''):>14}  {r.get('Kernel Name', '')[:110]}")
except OSError as e:
    print(f"  (no ncu log: {e})")
PY
echo "job1-sm90bwd: $((SECONDS - t0)) s"
exit "$failed"
