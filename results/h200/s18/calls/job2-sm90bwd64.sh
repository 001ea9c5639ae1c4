#!/usr/bin/env bash
# Session 18, prepared for session 19's first call, sm90bwd (issue 13; branch sm90bwd64s18; <= 60 s on the H200): the
# probe `pmajor64` (FB_SM90_BWD64=pmajor64, host only: non-causal d = 64 passes without a head split launch the unchanged
# persistent kernel with plane_group = 1, so a K/V plane's key tiles are consecutive work tiles of the round-robin;
# plane_major(), kernels/flash_sm90/flash_sm90_bwd.cu).
# Why (docs/perf-notes.md, flash-sm90 backward, "Session 18, prepared for session 19"): session 17's call C measured
# the d = 64 N = 1k main kernel under ncu at 494 MB DRAM read / 303 MB written against cudnn's bprop 407 / 248; the
# d = 128 kernel had the same excess in plane groups and lost it plane-major (session 18's call B: 575 -> 407 MB).
# scripts/sm90bwd_l2_model.py --d64 puts the d = 64 default at 471-517 / 285-308 MB at N = 1k (C = 25 MB, the capacity
# that fits the measured 494 / 303) and pmajor64 at 407 / 254.
# Steps:
#   1. The GPU tests '[bwd64]' and the GQA/MQA backward verification under pmajor64 (one process; limit 14 s); ncu's
#      metric list beside them. A failure is reported in the table (FAILED); the timing still runs.
#   2. flashbench, 6 rows (bf16, every row verified, each run beside the in-binary cudnn): d = 64 non-causal 16k tokens
#      x 32 heads N = 512 / 1k / 2k (targets), b5 x 40 heads N = 1300 non-causal (no config names it: 200 planes,
#      11 key tiles, plane groups of 26; a target), d = 64 causal N = 2k and d = 128 non-causal N = 1k (16 heads)
#      (controls: the word leaves them as they are). Runs default, pmajor64 interleaved, three each (limit 12 s each).
#   3. ncu, one launch each of the main kernel at d = 64 N = 1k (b16-h32), default then pmajor64 (ncu's default clock
#      and cache control, as job1-sm90bwd.sh): DRAM bytes read / written, L2 sectors and misses, time, and the L2
#      request coalescer's counters.
#   4. SM clock and board power, each alone ~1.5 s at d = 64 N = 1k (nvidia-smi every 50 ms): default, pmajor64.
# Table last: OUTDIR/table.txt (runs' JSON in OUTDIR).
#   BUILD=<build dir with flashbench and tests/flashbench_gpu_tests> OUTDIR=<dir> bash results/h200/s18/calls/job2-sm90bwd64.sh
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
common = {"dtype": ["bf16"], "pass": ["bwd"], "kernels": ["flash-sm90", "cudnn"], "warmup": 3, "reps": 10, "seed": 42,
          "batch": [5, 8, 16, 32], "seq": [512, 1024, 1300, 2048], "heads": [16, 32, 40], "head_dim": [64, 128],
          "causal": [False, True]}
json.dump(dict(common, name="sm90bwd64-s18", verify=True,
               description="the d = 64 backward's plane-major order (job2-sm90bwd64.sh, session 18): pmajor64 vs the default"),
          open(sys.argv[1] + "/spec.json", "w"), indent=1)
json.dump(dict(common, name="sm90bwd64-s18-ncu", verify=False, description="one ncu launch (job2-sm90bwd64.sh)"),
          open(sys.argv[1] + "/spec-ncu.json", "w"), indent=1)
PY
rows='b32-h32-kv32-n512-d64-bf16-full|b16-h32-kv32-n1024-d64-bf16-full|b8-h32-kv32-n2048-d64-bf16-full'
rows+='|b5-h40-kv40-n1300-d64-bf16-full|b8-h32-kv32-n2048-d64-bf16-causal|b16-h16-kv16-n1024-d128-bf16-full'
filter="^($rows)-bwd\$"
one='^b16-h32-kv32-n1024-d64-bf16-full-bwd$'

