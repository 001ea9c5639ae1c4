#!/usr/bin/env bash
# Session 21, prepared for session 21's next call, sm90bwd (issue 13; branch sm90bwds21; <= 60 s on the H200): the probe
# `edges` (FB_SM90_BWD128=edges: the default's d = 128 kernel for every pass without a head split, with two traits bits
# at the edges of a block: kBwd128Tail, the dK/dV epilogue without the wait for the last dQ reduction's completion (dV
# staged in the last step's ring stage, only the reduction's read of the dQ buffer waited for before exit), and
# kBwd128KvPrefetch, the producer half way through its steps prefetching into L2 the K and V of block blockIdx.x + SMs,
# the block that starts about when this one ends. kernels/flash_sm90/flash_sm90_bwd*.{h,cuh,cu}; the default's PTX is
# BASE 0072b72's, 78 / 78 entries).
# Why (docs/perf-notes.md, flash-sm90 backward, "Session 21: the block's edges"): the rows behind torch-cudnn are d = 128
# rows of short blocks (13 steps at N = 1k, 8-16 causal) or of few blocks an SM (8 / 8 heads N = 4k: 1024 blocks), where
# the per-block fixed cost (~2-2.5 steps a block, from the GQA rows' FLOP-equal comparison) is 4-16% of a block. Two
# parts of it are waits this probe removes: the last dQ reduction's round trip before the epilogue, and the DRAM
# latency of the K / V load before a block's first S^T.
# Steps:
#   0. A warm-up flashbench run of the same rows, one rep each, not verified, not in the table (limit 10 s): in call A of
#      session 21 job1's first timed run took over its 11 s limit where the later ones took 6-7 s, so that run is lost
#      (whatever the first process pays: libraries from disk, cuDNN's plans or JIT cache).
#   1. The GPU tests '[bwd128]' (a new case: many short blocks, more than the SMs) and the GQA/MQA backward verification
#      under edges (one process; limit 12 s; call A: 7 s under pipe2). A failure is reported in the table (FAILED); the
#      timing still runs.
#   2. flashbench, 11 rows, every row verified, each run beside the in-binary cudnn: the eight F20 rows behind
#      torch-cudnn (targets: bf16 non-causal N = 1k / 4k, bf16 causal N = 1k / 2k, fp16 non-causal N = 512 / 1k / 2k,
#      8 / 8 heads bf16 N = 4k), b7 x 24 heads causal N = 1200 (no config names it), and two controls the word leaves alone
#      (d = 64 N = 1k backward; the d = 128 N = 1k forward). Runs default, edges, default, edges (limit 11 s each; call
#      A's runs of 9 rows took 6-7 s), a third pair if >= 20 s are left.
# Table last: OUTDIR/table.txt (runs' JSON in OUTDIR).
#   BUILD=<build dir with flashbench and tests/flashbench_gpu_tests> OUTDIR=<dir> bash results/h200/s21/calls/job2-sm90bwd.sh
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
fb="$build/flashbench"
tests="$build/tests/flashbench_gpu_tests"
budget=${BUDGET:-60}
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
common = {"dtype": ["bf16", "fp16"], "pass": ["fwd", "bwd"], "kernels": ["flash-sm90", "cudnn"], "warmup": 3,
          "reps": 10, "seed": 42, "batch": [4, 7, 8, 16, 32], "seq": [512, 1024, 1200, 2048, 4096],
          "heads": [8, 16, 24, 32], "head_dim": [64, 128], "causal": [False, True]}
json.dump(dict(common, name="sm90bwd-edges-s21", verify=True,
               description="the d = 128 backward with the block's edges shortened (job2-sm90bwd.sh, session 21): "
                           "edges vs the default"),
          open(sys.argv[1] + "/spec.json", "w"), indent=1)
json.dump(dict(common, name="sm90bwd-edges-s21-warm", verify=False, warmup=1, reps=1,
               description="job2-sm90bwd.sh's warm-up run (not in the table)"),
          open(sys.argv[1] + "/spec-warm.json", "w"), indent=1)
PY
rows='b16-h16-kv16-n1024-d128-bf16-full-bwd|b4-h16-kv16-n4096-d128-bf16-full-bwd|b16-h16-kv16-n1024-d128-bf16-causal-bwd'
rows+='|b8-h16-kv16-n2048-d128-bf16-causal-bwd|b32-h16-kv16-n512-d128-fp16-full-bwd|b16-h16-kv16-n1024-d128-fp16-full-bwd'
rows+='|b8-h16-kv16-n2048-d128-fp16-full-bwd'
rows+='|b4-h8-kv8-n4096-d128-bf16-full-bwd|b7-h24-kv24-n1200-d128-bf16-causal-bwd|b16-h32-kv32-n1024-d64-bf16-full-bwd'
rows+='|b16-h16-kv16-n1024-d128-bf16-full-fwd'
filter="^($rows)\$"

# 0. Warm-up (both words' processes load the same libraries; the default's kernels).
step warm 10 "$fb" run "$out/spec-warm.json" --filter "$filter" --no-ceilings -q -o "$out/warm.json"

# 1. Tests under the probe.
step tests-edges 12 env FB_SM90_BWD128=edges "$tests" '[bwd128],GQA/MQA: the flash-sm90 backward verifies*'
echo "tests-edges rc=$step_rc" >"$out/tests-rc.txt"

