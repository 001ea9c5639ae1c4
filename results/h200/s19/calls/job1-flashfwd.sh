# Session 19, call B (flashfwd; issue 13; <= 60 s on the H200): the portable flash forward's non-causal launches in
# thread-block clusters. One probe word, clusterN (FB_FLASH_FWD_PROBE, kernels/flash/flash_fwd_config.h), two settings:
# cluster2 and cluster4 = non-causal launches of the default's kernels (PTX unchanged: a host-side launch change) in one
# plane's order (d = 128's default order; at d = 64 instead of the L2-sized plane groups), launched in clusters of 2 / 4
# consecutive blocks, so that 2 / 4 neighbouring query tiles of a plane start together on one GPC and stream the same
# K/V tiles, which the L2 request coalescer can merge (fewer L2 reads: at the 692 W power cap, clock). Causal launches
# run the default under the word (the control rows).
# Why (docs/perf-notes.md, flash forward, "Session 19"): flash-sm90's plane-major order got half its K/V sectors
# coalesced and +4.4% clock at the cap (s18 call A); s17 call C: half the L2 reads, +8.8% clock at the same power. The
# portable forward has never had its coalescer counters read; its fp16 runs 2.5-5.5% slower than its bf16 with the same
# SASS (F18), the power cap's signature (s18 call A, fp16clk18).
# No FlashAttention-2 in the binary: the in-binary cudnn is the fixed control beside every run (the lead re-measures
# torch-flash beside any flip).
# Steps: the GPU tests '[flashfwd]' under cluster2 and under cluster4 (two processes side by side; a timed-out run,
# rc 124, drops that setting from every later step), ncu's metric list beside them; flashbench default, cluster2,
# cluster4, default, cluster4, cluster2, default on configs/flashfwd-s19.json's 12 rows, each beside cudnn, every row
# verified (a run other than the last starts only while it and the last fit beside the ncu step); ncu, one launch each
# of default / cluster4 / cluster2 at d = 64 and d = 128 N = 512 bf16 (L2 and coalescer sectors, DRAM, time at ncu's
# locked clock, the cluster launch's figures); the SM clock (nvidia-smi every 50 ms) ~1.5 s each of default and
# cluster4 at d = 64 N = 512 while time is left.
# The table (OUTDIR/table.txt, last): per row default/cudnn of the first default run and the drift (last default run's
# ratio / first's); each reading (setting / cudnn) / (default / cudnn), the default runs before and after averaged;
# per row the mean per setting; geomeans per class; the pre-registered rule's verdicts; ncu; clocks.
#   BUILD=<build dir with flashbench and tests/flashbench_gpu_tests> OUTDIR=<dir> bash results/h200/s19/calls/job1-flashfwd.sh
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
spec=configs/flashfwd-s19.json
rows='b32-h32-kv32-n512-d64-bf16-full|b32-h32-kv32-n512-d64-fp16-full|b16-h32-kv32-n1024-d64-bf16-full'
rows="$rows|b16-h32-kv32-n1000-d64-bf16-full|b32-h16-kv16-n512-d128-bf16-full|b16-h16-kv16-n1024-d128-bf16-full"
rows="$rows|b16-h16-kv16-n1024-d128-fp16-full|b8-h16-kv16-n2048-d128-bf16-full|b21-h16-kv16-n768-d128-bf16-full"
rows="$rows|b24-h16-kv16-n640-d128-fp16-full|b16-h16-kv16-n1024-d128-bf16-causal|b32-h32-kv32-n512-d64-bf16-causal"
filter="^($rows)-fwd\$"
r64='^b32-h32-kv32-n512-d64-bf16-full-fwd$'
r128='^b32-h16-kv16-n512-d128-bf16-full-fwd$'
budget=60
t0=$SECONDS
summary=()
step() {  # name, timeout, command... (the timeout cut to what is left of the job's budget)
  local name=$1 max=$2 s=$SECONDS left=$((budget - (SECONDS - t0)))
  shift 2
  if [ "$left" -lt 4 ]; then
    summary+=("$(printf '%-17s skipped (t=%ss)' "$name" "$((SECONDS - t0))")")
    return 1
  fi
  [ "$max" -gt "$left" ] && max=$left
  timeout "$max" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  summary+=("$(printf '%-17s rc=%-3s %3ss  %s' "$name" "$rc" "$((SECONDS - s))" \
    "$(tail -n 1 "$out/$name.log" | cut -c1-70)")")
  echo "$name rc=$rc $((SECONDS - s))s (t=$((SECONDS - t0))s)"
  return $rc
}
word_of() { case $1 in c2) echo cluster2 ;; c4) echo cluster4 ;; *) echo "" ;; esac; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
# The GPU tests under each setting first (~6-8 s each in session 15's calls; side by side here), ncu's metric list
# beside them (no GPU). A timed-out run (rc 124) drops its setting from every later step.
: >"$out/tests-rc.txt"
s=$SECONDS
for v in c2 c4; do
  (FB_FLASH_FWD_PROBE=$(word_of $v) timeout 18 "$build/tests/flashbench_gpu_tests" '[flashfwd]' \
     >"$out/tests-$v.log" 2>&1
   echo "tests-$v rc=$?" >>"$out/tests-rc.txt") &