# 1. Tests under the probe, ncu's metric list beside them (no GPU).
(timeout 6 ncu --query-metrics --chip gh100 >"$out/ncu-query.txt" 2>&1) &
qpid=$!
step tests-pmajor64 14 env FB_SM90_BWD64=pmajor64 "$tests" '[bwd64],GQA/MQA: the flash-sm90 backward verifies*'
echo "tests-pmajor64 rc=$step_rc" >"$out/tests-rc.txt"
wait "$qpid" 2>/dev/null

# 2. Interleaved runs, each beside cudnn.
runs=()
run() {  # name, word ("" = the default)
  step "$1" 12 env ${2:+FB_SM90_BWD64=$2} "$fb" run "$out/spec.json" --filter "$filter" --no-ceilings -q \
    -o "$out/$1.json"
  [ -f "$out/$1.json" ] && runs+=("$1")
}
run default-1 ""
run pmajor64-1 pmajor64
run default-2 ""
run pmajor64-2 pmajor64
run default-3 ""
run pmajor64-3 pmajor64

# 3. ncu at d = 64 N = 1k, default then pmajor64 (only the metric names this ncu knows).
metrics=""
for m in dram__bytes_read.sum dram__bytes_write.sum lts__t_sectors.sum lts__t_sectors_lookup_miss.sum \
  gpu__time_duration.sum lts__t_sectors_srcunit_tex_op_read.sum l1tex__m_xbar2l1tex_read_sectors.sum \
  lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum lrc__lts2lrc_sectors_op_read.sum; do
  grep -q "^${m%.sum} " "$out/ncu-query.txt" 2>/dev/null && metrics="$metrics${metrics:+,}$m"
done
[ -n "$metrics" ] || metrics=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors.sum,gpu__time_duration.sum
echo "metrics: $metrics" >"$out/ncu-metrics.txt"
for v in default pmajor64; do
  word=""
  [ "$v" = pmajor64 ] && word=FB_SM90_BWD64=pmajor64
  step "ncu-$v" 8 env $word ncu --csv \
    --metrics "$metrics" -k 'regex:flash_sm90_bwd_kernel' -c 1 "$fb" run "$out/spec-ncu.json" --filter "$one" \
    --kernels flash-sm90 --no-ceilings -q --warmup 1 --reps 1 --warmup-time 0
  [ "$step_rc" = 124 ] || [ "$step_rc" = 137 ] && break
done

# 4. The SM clock and board power with each alone ~1.5 s at d = 64 N = 1k (nvidia-smi every 50 ms, as job1): the
#    default, then pmajor64.
: >"$out/windows.txt"
if [ $((budget - (SECONDS - t0))) -ge 8 ]; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv,nounits -lms 50 >"$out/smi.csv" 2>&1 &
  smi=$!
  for v in default pmajor64; do
    word=""
    [ "$v" = pmajor64 ] && word=FB_SM90_BWD64=pmajor64
    echo "clock-$v start $(date +%s.%N)" >>"$out/windows.txt"
    step "clock-$v" 5 env $word "$fb" run "$out/spec-ncu.json" --filter "$one" --kernels flash-sm90 --no-ceilings -q \
      --min-time 1.5 --max-time 1.8 -o "$out/clock-$v.json"
    echo "clock-$v end $(date +%s.%N)" >>"$out/windows.txt"
  done
  kill "$smi" 2>/dev/null
  wait "$smi" 2>/dev/null
fi

printf '%s\n' "${summary[@]}" >"$out/steps.txt"

python3 - "$out" "${runs[@]}" <<'PY' | tee "$out/table.txt"
import csv, json, math, os, sys
out, names = sys.argv[1], sys.argv[2:]
nan = float("nan")
# (run, key) -> flash-sm90 / cudnn TFLOP/s (nan unless both ok and verified); a row where cudnn has no reading in some
# run (a length it does not take, say) compares flash-sm90's own TFLOP/s instead (marked * in the table)
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
probes = [n for n in names if tag(n) == "pmajor64"]
def cls(k):
    if "-causal" in k or "-d128-" in k:
        return "control"
    return "target"
