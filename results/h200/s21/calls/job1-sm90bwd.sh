#!/usr/bin/env bash
# Session 20, prepared for session 21's first call, sm90bwd (issue 13; branch sm90bwds20b; <= 60 s on the H200): the
# probe `pipe2` (FB_SM90_BWD128=pipe2, host only: a d = 128 backward without a head split and with batch >= 2 runs as
# two half-batch passes on three streams of descending priority: hi = half 0's pre-pass and main kernel; mid = half 1's
# pre-pass (after half 0's), main kernel and dQ convert; lo = half 0's dQ convert (after half 0's main kernel); the
# caller's stream waits for mid and lo. run_pipelined(), kernels/flash_sm90/flash_sm90_bwd.cu; the kernels and each
# half's block order are the default's, the default's PTX is BASE2 740af98's).
# Why (docs/perf-notes.md, flash-sm90 backward, "Session 20, prepared for session 21: pipe2"): F20's rows behind
# torch-cudnn are all d = 128 backward rows, most at N <= 2k, where the pre-pass (~72 us at 16k tokens x 16 heads) and
# the dQ convert (~55 us) are 10-25% of the backward on an otherwise idle GPU, and the main kernel's last partial wave
# leaves 32-64 SMs idle for a block's time. A pending block of a higher-priority stream is dispatched first, so half 1's
# pre-pass can only take SMs half 0's main kernel leaves idle in its last wave, and half 0's convert only those half
# 1's main kernel leaves idle in its last: half of each fixed kernel off the critical path.
# Steps:
#   1. The GPU tests '[bwd128]' and the GQA/MQA backward verification under pipe2 (one process; limit 14 s): batch 2, 3
#      and 5 cases run the pipeline, odd halves and causal key-tail halves included. A failure is reported in the
#      table (FAILED); the timing still runs.
#   2. flashbench, 9 rows, every row verified, each run beside the in-binary cudnn: the six F20 rows behind torch-cudnn
#      (targets: bf16 non-causal N = 1k / 4k, bf16 causal N = 1k, fp16 non-causal N = 512 / 2k, 8 / 8 heads bf16
#      N = 4k), b5 x 20 heads N = 1300 (no config names it: halves of 2 and 3 sequences), and two controls the word
#      leaves alone (d = 64 N = 1k; d = 128 batch 1 N = 4k). Runs default, pipe2, default, pipe2 (limit 11 s each), a
#      third pair if >= 24 s are left.
# Table last: OUTDIR/table.txt (runs' JSON in OUTDIR).
#   BUILD=<build dir with flashbench and tests/flashbench_gpu_tests> OUTDIR=<dir> bash results/h200/s21/calls/job1-sm90bwd.sh
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
fb="$build/flashbench"
tests="$build/tests/flashbench_gpu_tests"
budget=60
t0=$SECONDS
summary=()
step_rc=0
step() {  # name, limit (s), command... (the limit cut to what is left of the budget; skipped under 4 s)
  local name=$1 max=$2 s=$SECONDS left=$((budget - (SECONDS - t0)))
  shift 2
  if [ "$left" -lt 4 ]; then
    summary+=("$(printf '%-16s skipped (t=%ss)' "$name" "$((SECONDS - t0))")")
    step_rc=-1
    return
  fi
  [ "$max" -gt "$left" ] && max=$left
  timeout -k 2 "$max" "$@" >"$out/$name.log" 2>&1
  step_rc=$?
  summary+=("$(printf '%-16s rc=%-3s %3ss  %s' "$name" "$step_rc" "$((SECONDS - s))" \
    "$(tail -n 1 "$out/$name.log" | cut -c1-70)")")
  echo "$name rc=$step_rc $((SECONDS - s))s (t=$((SECONDS - t0))s)" >&2
}
python3 - "$out" <<'PY'
import json, sys
common = {"dtype": ["bf16", "fp16"], "pass": ["bwd"], "kernels": ["flash-sm90", "cudnn"], "warmup": 3, "reps": 10,
          "seed": 42, "batch": [1, 4, 5, 8, 16, 32], "seq": [512, 1024, 1300, 2048, 4096], "heads": [8, 16, 20, 32],
          "head_dim": [64, 128], "causal": [False, True]}
json.dump(dict(common, name="sm90bwd-pipe2-s21", verify=True,
               description="the d = 128 backward in two half-batch passes on three streams (job1-sm90bwd.sh, "
                           "prepared in session 20): pipe2 vs the default"),
          open(sys.argv[1] + "/spec.json", "w"), indent=1)
PY
rows='b16-h16-kv16-n1024-d128-bf16-full|b4-h16-kv16-n4096-d128-bf16-full|b16-h16-kv16-n1024-d128-bf16-causal'
rows+='|b32-h16-kv16-n512-d128-fp16-full|b8-h16-kv16-n2048-d128-fp16-full|b4-h8-kv8-n4096-d128-bf16-full'
rows+='|b5-h20-kv20-n1300-d128-bf16-full|b16-h32-kv32-n1024-d64-bf16-full|b1-h16-kv16-n4096-d128-bf16-full'
filter="^($rows)-bwd\$"