done
(timeout 6 ncu --query-metrics --chip gh100 >"$out/ncu-query.txt" 2>&1) &
wait
declare -A dropped=([c2]=0 [c4]=0)
for v in c2 c4; do
  line=$(grep "^tests-$v " "$out/tests-rc.txt" 2>/dev/null || echo "tests-$v rc=none")
  summary+=("$(printf '%-17s %-6s %3ss  %s' "tests-$v" "${line#* }" "$((SECONDS - s))" \
    "$(tail -n 1 "$out/tests-$v.log" | cut -c1-70)")")
  [ "${line#* }" = "rc=124" ] && dropped[$v]=1 && echo "tests-$v timed out: $v is not run further" >>"$out/tests-rc.txt"
  echo "tests: $line $((SECONDS - s))s (t=$((SECONDS - t0))s)"
done
runs=()
n=0
longest=4  # the longest run so far but the first: a run other than the last starts only if it and the last fit
plan=(default c2 c4 default c4 c2 default)
reserve=10  # seconds kept for four ncu launches (~2-3 s each)
for v in "${plan[@]}"; do
  n=$((n + 1))
  name=$n-$v
  [ "$v" != default ] && [ "${dropped[$v]}" = 1 ] && { summary+=("$(printf '%-17s dropped (tests timed out)' "$name")"); continue; }
  # The last planned run (a default) always runs: it closes the readings. Before it, a setting's run starts only if
  # it and that last default fit beside the ncu step, a default run only if a setting's run and the last fit too.
  need=$((3 * longest + reserve)); [ "$v" != default ] && need=$((2 * longest + reserve))
  if [ $n -lt ${#plan[@]} ] && [ $((SECONDS - t0 + need)) -gt $budget ]; then
    summary+=("$(printf '%-17s skipped (t=%ss, runs take up to %ss)' "$name" "$((SECONDS - t0))" "$longest")")
    continue
  fi
  s=$SECONDS
  FB_FLASH_FWD_PROBE=$(word_of "$v") step "$name" 14 "$build/flashbench" run $spec \
    --filter "$filter" --kernels flash,cudnn --no-ceilings -q -o "$out/$name.json"
  [ $n -gt 1 ] && [ $((SECONDS - s)) -gt "$longest" ] && longest=$((SECONDS - s))
  [ -f "$out/$name.json" ] && runs+=("$name")
done
# ncu: one launch each at N = 512 bf16, d = 64 and d = 128: default and cluster4 first, cluster2 while time is left;
# session 18's coalescer metrics plus the cluster launch's figures, only the names this ncu knows.
want="lts__t_sectors_srcunit_tex_op_read.sum l1tex__m_xbar2l1tex_read_sectors.sum
lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum lrc__lts2lrc_sectors_op_read.sum
gpu__time_duration.sum dram__bytes_read.sum sm__cycles_elapsed.max launch__cluster_size launch__cluster_max_active"
metrics=""
for m in $want; do b=${m%.*}; grep -q "^$b " "$out/ncu-query.txt" 2>/dev/null && metrics="$metrics${metrics:+,}$m"; done
[ -n "$metrics" ] || metrics=lts__t_sectors_srcunit_tex_op_read.sum,l1tex__m_xbar2l1tex_read_sectors.sum,gpu__time_duration.sum
ncu_one() {  # name, setting, filter
  [ "$2" != default ] && [ "${dropped[$2]}" = 1 ] && return 0
  [ $((budget - (SECONDS - t0))) -lt 4 ] && { summary+=("ncu-$1 skipped (t=$((SECONDS - t0))s)"); return 0; }
  FB_FLASH_FWD_PROBE=$(word_of $2) step ncu-$1 6 ncu --csv --metrics "$metrics" -k 'regex:flash_fwd_tc_kernel' -c 1 \
    "$build/flashbench" run $spec --filter "$3" --kernels flash --no-ceilings -q --warmup 1 --reps 1 \
    --warmup-time 0
}
ncu_one d64-default default "$r64"
ncu_one d64-c4 c4 "$r64"
ncu_one d128-default default "$r128"
ncu_one d128-c4 c4 "$r128"
ncu_one d64-c2 c2 "$r64"
ncu_one d128-c2 c2 "$r128"
# Clocks: each alone ~1.5 s at d = 64 N = 512 bf16, nvidia-smi every 50 ms, while time is left.
: >"$out/windows.txt"
if [ $((budget - (SECONDS - t0))) -ge 6 ]; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv,nounits -lms 50 >"$out/smi.csv" 2>&1 &
  smi=$!
  for v in default c4; do
    [ "$v" != default ] && [ "${dropped[$v]}" = 1 ] && continue
    [ $((budget - (SECONDS - t0))) -lt 3 ] && break
    echo "clock-$v start $(date +%s.%N)" >>"$out/windows.txt"
    FB_FLASH_FWD_PROBE=$(word_of "$v") step clock-$v 5 "$build/flashbench" run $spec --filter "$r64" \
      --kernels flash --no-ceilings -q --min-time 1.5 --max-time 1.8 -o "$out/clock-$v.json"
    echo "clock-$v end $(date +%s.%N)" >>"$out/windows.txt"
  done
  kill $smi 2>/dev/null
fi
python3 - "$out" "${runs[@]}" <<'PY' | tee "$out/table.txt"
import csv, json, math, os, statistics, sys
from datetime import datetime
out, names = sys.argv[1], sys.argv[2:]
nan = float("nan")
ratio, tf, bad, keys = {}, {}, [], []  # (run, key) -> flash / cudnn (nan unless both ok and verified); TFLOP/s
for n in names:
    try:
        results = json.load(open(os.path.join(out, n + ".json")))["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"({n}.json: {e})")
        continue
    v = {}
    for r in results:
        ok = r["status"] == "ok" and r.get("verified", True) is not False
        v.setdefault(r["key"], {})[r["kernel"]] = r["tflops"] if ok else nan
        if r["kernel"] == "flash" and not ok:
            bad.append(f"{n}: {r['key']} {r['status']} verified={r.get('verified')}")
    for k, x in v.items():
        if k not in keys:
            keys.append(k)
        a, b = x.get("flash", nan), x.get("cudnn", nan)
        ratio[(n, k)] = a / b if a == a and b == b and b else nan
        tf[(n, k)] = x
def gmean(xs):
    xs = [x for x in xs if x == x]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else nan
tag = lambda n: n.split("-", 1)[1]
settings = {"c2": "cluster2", "c4": "cluster4"}
defaults = [n for n in names if tag(n) == "default"]
probes = {s: [n for n in names if tag(n) == s] for s in settings}
def around(n, k):  # default/cudnn around run n: the geometric mean of the nearest default runs before and after it
    i = names.index(n)
    before = [s for s in defaults if names.index(s) < i]
    after = [s for s in defaults if names.index(s) > i]
    return gmean([ratio.get((s, k), nan) for s in before[-1:] + after[:1]])
targets = {"b32-h32-kv32-n512-d64-bf16-full-fwd", "b32-h16-kv16-n512-d128-bf16-full-fwd",
           "b8-h16-kv16-n2048-d128-bf16-full-fwd", "b16-h16-kv16-n1024-d128-fp16-full-fwd"}
def cls(k):
    if "-causal" in k:
        return "causal control"
    return "d64 non-causal" if "-d64-" in k else "d128 non-causal"
def cell(x, w=8):
    return f"{x:>{w - 1}.3f}x" if x == x else f"{'-':>{w}}"
tests_ok = {}
rc_lines = open(os.path.join(out, "tests-rc.txt")).read().splitlines() \
    if os.path.exists(os.path.join(out, "tests-rc.txt")) else []
for s, w in settings.items():
    tests_ok[s] = f"tests-{s} rc=0" in rc_lines
    try:
        tail = open(os.path.join(out, f"tests-{s}.log")).read().strip().splitlines()[-1:]
    except OSError:
        tail = ["no log"]
    print(f"GPU tests '[flashfwd]' under {w}: {'PASSED' if tests_ok[s] else 'FAILED'}; {' '.join(tail)}")
print("flash forward: default vs clusterN (non-causal launches of the default's kernels in one plane's order, in")
print("clusters of N consecutive blocks; causal rows: the word does not apply, a control); cudnn = the in-binary cuDNN,")
print("a fixed control (no FlashAttention-2 in the binary); dflt/cudnn TFLOP/s from the first default run; drift = last")
print("default run's ratio / first's; each reading (setting / cudnn) / (default / cudnn), same-process ratios, the default")
print("runs before and after averaged; mean = geometric mean of a setting's readings; '-' = not run, failed or not verified;")
print("* = a row trailing torch-flash in F18")
heads = [f"{'c2 ' + n.split('-')[0]:>8}" for n in probes["c2"]] + [f"{'c2 mean':>8}"] + \
    [f"{'c4 ' + n.split('-')[0]:>8}" for n in probes["c4"]] + [f"{'c4 mean':>8}"]
print(f'{"case":39} {"dflt":>5} {"cudnn":>5} {"d/cud":>6} {"drift":>6} ' + " ".join(heads))
logs, means, readings = {}, {}, {}
for k in keys:
    first = tf.get((defaults[0], k), {}) if defaults else {}
    r1 = ratio.get((defaults[0], k), nan) if defaults else nan
    r2 = ratio.get((defaults[-1], k), nan) if defaults else nan
    drift = r2 / r1 if r1 == r1 and r2 == r2 and len(defaults) > 1 else nan
    cells = []
    for s in settings:
        xs = []
        for r in probes[s]:
            b = around(r, k)
            xs.append(ratio.get((r, k), nan) / b if b == b else nan)
        means[(s, k)] = gmean(xs)
        readings[(s, k)] = xs
        logs.setdefault((s, cls(k)), []).extend(xs)
        cells += [cell(x) for x in xs] + [cell(means[(s, k)])]
    star = "*" if k in targets else " "
    print(f"{k.removesuffix('-fwd') + star:39} {first.get('flash', nan):>5.0f} {first.get('cudnn', nan):>5.0f} "
          f"{r1:>5.3f}x {drift:>5.3f}x " + " ".join(cells))
classes = ["d64 non-causal", "d128 non-causal", "causal control"]
for s, w in settings.items():
    print(f"geomeans over all readings, {w} / default: " + "  ".join(
        f"{c} {cell(gmean(logs.get((s, c), [])), 7)} ({len([y for y in logs.get((s, c), []) if y == y])})"
        for c in classes))
print("flash rows not ok or not verified: " + ("; ".join(bad) if bad else "none"))
print("rule (pre-registered, /work/notes/flashfwd-ready1.md and docs/perf-notes.md \"Session 19\"): clusterN becomes a head")
print("dim's non-causal default (TcTiles<D>: plane group 1 and clusters of N) if the geomean of its readings over that head")
print("dim's non-causal rows >= 1.010x, no such row's mean < 0.995x, the causal control's geomean (both settings) within")
print("0.985-1.015x, at least 2 readings a row, every row verified and the GPU tests passed under the word; where both")
print("N pass, the larger geomean ships")
ctrl = gmean(logs.get(("c2", "causal control"), []) + logs.get(("c4", "causal control"), []))
def verdict(s, c):
    g = gmean(logs.get((s, c), []))
    rows = [k for k in keys if cls(k) == c]
    low = [k.removesuffix("-fwd") for k in rows if means.get((s, k), nan) < 0.995]
    unread = [k.removesuffix("-fwd") for k in rows if means.get((s, k), nan) != means.get((s, k), nan)]
    few = [k.removesuffix("-fwd") for k in rows if len([x for x in readings.get((s, k), []) if x == x]) < 2]
    why = []
    if not g >= 1.01:
        why.append(f"geomean {g:.3f}x < 1.010x")
    if low:
        why.append("rows < 0.995x: " + ", ".join(low))
    if unread:
        why.append("rows without a reading: " + ", ".join(unread))
    elif few:
        why.append("rows with fewer than 2 readings: " + ", ".join(few))
    if not 0.985 <= ctrl <= 1.015:
        why.append(f"causal control {ctrl:.3f}x outside 0.985-1.015x")
    if any(k for k in bad if cls(k.split(": ", 1)[-1].split(" ")[0]) == c):
        why.append("rows not ok / not verified")
    if not tests_ok[s]:
        why.append("GPU tests failed")
    return (g if not why else nan), "PASSES" if not why else "does not pass (" + "; ".join(why) + ")"
for c in ["d64 non-causal", "d128 non-causal"]:
    vs = {s: verdict(s, c) for s in settings}
    for s, (g, text) in vs.items():
        print(f"  {settings[s]} {c}: {text}")
    passing = {s: g for s, (g, _) in vs.items() if g == g}
    best = max(passing, key=passing.get) if passing else None
    print(f"  => {c}: " + (f"{settings[best]} SHIPS ({passing[best]:.3f}x)" if best else "nothing ships"))
print("  targets' means (prediction: >= 1.020x on at least one with cluster4): " + ", ".join(
    f"{k.removesuffix('-fwd')} c2 {means.get(('c2', k), nan):.3f} c4 {means.get(('c4', k), nan):.3f}"
    for k in keys if k in targets))
vals = {}
tags = ["d64-default", "d64-c2", "d64-c4", "d128-default", "d128-c2", "d128-c4"]
for t in tags:
    p = os.path.join(out, f"ncu-{t}.log")
    if not os.path.exists(p):
        continue
    for r in csv.reader(open(p)):
        if len(r) > 14 and r[0].strip('"').isdigit():
            vals.setdefault(r[12], {})[t] = r[14]
            vals.setdefault("(grid, block)", {})[t] = f"{r[8]} {r[7]}"
def num(s):
    try:
        return float(s.replace(",", ""))
    except (AttributeError, ValueError):
        return nan
print("\nncu, one launch each, N = 512 bf16 non-causal: d = 64 (b32-h32) and d = 128 (b32-h16); default, cluster2, cluster4")
print("(the clock is ncu's, locked: time here is cycles; the model's gain is clock at the power cap). Session 18's F18")
print("(lrc17, N = 1k): flash-sm90 d = 128 plane-major 19.5M of 35.7M delivered sectors hardware-coalesced, cudnn 16.9M;")
print("flash-sm90 d = 64 in L2 groups 0.20M")
print(f"{'metric':64s} " + " ".join(f"{t:>12s}" for t in tags))
for m, v in sorted(vals.items()):
    shown = {t: v.get(t, "-")[:11] if m.startswith("(") else v.get(t, "-") for t in tags}
    print(f"{m:64s} " + " ".join(f"{shown[t]:>12s}" for t in tags))
for d in ["d64", "d128"]:
    ref = {m: num(v.get(f"{d}-default")) for m, v in vals.items()}
    line = []
    for s in ["c2", "c4"]:
        qs = [f"{m.split('__')[1].split('.')[0][:22]} {num(v.get(f'{d}-{s}')) / ref[m]:.3f}"
              for m, v in sorted(vals.items()) if not m.startswith("(") and ref.get(m) == ref.get(m) and ref.get(m)]
        if qs:
            line.append(f"{s} / default: " + ", ".join(qs))
    if line:
        print(f"{d}: " + "; ".join(line))
if not vals:
    print("(not run or no CSV)")
print("\nclocks: each alone ~1.5 s at d = 64 N = 512 bf16 non-causal, default and cluster4; medians of the nvidia-smi")
print("samples inside the run (first 0.7 s dropped)")
rows = []
try:
    for r in csv.reader(open(os.path.join(out, "smi.csv"))):
        try:
            rows.append((datetime.strptime(r[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp(), float(r[1]),
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
    s = [x for x in rows if w.get("start", 0) + 0.7 <= x[0] <= w.get("end", 0) - 0.2]
    if not s:
        print(f"{name:16s} {us:8.1f} us, no samples")
        continue
    print(f"{name:16s} {us:8.1f} us {len(s):4d} samples {statistics.median(x[1] for x in s):6.0f} MHz "
          f"{statistics.median(x[2] for x in s):6.1f} W {statistics.median(x[3] for x in s):4.0f} C "
          f"{sorted(set(x[4] for x in s))}")
if not win:
    print("(not run: no time left)")
PY
echo "--- steps (total $((SECONDS - t0)) s)"
printf '%s\n' "${summary[@]}"
echo "--- table again"
cat "$out/table.txt"