# 2. Interleaved runs, each beside cudnn.
runs=()
run() {  # name, word ("" = the default)
  step "$1" 11 env ${2:+FB_SM90_BWD128=$2} "$fb" run "$out/spec.json" --filter "$filter" --no-ceilings -q \
    -o "$out/$1.json"
  [ -f "$out/$1.json" ] && runs+=("$1")
}
run default-1 ""
run edges-1 edges
run default-2 ""
run edges-2 edges
if [ $((budget - (SECONDS - t0))) -ge 20 ]; then
  run default-3 ""
  run edges-3 edges
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
probes = [n for n in names if tag(n) == "edges"]
NEW = "b7-h24-kv24-n1200-d128-bf16-causal-bwd"
TARGETS = 8
def cls(k):
    if "-d64-" in k or k.endswith("-fwd"):
        return "control"
    return "new" if k == NEW else "target"
# Predicted edges / default (docs/perf-notes.md, "Session 21: the block's edges"; scripts/sm90bwd_edges_model.py).
PRED = {"b16-h16-kv16-n1024-d128-bf16-full-bwd": "1.004-1.034",
        "b4-h16-kv16-n4096-d128-bf16-full-bwd": "1.001-1.010",
        "b16-h16-kv16-n1024-d128-bf16-causal-bwd": "1.007-1.051",
        "b8-h16-kv16-n2048-d128-bf16-causal-bwd": "1.004-1.032",
        "b32-h16-kv16-n512-d128-fp16-full-bwd": "1.007-1.053",
        "b16-h16-kv16-n1024-d128-fp16-full-bwd": "1.004-1.033",
        "b8-h16-kv16-n2048-d128-fp16-full-bwd": "1.002-1.019",
        "b4-h8-kv8-n4096-d128-bf16-full-bwd": "1.001-1.010",
        NEW: "1.006-1.048",
        "b16-h32-kv32-n1024-d64-bf16-full-bwd": "0.98-1.02", "b16-h16-kv16-n1024-d128-bf16-full-fwd": "0.98-1.02"}
try:
    trc = open(os.path.join(out, "tests-rc.txt")).read().split()[-1]
    tail = open(os.path.join(out, "tests-edges.log")).read().strip().splitlines()[-1:]
except (OSError, IndexError):
    trc, tail = "rc=none", ["no log"]
tests_ok = trc == "rc=0"
print(f"GPU tests '[bwd128]' + GQA/MQA backward verification under edges: {'PASSED' if tests_ok else 'FAILED'} "
      f"({trc}); {' '.join(tail)}")
print("flash-sm90 backward, default vs edges (the dK/dV epilogue without the last dQ reduction's wait, and the next")
print("block's K/V prefetched into L2; d = 128 without a head split), each run beside the in-binary cudnn, every row")
print("verified. ours/cudnn per run (TFLOP/s ratio, same process); e/def = the mean of edges' ratios over the mean of")
print("the default's (geometric); each = every edges reading over the default mean; pred = the pre-registered e/def")
hdr = [f"d{n.split('-')[1]}" for n in defaults] + [f"e{n.split('-')[1]}" for n in probes]
print(f"{'row':40} {'class':7} {'dflt':>5} {'cudnn':>5} " + " ".join(f"{h:>6}" for h in hdr)
      + f" {'e/def':>6} {'pred':>11}  each")
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
    print(f"{k + ('*' if k in own else ''):40} {cls(k):7} {first.get('flash-sm90', nan):5.0f} "
          f"{first.get('cudnn', nan):5.0f} {cells} {means[k]:6.3f} {PRED.get(k, '-'):>11}  {each}")
tg = [k for k in keys if cls(k) == "target"]
g = gmean([means[k] for k in tg])
print(f"geomean e/def: targets {g:.3f}; new shape {gmean([means[k] for k in keys if cls(k) == 'new']):.3f}; controls "
      f"{gmean([means[k] for k in keys if cls(k) == 'control']):.3f}")
print("flash-sm90 rows not ok or not verified: " + ("; ".join(bad) if bad else "none"))
print("cudnn rows not ok or not verified: " + ("; ".join(peer_bad) if peer_bad else "none")
      + ("; * = compared by flash-sm90's own TFLOP/s (no cudnn reading in some run)" if own else ""))

print("\nrule (pre-registered, docs/perf-notes.md, flash-sm90 backward, \"Session 21: the block's edges\"): edges becomes")
print("the d = 128 default (every pass without a head split) if the GPU tests pass under it, every row verifies, the")
print("geomean of e/def over the eight target rows is >= 1.008, every target row's e/def is >= 0.995 with no single edges")
print("reading below 0.980 of the default mean, and the new shape's e/def is >= 1.000. Controls outside 0.98-1.02: too")
print("noisy to decide (re-measure). Else it is removed.")
why = []
if not tests_ok: why.append("tests failed")
if bad: why.append("rows not ok / not verified")
if len(tg) < TARGETS: why.append(f"only {len(tg)} of {TARGETS} target rows measured")
if not g >= 1.008: why.append(f"geomean {g:.3f} < 1.008")
low = [k.removesuffix("-bwd") for k in tg if not means[k] >= 0.995]
if low: why.append("rows < 0.995: " + ", ".join(low))
dip = [k.removesuffix("-bwd") for k in tg if any(not x >= 0.98 for x in each_of[k]) or not each_of[k]]
if dip: why.append("readings < 0.980 (or none): " + ", ".join(dip))
nw = [k for k in keys if cls(k) == "new"]
if not nw or not all(means[k] >= 1.0 for k in nw): why.append("new shape < 1.000 (or missing)")
ctl = [k for k in keys if cls(k) == "control" and not 0.98 <= means[k] <= 1.02]
if ctl:
    verdict = f"too noisy to decide (controls outside 0.98-1.02: {', '.join(ctl)}); re-measure"
elif not why:
    verdict = "SHIPS (every d = 128 pass without a head split)"
else:
    verdict = "does not ship (" + "; ".join(why) + ")"
print("verdict: " + verdict)
print("\nsteps:")
print(open(os.path.join(out, "steps.txt")).read().rstrip())
PY