# 1. Tests under the probe.
step tests-pipe2 14 env FB_SM90_BWD128=pipe2 "$tests" '[bwd128],GQA/MQA: the flash-sm90 backward verifies*'
echo "tests-pipe2 rc=$step_rc" >"$out/tests-rc.txt"

# 2. Interleaved runs, each beside cudnn.
runs=()
run() {  # name, word ("" = the default)
  step "$1" 11 env ${2:+FB_SM90_BWD128=$2} "$fb" run "$out/spec.json" --filter "$filter" --no-ceilings -q \
    -o "$out/$1.json"
  [ -f "$out/$1.json" ] && runs+=("$1")
}
run default-1 ""
run pipe2-1 pipe2
run default-2 ""
run pipe2-2 pipe2
if [ $((budget - (SECONDS - t0))) -ge 24 ]; then
  run default-3 ""
  run pipe2-3 pipe2
fi

printf '%s\n' "${summary[@]}" >"$out/steps.txt"

python3 - "$out" "${runs[@]}" <<'PY' | tee "$out/table.txt"
import json, math, os, sys
out, names = sys.argv[1], sys.argv[2:]
nan = float("nan")
# (run, key) -> flash-sm90 / cudnn TFLOP/s (nan unless both ok and verified); a row where cudnn has no reading in some
# run compares flash-sm90's own TFLOP/s instead (marked * in the table)
ratio, tf, bad, peer_bad, keys = {}, {}, [], [], []
for n in names:
    try:
        results = json.load(open(os.path.join(out, n + ".json")))["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"({n}.json: {e})")
        continue
    v = {}
    for r in results:
        ok = r.get("status") == "ok" and r.get("verified") is True
        v.setdefault(r["key"], {})[r["kernel"]] = (r.get("tflops") or nan) if ok else nan
        if not ok:
            (bad if r["kernel"] == "flash-sm90" else peer_bad).append(
                f"{n}: {r['kernel']} {r['key']} {r.get('status')} verified={r.get('verified')}")
    for k, x in v.items():
        if k not in keys:
            keys.append(k)
        a, b = x.get("flash-sm90", nan), x.get("cudnn", nan)
        ratio[(n, k)] = a / b if a == a and b == b and b else nan
        tf[(n, k)] = x
def gmean(xs):
    xs = [x for x in xs if x == x]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else nan
tag = lambda n: n.split("-")[0]
defaults = [n for n in names if tag(n) == "default"]
probes = [n for n in names if tag(n) == "pipe2"]
NEW = "b5-h20-kv20-n1300-d128-bf16-full-bwd"
def cls(k):
    if "-d64-" in k or k.startswith("b1-"):
        return "control"
    return "new" if k == NEW else "target"
# Predicted pipe2 / default (docs/perf-notes.md, "Session 20, prepared for session 21: pipe2").
PRED = {"b16-h16-kv16-n1024-d128-bf16-full-bwd": "1.013-1.063", "b4-h16-kv16-n4096-d128-bf16-full-bwd": "1.008-1.021",
        "b16-h16-kv16-n1024-d128-bf16-causal-bwd": "1.008-1.028", "b32-h16-kv16-n512-d128-fp16-full-bwd": "1.010-1.060",
        "b8-h16-kv16-n2048-d128-fp16-full-bwd": "1.013-1.040", "b4-h8-kv8-n4096-d128-bf16-full-bwd": "1.008-1.019",
        NEW: "1.024-1.060", "b16-h32-kv32-n1024-d64-bf16-full-bwd": "0.98-1.02",
        "b1-h16-kv16-n4096-d128-bf16-full-bwd": "0.98-1.02"}
try:
    trc = open(os.path.join(out, "tests-rc.txt")).read().split()[-1]
    tail = open(os.path.join(out, "tests-pipe2.log")).read().strip().splitlines()[-1:]
except (OSError, IndexError):
    trc, tail = "rc=none", ["no log"]
tests_ok = trc == "rc=0"
print(f"GPU tests '[bwd128]' + GQA/MQA backward verification under pipe2: {'PASSED' if tests_ok else 'FAILED'} "
      f"({trc}); {' '.join(tail)}")
print("flash-sm90 backward, default vs pipe2 (two half-batch passes on three streams, d = 128 without a head split,")
print("batch >= 2), each run beside the in-binary cudnn, every row verified. ours/cudnn per run (TFLOP/s ratio, same")
print("process); p/def = the mean of pipe2's ratios over the mean of the default's (geometric); each = every pipe2")
print("reading over the default mean; pred = the pre-registered prediction of p/def")
hdr = [f"d{n.split('-')[1]}" for n in defaults] + [f"p{n.split('-')[1]}" for n in probes]
print(f"{'row':38} {'class':7} {'dflt':>5} {'cudnn':>5} " + " ".join(f"{h:>6}" for h in hdr)
      + f" {'p/def':>6} {'pred':>11}  each")
means, each_of = {}, {}
own = set()
for k in keys:
    if any(ratio.get((n, k), nan) != ratio.get((n, k), nan) for n in defaults + probes):
        own.add(k)
        for n in defaults + probes:
            ratio[(n, k)] = tf.get((n, k), {}).get("flash-sm90", nan)
    d = gmean([ratio.get((n, k), nan) for n in defaults])
    p = gmean([ratio.get((n, k), nan) for n in probes])
    means[k] = p / d if d == d and p == p else nan
    each_of[k] = [ratio.get((n, k), nan) / d for n in probes] if d == d else []
    first = tf.get((defaults[0], k), {}) if defaults else {}
    each = " ".join(f"{x:.3f}" for x in each_of[k]) if each_of[k] else "-"
    cells = " ".join((f"{ratio.get((n, k), nan):6.0f}" if k in own else f"{ratio.get((n, k), nan):6.3f}")
                     for n in defaults + probes)
    print(f"{k.removesuffix('-bwd') + ('*' if k in own else ''):38} {cls(k):7} {first.get('flash-sm90', nan):5.0f} "
          f"{first.get('cudnn', nan):5.0f} {cells} {means[k]:6.3f} {PRED.get(k, '-'):>11}  {each}")
tg = [k for k in keys if cls(k) == "target"]
short = [k for k in tg if "-n4096-" not in k]
g, gs = gmean([means[k] for k in tg]), gmean([means[k] for k in short])
print(f"geomean p/def: targets {g:.3f} (N <= 2k {gs:.3f}, N = 4k {gmean([means[k] for k in tg if k not in short]):.3f});"
      f" new shape {gmean([means[k] for k in keys if cls(k) == 'new']):.3f}; controls "
      f"{gmean([means[k] for k in keys if cls(k) == 'control']):.3f}")
print("flash-sm90 rows not ok or not verified: " + ("; ".join(bad) if bad else "none"))
print("cudnn rows not ok or not verified: " + ("; ".join(peer_bad) if peer_bad else "none")
      + ("; * = compared by flash-sm90's own TFLOP/s (no cudnn reading in some run)" if own else ""))

print("\nrule (pre-registered, docs/perf-notes.md, flash-sm90 backward, \"Session 20, prepared for session 21\"): pipe2")
print("becomes the d = 128 default (passes without a head split, batch >= 2) if the GPU tests pass under it, every row")
print("verifies, the geomean of p/def over the six target rows is >= 1.015, every target row's p/def is >= 1.000 with")
print("no single pipe2 reading below 0.980 of the default mean, and the new shape's p/def is >= 1.000. If only the N = 4k")
print("rows miss (the four N <= 2k target rows meet the same bounds, geomean >= 1.015 over them, N = 4k rows >= 0.990),")
print("it ships for seq_q <= 2048. Controls outside 0.98-1.02: too noisy to decide (re-measure). Else it is removed.")
def meets(rows, gm):
    low = [k.removesuffix("-bwd") for k in rows if not means[k] >= 1.0]
    dip = [k.removesuffix("-bwd") for k in rows if any(not x >= 0.98 for x in each_of[k]) or not each_of[k]]
    why = []
    if not gm >= 1.015: why.append(f"geomean {gm:.3f} < 1.015")
    if low: why.append("rows < 1.000: " + ", ".join(low))
    if dip: why.append("readings < 0.980 (or none): " + ", ".join(dip))
    return why
base_why = []
if not tests_ok: base_why.append("tests failed")
if bad: base_why.append("rows not ok / not verified")
nw = [k for k in keys if cls(k) == "new"]
if not nw or not all(means[k] >= 1.0 for k in nw): base_why.append("new shape < 1.000 (or missing)")
why_all = meets(tg, g)
why_short = meets(short, gs)
long_ok = all(means[k] >= 0.99 for k in tg if k not in short)
ctl = [k.removesuffix("-bwd") for k in keys if cls(k) == "control" and not 0.98 <= means[k] <= 1.02]
if len(tg) < 6: base_why.append(f"only {len(tg)} of 6 target rows measured")
if not base_why and not why_all:
    verdict = "SHIPS (every d = 128 pass without a head split, batch >= 2)"
elif not base_why and not why_short and long_ok:
    verdict = "SHIPS for seq_q <= 2048 (" + "; ".join(why_all) + " at N = 4k)"
else:
    verdict = "does not ship (" + "; ".join(base_why + why_all) + ")"
print("verdict: " + verdict + ("" if not ctl else f"; controls outside 0.98-1.02 ({', '.join(ctl)}): too noisy to decide"))
print("\nsteps:")
print(open(os.path.join(out, "steps.txt")).read().rstrip())
PY