try:
    trc = open(os.path.join(out, "tests-rc.txt")).read().split()[-1]
    tail = open(os.path.join(out, "tests-pmajor64.log")).read().strip().splitlines()[-1:]
except (OSError, IndexError):
    trc, tail = "rc=none", ["no log"]
tests_ok = trc == "rc=0"
print(f"GPU tests '[bwd64]' + GQA/MQA backward verification under pmajor64: {'PASSED' if tests_ok else 'FAILED'} "
      f"({trc}); {' '.join(tail)}")
print("flash-sm90 backward, default vs pmajor64 (plane-major work order, non-causal d = 64), each run beside the")
print("in-binary cudnn, bf16, every row verified. ours/cudnn per run (TFLOP/s ratio, same process); pm/def = the mean of")
print("pmajor64's ratios over the mean of the default's (geometric); each = every pmajor64 reading over the default mean")
hdr = [f"d{n.split('-')[1]}" for n in defaults] + [f"p{n.split('-')[1]}" for n in probes]
print(f"{'row':38} {'class':7} {'dflt':>5} {'cudnn':>5} " + " ".join(f"{h:>6}" for h in hdr) + f" {'pm/def':>7}  each")
means = {}
own = set()  # rows compared by flash-sm90's own TFLOP/s (cudnn missing in some run)
for k in keys:
    if any(ratio.get((n, k), nan) != ratio.get((n, k), nan) for n in defaults + probes):
        own.add(k)
        for n in defaults + probes:
            ratio[(n, k)] = tf.get((n, k), {}).get("flash-sm90", nan)
    d = gmean([ratio.get((n, k), nan) for n in defaults])
    p = gmean([ratio.get((n, k), nan) for n in probes])
    means[k] = p / d if d == d and p == p else nan
    first = tf.get((defaults[0], k), {}) if defaults else {}
    each = " ".join(f"{ratio.get((n, k), nan) / d:.3f}" for n in probes) if d == d else "-"
    cells = " ".join((f"{ratio.get((n, k), nan):6.0f}" if k in own else f"{ratio.get((n, k), nan):6.3f}")
                     for n in defaults + probes)
    print(f"{k.removesuffix('-bwd') + ('*' if k in own else ''):38} {cls(k):7} {first.get('flash-sm90', nan):5.0f} {first.get('cudnn', nan):5.0f} "
          f"{cells} {means[k]:7.3f}  {each}")
tg = [k for k in keys if cls(k) == "target"]
moved = [k for k in tg if "-n512-" not in k]  # the rule's rows (N = 512: a re-fetch only at the model's smallest C)
g = gmean([means[k] for k in moved])
print(f"geomean pm/def: N = 1k, 2k, 1300 (the rule's rows) {g:.3f}; N = 512 "
      f"{gmean([means[k] for k in tg if '-n512-' in k]):.3f}; controls "
      f"{gmean([means[k] for k in keys if cls(k) == 'control']):.3f}")
print("flash-sm90 rows not ok or not verified: " + ("; ".join(bad) if bad else "none"))
print("cudnn rows not ok or not verified: " + ("; ".join(peer_bad) if peer_bad else "none")
      + ("; * = compared by flash-sm90's own TFLOP/s (no cudnn reading in some run)" if own else ""))

vals = {}
for t in ("default", "pmajor64"):
    p = os.path.join(out, f"ncu-{t}.log")
    if not os.path.exists(p):
        continue
    for r in csv.reader(open(p, errors="replace")):
        if len(r) > 14 and r[0].strip('"').isdigit():
            vals.setdefault(r[12], {})[t] = r[14]
def num(m, t):
    try:
        return float(vals[m][t].replace(",", ""))
    except (KeyError, ValueError, AttributeError):
        return nan
