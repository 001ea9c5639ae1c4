# Session 18, call B (sm90fwd2; issue 13; <= 60 s on the H200): d = 64's forward and the causal forward's order.
# One probe setting, `pairq,cpairq` (FB_SM90_FWD_PROBE): d = 64 non-causal launches in the plane-major order (pairq,
# the d = 128 default since call A; at d = 64 it read 1.003-1.016x at N = 1k / 4k in call A), and causal launches at
# d = 64 and 128 of the shipped variants in the plane-major order with a balanced tail (cpairq, kOptCausalPairs,
# flash_sm90_kernel.cuh plane_major_tail_tile: a plane's query tiles on consecutive tickets, its longest first, the
# last planes, about two rounds of tiles, in the causal order), against the default, beside the in-binary cudnn.
# Why (docs/perf-notes.md, flash-sm90 forward, "Session 18: d = 64 and the causal order"): call A's pairq got 18.3M of
# the 35.7M K/V sectors at d = 128 N = 1k merged by the L2 request coalescer and the clock at the 692 W cap 1710 ->
# 1785 MHz; the causal order (grouped_tile) puts different planes on consecutive tickets, so no causal launch
# coalesces, and d = 64 gained little from the order (no d = 64 profile or clock under it yet).
# Steps: the GPU tests '[sm90fwd]' under pairq,cpairq (a timed-out run, rc 124, drops the setting from every later
# step); flashbench default, probe, default, probe, default (a run other than the last starts only while it and the last
# fit beside the ncu and clock steps; more probe/default pairs if time allows) on configs/sm90fwd2-s18.json's 9 rows
# below, each beside cudnn, every row verified; ncu, one launch each of default and probe at d = 64 N = 1k non-causal
# and causal (the SMs' L2 read sectors, what they receive, the LRC's hardware-coalesced and L2-to-LRC read sectors, DRAM
# bytes, time: job2-sm90fwd-pairq.sh's metrics); the SM clock (nvidia-smi every 50 ms), ~1.5 s each of default and
# probe at d = 64 N = 1k non-causal, then causal if time is left.
# The table (OUTDIR/table.txt, last): per row default/cudnn of the first default run and the drift (last default run's
# ratio / first's); each reading (probe / cudnn) / (default / cudnn), the default runs before and after averaged
# (geometric mean); per row the mean; geomeans per class; the pre-registered rule's verdicts; ncu; clocks.
#   BUILD=<build dir with flashbench and tests/flashbench_gpu_tests> OUTDIR=<dir> bash results/h200/s18/calls/job1-sm90fwd2.sh
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
spec=configs/sm90fwd2-s18.json
rows='b32-h32-kv32-n512-d64-bf16-full|b16-h32-kv32-n1024-d64-bf16-full|b32-h32-kv32-n512-d64-bf16-causal'
rows="$rows|b16-h32-kv32-n1024-d64-bf16-causal|b4-h32-kv32-n4096-d64-bf16-causal|b13-h32-kv8-n1280-d64-bf16-causal"
rows="$rows|b16-h32-kv32-n512-d128-bf16-causal|b8-h32-kv32-n1024-d128-bf16-causal|b8-h32-kv32-n1024-d128-bf16-full"
filter="^($rows)-fwd\$"
nc64='^b16-h32-kv32-n1024-d64-bf16-full-fwd$'
c64='^b16-h32-kv32-n1024-d64-bf16-causal-fwd$'
probe=pairq,cpairq
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
env_of() { [ "$1" = probe ] && echo "$probe" || echo ""; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
# The GPU tests under the probe first (~9-10 s in session 17 / 18's calls), ncu's metric list beside them (no GPU).
# cpairq is a new kernel instantiation (kOptCausalPairs: only the work tiles' order differs, every barrier as by
# default); a timed-out run (rc 124) drops the probe from every later step.
: >"$out/tests-rc.txt"
s=$SECONDS
(FB_SM90_FWD_PROBE=$probe timeout 16 "$build/tests/flashbench_gpu_tests" '[sm90fwd]' >"$out/tests-probe.log" 2>&1
 echo "tests-probe rc=$?" >"$out/tests-rc.txt") &
(timeout 6 ncu --query-metrics --chip gh100 >"$out/ncu-query.txt" 2>&1) &
wait
line=$(cat "$out/tests-rc.txt" 2>/dev/null || echo "tests-probe rc=none")
summary+=("$(printf '%-17s %-6s %3ss  %s' "tests-probe" "${line#* }" "$((SECONDS - s))" \
  "$(tail -n 1 "$out/tests-probe.log" | cut -c1-70)")")
dropped=0
[ "${line#* }" = "rc=124" ] && dropped=1 && echo "tests-probe timed out: the probe is not run further" >>"$out/tests-rc.txt"
echo "tests: $line $((SECONDS - s))s (t=$((SECONDS - t0))s)"
runs=()
n=0
longest=4  # the longest run so far but the first (s): a run other than the last starts only if it and the last fit
plan=(default probe default probe default probe default)
reserve=16  # seconds kept for four ncu launches (~3 s each) and the d = 64 non-causal clock step (2 x ~2 s)
for v in "${plan[@]}"; do
  n=$((n + 1))
  name=$n-$v
  [ "$v" = probe ] && [ $dropped = 1 ] && { summary+=("$(printf '%-17s dropped (tests timed out)' "$name")"); continue; }
  # The last planned run (a default) always runs: it closes the readings. Before it, a probe run starts only if it
  # and that last default fit beside the ncu and clock steps, a default run only if a probe run and the last fit too.
  need=$((3 * longest + reserve)); [ "$v" = probe ] && need=$((2 * longest + reserve))
  if [ $n -lt ${#plan[@]} ] && [ $((SECONDS - t0 + need)) -gt $budget ]; then
    summary+=("$(printf '%-17s skipped (t=%ss, runs take up to %ss)' "$name" "$((SECONDS - t0))" "$longest")")
    continue
  fi
  s=$SECONDS
  FB_SM90_FWD_PROBE=$(env_of "$v") step "$name" 12 "$build/flashbench" run $spec \
    --filter "$filter" --kernels flash-sm90,cudnn --no-ceilings -q -o "$out/$name.json"
  [ $n -gt 1 ] && [ $((SECONDS - s)) -gt "$longest" ] && longest=$((SECONDS - s))
  [ -f "$out/$name.json" ] && runs+=("$name")
done
# ncu: one launch each at d = 64 N = 1k, non-causal (pairq) and causal (cpairq), default and probe; the metrics of
# job2-sm90fwd-pairq.sh, only the names this ncu knows (listed beside the tests).
want="lts__t_sectors_srcunit_tex_op_read.sum l1tex__m_xbar2l1tex_read_sectors.sum
lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum lrc__lts2lrc_sectors_op_read.sum
gpu__time_duration.sum dram__bytes_read.sum"
metrics=""
for m in $want; do b=${m%.*}; grep -q "^$b " "$out/ncu-query.txt" 2>/dev/null && metrics="$metrics${metrics:+,}$m"; done
[ -n "$metrics" ] || metrics=lts__t_sectors_srcunit_tex_op_read.sum,l1tex__m_xbar2l1tex_read_sectors.sum,gpu__time_duration.sum
ncu_one() {  # name, setting, filter
  [ "$2" = probe ] && [ $dropped = 1 ] && return 0
  [ $((budget - (SECONDS - t0))) -lt 5 ] && { summary+=("ncu-$1 skipped (t=$((SECONDS - t0))s)"); return 0; }
  FB_SM90_FWD_PROBE=$(env_of $2) step ncu-$1 6 ncu --csv --metrics "$metrics" -k 'regex:flash_sm90_fwd' -c 1 \
    "$build/flashbench" run $spec --filter "$3" --kernels flash-sm90 --no-ceilings -q --warmup 1 --reps 1 \
    --warmup-time 0
}
ncu_one nc-default default "$nc64"
ncu_one nc-probe probe "$nc64"
ncu_one c-default default "$c64"
ncu_one c-probe probe "$c64"
# Clocks: each alone ~1.5 s at d = 64 N = 1k, nvidia-smi every 50 ms (as job2-sm90fwd-pairq.sh): non-causal first,
# then causal while time is left.
: >"$out/windows.txt"
if [ $((budget - (SECONDS - t0))) -ge 6 ]; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv,nounits -lms 50 >"$out/smi.csv" 2>&1 &
  smi=$!
  for c in nc-default:default:$nc64 nc-probe:probe:$nc64 c-default:default:$c64 c-probe:probe:$c64; do
    name=${c%%:*}; rest=${c#*:}; v=${rest%%:*}; f=${rest#*:}
    [ "$v" = probe ] && [ $dropped = 1 ] && continue
    [ $((budget - (SECONDS - t0))) -lt 3 ] && break
    echo "clock-$name start $(date +%s.%N)" >>"$out/windows.txt"
    FB_SM90_FWD_PROBE=$(env_of "$v") step clock-$name 5 "$build/flashbench" run $spec --filter "$f" \
      --kernels flash-sm90 --no-ceilings -q --min-time 1.5 --max-time 1.8 -o "$out/clock-$name.json"
    echo "clock-$name end $(date +%s.%N)" >>"$out/windows.txt"
  done
  kill $smi 2>/dev/null
fi
python3 - "$out" "${runs[@]}" <<'PY' | tee "$out/table.txt"
import csv, json, math, os, statistics, sys
from datetime import datetime
out, names = sys.argv[1], sys.argv[2:]
nan = float("nan")
ratio, tf, bad, keys = {}, {}, [], []  # (run, key) -> flash-sm90 / cudnn (nan unless both ok and verified); TFLOP/s
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
        if r["kernel"] == "flash-sm90" and not ok:
            bad.append(f"{n}: {r['key']} {r['status']} verified={r.get('verified')}")
    for k, x in v.items():
        if k not in keys:
            keys.append(k)
        a, b = x.get("flash-sm90", nan), x.get("cudnn", nan)
        ratio[(n, k)] = a / b if a == a and b == b and b else nan
        tf[(n, k)] = x
def gmean(xs):
    xs = [x for x in xs if x == x]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else nan
tag = lambda n: n.split("-", 1)[1]
defaults = [n for n in names if tag(n) == "default"]
probes = [n for n in names if tag(n) == "probe"]
def around(n, k):  # default/cudnn around run n: the geometric mean of the nearest default runs before and after it
    i = names.index(n)
    before = [s for s in defaults if names.index(s) < i]
    after = [s for s in defaults if names.index(s) > i]
    return gmean([ratio.get((s, k), nan) for s in before[-1:] + after[:1]])
def cls(k):
    d = "d64" if "-d64-" in k else "d128"
    return f"{d} {'causal' if '-causal' in k else 'non-causal'}"
def cell(x, w=8):
    return f"{x:>{w - 1}.3f}x" if x == x else f"{'-':>{w}}"
tests_ok = open(os.path.join(out, "tests-rc.txt")).read().startswith("tests-probe rc=0") \
    if os.path.exists(os.path.join(out, "tests-rc.txt")) else False
try:
    tail = open(os.path.join(out, "tests-probe.log")).read().strip().splitlines()[-1:]
except OSError:
    tail = ["no log"]
print(f"GPU tests '[sm90fwd]' under pairq,cpairq: {'PASSED' if tests_ok else 'FAILED'}; {' '.join(tail)}")
print("flash-sm90 forward: default vs pairq,cpairq (d = 64 non-causal: plane-major; causal d = 64 / 128: plane-major")
print("with a balanced tail); dflt/cudnn TFLOP/s from the first default run; drift = last default run's ratio / first's;")
print("each reading (probe / cudnn) / (default / cudnn), same-process ratios, the default runs before and after averaged;")
print("mean = geometric mean of the readings; '-' = not run, failed or not verified")
print(f'{"case":38} {"dflt":>5} {"cudnn":>5} {"d/cud":>6} {"drift":>6} ' +
      " ".join(f"{'pr ' + n.split('-')[0]:>8}" for n in probes) + f' {"mean":>8}')
logs, means = {}, {}
for k in keys:
    first = tf.get((defaults[0], k), {}) if defaults else {}
    r1 = ratio.get((defaults[0], k), nan) if defaults else nan
    r2 = ratio.get((defaults[-1], k), nan) if defaults else nan
    drift = r2 / r1 if r1 == r1 and r2 == r2 and len(defaults) > 1 else nan
    xs = []
    for r in probes:
        b = around(r, k)
        xs.append(ratio.get((r, k), nan) / b if b == b else nan)
    means[k] = gmean(xs)
    logs.setdefault(cls(k), []).extend(xs)
    print(f"{k.removesuffix('-fwd'):38} {first.get('flash-sm90', nan):>5.0f} {first.get('cudnn', nan):>5.0f} "
          f"{r1:>5.3f}x {drift:>5.3f}x " + " ".join(cell(x) for x in xs) + f" {cell(means[k])}")
classes = ["d64 non-causal", "d64 causal", "d128 causal", "d128 non-causal"]
print("geomeans over all readings (probe / default): " + "  ".join(
    f"{c} {cell(gmean(logs.get(c, [])), 7)} ({len([y for y in logs.get(c, []) if y == y])})" for c in classes))
print("  (d128 non-causal: the control, which neither word changes: pairq is its default since call A)")
print("flash-sm90 rows not ok or not verified: " + ("; ".join(bad) if bad else "none"))
# ncu, read before the rule (cpairq's rule asks for the coalescing it is for)
vals = {}
tags = ["nc-default", "nc-probe", "c-default", "c-probe"]
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
hw = vals.get("lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum", {})
print("rules (pre-registered, docs/perf-notes.md \"Session 18: d = 64 and the causal order\"):")
print("  cpairq ships as a head dim's causal default (d = 64, d = 128 each by its own rows) if the geomean of its readings")
print("  over that head dim's causal rows >= 1.010x, none of those rows' means < 0.990x, every row verified, the GPU tests")
print("  passed, and ncu at d = 64 N = 1k causal shows >= 3M hardware-coalesced sectors (the mechanism; d = 128 by the same")
print("  order). pairq ships at d = 64 non-causal if the geomean over both d = 64 non-causal rows >= 1.010x and each row's")
print("  mean >= 1.000x, verified, tests passed (call A's 1k / 4k readings, 1.003-1.016x, stand beside them)")
def verdict(c, thr_row, mech):
    g = gmean(logs.get(c, []))
    rows = [k for k in keys if cls(k) == c]
    low = [k.removesuffix("-fwd") for k in rows if means.get(k, nan) < thr_row]
    unread = [k.removesuffix("-fwd") for k in rows if means.get(k, nan) != means.get(k, nan)]
    why = []
    if not g >= 1.01:
        why.append(f"geomean {g:.3f}x < 1.010x")
    if low:
        why.append(f"rows < {thr_row:.3f}x: " + ", ".join(low))
    if unread:
        why.append("rows without a reading: " + ", ".join(unread))
    if bad:
        why.append("rows not ok / not verified")
    if not tests_ok:
        why.append("GPU tests failed")
    if mech is not None:
        why.append(mech)
    return "SHIPS" if not why else "does not ship (" + "; ".join(why) + ")"
c_hw = num(hw.get("c-probe"))
mech = None if c_hw >= 3e6 else (f"causal hw-coalesced {c_hw / 1e6:.2f}M < 3M" if c_hw == c_hw else "no causal ncu")
print(f"  cpairq d = 64 causal:   {verdict('d64 causal', 0.99, mech)}")
print(f"  cpairq d = 128 causal:  {verdict('d128 causal', 0.99, mech)}")
print(f"  pairq d = 64 non-causal: {verdict('d64 non-causal', 1.0, None)}")
print("\nncu, one launch each, d = 64 bf16 N = 1k (b16-h32), non-causal (nc) and causal (c); session 17 call F: default")
print("non-causal 0.20M of 27.5M delivered sectors coalesced in hardware, L2->LRC 27.4M; cudnn 15.3M, L2->LRC 20.4M")
print(f"{'metric':68s} " + " ".join(f"{t:>13s}" for t in tags) + f" {'nc p/d':>7s} {'c p/d':>7s}")
for m, v in sorted(vals.items()):
    q1 = num(v.get("nc-probe")) / num(v.get("nc-default")) if num(v.get("nc-default")) else nan
    q2 = num(v.get("c-probe")) / num(v.get("c-default")) if num(v.get("c-default")) else nan
    shown = {t: v.get(t, "-")[:11] if m.startswith("(") else v.get(t, "-") for t in tags}
    print(f"{m:68s} " + " ".join(f"{shown[t]:>13s}" for t in tags) + f" {q1:>7.3f} {q2:>7.3f}")
if not vals:
    print("(not run or no CSV)")
print("\nclocks: each alone ~1.5 s at d = 64 N = 1k (nc: non-causal, c: causal; default and probe); medians of the")
print("nvidia-smi samples inside the run (first 0.7 s dropped); session 17 call A: d = 64 N = 1k default 1868-1890 MHz,")
print("cudnn 1875 MHz, both at the 692 W cap")
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