print("\nncu, one launch of the main kernel each, d = 64 bf16 non-causal N = 1k (b16-h32; caches flushed, base clock).")
print("Session 17 call C: default 494 MB read / 303 MB written; cudnn's bprop 407 / 248 MB. Predicted (pmajor64, the")
print("trace model at C = 25 MB): read 400-430 MB, written 240-275 MB, hw-coalesced >= 5M sectors, L2 sectors 0.85-1.00x,")
print("time under ncu's fixed clock 0.97-1.00x")
print(f"{'metric':68} {'default':>16} {'pmajor64':>16} {'pm/def':>7}")
for m in sorted(vals):
    a, b = num(m, "default"), num(m, "pmajor64")
    print(f"{m:68} {vals[m].get('default', '-'):>16} {vals[m].get('pmajor64', '-'):>16} "
          f"{(b / a if a == a and a else nan):7.3f}")
if not vals:
    print("(no ncu output)")
print("\nclocks: each alone ~1.5 s at d = 64 N = 1k; medians of the nvidia-smi samples inside the run (first 0.7 s")
print("dropped)")
from datetime import datetime
import statistics
smi = []
try:
    for r in csv.reader(open(os.path.join(out, "smi.csv"))):
        try:
            smi.append((datetime.strptime(r[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp(), float(r[1]),
                        float(r[2]), float(r[3]), r[4].strip()))
        except (ValueError, IndexError):
            pass
except OSError:
    pass
win = {}
try:
    for line in open(os.path.join(out, "windows.txt")):
        p = line.split()
        if len(p) >= 3:
            win.setdefault(p[0], {})[p[1]] = float(p[2])
except OSError:
    pass
for name, w in win.items():
    us = nan
    try:
        us = 1000 * json.load(open(os.path.join(out, name + ".json")))["results"][0]["time_ms"]["median"]
    except Exception:
        pass
    x = [y for y in smi if w.get("start", 0) + 0.7 <= y[0] <= w.get("end", 0) - 0.2]
    if not x:
        print(f"{name:14s} {us:8.1f} us, no samples")
        continue
    print(f"{name:14s} {us:8.1f} us {len(x):4d} samples {statistics.median(y[1] for y in x):6.0f} MHz "
          f"{statistics.median(y[2] for y in x):6.1f} W {statistics.median(y[3] for y in x):4.0f} C "
          f"{sorted(set(y[4] for y in x))}")
if not win:
    print("(not run: no time left)")
rd = num("dram__bytes_read.sum", "pmajor64")
hw = num("lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum", "pmajor64")
mech = (rd == rd and rd <= 440e6) or (hw == hw and hw >= 5e6)
print("\nrule (pre-registered, docs/perf-notes.md, flash-sm90 backward, Session 18, prepared for session 19): pmajor64")
print("becomes the non-causal d = 64 order if the GPU tests pass under it, every row verifies, ncu at N = 1k shows a")
print("mechanism (DRAM read <= 440 MB or >= 5M sectors coalesced by the L2 request coalescer's hardware path), the geomean of")
print("pm/def over N = 1k, 2k and 1300 is >= 1.005 and no target row's pm/def (N = 512 included) is < 0.990; controls")
print("outside 0.98-1.02 mean the call is too noisy to decide (re-measure)")
why = []
if not tests_ok: why.append("tests failed")
if bad: why.append("rows not ok / not verified")
if not mech: why.append(f"no mechanism in ncu (DRAM read {rd / 1e6:.0f} MB > 440 MB, hw-coalesced {hw / 1e6:.1f}M < 5M)")
if not g >= 1.005: why.append(f"geomean over N = 1k, 2k, 1300 {g:.3f} < 1.005")
low = [k.removesuffix("-bwd") for k in tg if not means[k] >= 0.99]
if low: why.append("target rows < 0.990: " + ", ".join(low))
ctl = [k.removesuffix("-bwd") for k in keys if cls(k) == "control" and not 0.98 <= means[k] <= 1.02]
print("verdict: " + ("SHIPS" if not why else "does not ship (" + "; ".join(why) + ")")
      + ("" if not ctl else f"; controls outside 0.98-1.02 ({', '.join(ctl)}): too noisy to decide"))
print("\nsteps:")
print(open(os.path.join(out, "steps.txt")).read().rstrip())
PY
