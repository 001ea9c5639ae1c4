# Session 17, prepared for session 18's first device call (sm90fwd2; issue 13; <= 60 s on the H200): the probe `pairq`
# (FB_SM90_FWD_PROBE=pairq: non-causal launches at d = 64 and 128 take their work tiles in the plane-major order,
# common/tile_order.h plane_major_tile, i.e. the unchanged kernels launched with plane_group = 1) alone and with
# `static` (the static round-robin t = blockIdx.x + k x 132, so that blocks 2i and 2i + 1 run two query tiles of one
# plane in every round), against the default and `static` alone, beside the in-binary cudnn.
# Why (docs/perf-notes.md, flash-sm90 forward, session 17): cuDNN's forward has 14.8M of its 35.7M delivered K/V sectors
# coalesced by the L2 request coalescer's hardware coalescing (identical requests of a GPC's SMs close in time; its grid
# runs consecutive blocks on consecutive query tiles of one head), ours 0.46M (grouped_tile hands consecutive tickets
# to different planes); halving our L2 reads (session 17's `mcast`, call C) raised the clock at the 692 W cap by 8.8%.
# Steps: the GPU tests '[sm90fwd]' under pairq and under static,pairq, two processes side by side (a test run that times
# out drops its setting from every later step); flashbench default, pairq, static+pairq, static, default, pairq,
# static+pairq, default (a run other than the last starts only while it and the last still fit beside the ncu and clock
# steps: at session 17's step times the first 5, then the last: one reading of each setting, two where time allows) on configs/sm90fwd-s17.json's 9 rows below, each
# beside cudnn, every row verified; ncu (one launch each, d = 128 N = 1k: default, static,pairq, pairq; static last):
# L2 read sectors of the SMs' loads, what the SMs receive, the coalescer's hardware-coalesced and L2-to-coalescer read
# sectors, DRAM bytes, time; the SM clock (nvidia-smi every 50 ms) with ~1.5 s each of the default and the best setting
# (the highest geomean over the d = 128 N <= 2k rows' readings) at d = 128 N = 1k; then ncu of static if time is left.
# The table (OUTDIR/table.txt, last): per row default/cudnn of the first default run and the drift (last default run's
# ratio / first's); each reading of a setting as (setting / cudnn) / (default / cudnn), the default runs before and
# after averaged (geometric mean); per row and setting the mean; static+pairq over static where both ran; geomeans per
# class; the pre-registered rule's verdict (perf-notes "Session 17, prepared for session 18: pairq"); ncu; clocks.
#   BUILD=<build dir with flashbench and tests/flashbench_gpu_tests> OUTDIR=<dir> bash results/h200/s17/calls/job2-sm90fwd-pairq.sh
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
spec=configs/sm90fwd-s17.json
rows='b32-h16-kv16-n512-d128-bf16-full|b16-h16-kv16-n1024-d128-bf16-full|b8-h16-kv16-n2048-d128-bf16-full'
rows="$rows|b4-h16-kv16-n4096-d128-bf16-full|b16-h16-kv16-n1024-d128-fp16-full|b16-h32-kv8-n1024-d128-bf16-full"
rows="$rows|b16-h16-kv16-n1024-d64-bf16-full|b4-h16-kv16-n4096-d64-bf16-full|b16-h16-kv16-n1024-d128-bf16-causal"
filter="^($rows)-fwd\$"
one='^b16-h16-kv16-n1024-d128-bf16-full-fwd$'
budget=60
t0=$SECONDS
summary=()
# Settings by tag (file names stay plain): tag -> FB_SM90_FWD_PROBE.
env_of() {
  case $1 in
    default) echo "" ;;
    pairq) echo "pairq" ;;
    static) echo "static" ;;
    spq) echo "static,pairq" ;;
  esac
}
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
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
# The GPU tests under each new setting first, the two processes side by side (each ~9 s alone in session 17's calls;
# correctness only, so sharing the GPU costs nothing but time), and ncu's metric list beside them (no GPU). pairq runs
# the default kernels (no device code of its own), so a hang is not expected; a timed-out run (rc 124) drops its
# setting from every later step.
: >"$out/tests-rc.txt"
s=$SECONDS
for tag in pairq spq; do
  (FB_SM90_FWD_PROBE=$(env_of $tag) timeout 16 "$build/tests/flashbench_gpu_tests" '[sm90fwd]' >"$out/tests-$tag.log" 2>&1
   echo "tests-$tag rc=$?" >"$out/tests-rc-$tag.txt") &
done
(timeout 6 ncu --query-metrics --chip gh100 >"$out/ncu-query.txt" 2>&1) &
wait
dropped=""
for tag in pairq spq; do
  line=$(cat "$out/tests-rc-$tag.txt" 2>/dev/null || echo "tests-$tag rc=none")
  echo "$line" >>"$out/tests-rc.txt"
  summary+=("$(printf '%-17s %-6s %3ss  %s' "tests-$tag" "${line#* }" "$((SECONDS - s))" \
    "$(tail -n 1 "$out/tests-$tag.log" | cut -c1-70)")")
  [ "${line#* }" = "rc=124" ] && dropped="$dropped $tag" && echo "tests-$tag timed out: not run further" >>"$out/tests-rc.txt"
done
echo "tests rc: $(tr '\n' ' ' <"$out/tests-rc.txt") $((SECONDS - s))s (t=$((SECONDS - t0))s)"
keep() { case " $dropped " in *" $1 "*) return 1 ;; esac; return 0; }
runs=()
n=0
longest=5  # the longest run so far but the first (s): a run other than the last starts only if it and the last fit
plan=(default pairq spq static default pairq spq default)
reserve=14  # seconds kept for three ncu launches (~3 s each) and the clock step (2 x ~2 s)
for v in "${plan[@]}"; do
  n=$((n + 1))
  name=$n-$v
  keep "$v" || { summary+=("$(printf '%-17s dropped (tests timed out)' "$name")"); continue; }
  if [ $n -lt ${#plan[@]} ] && [ $((SECONDS - t0 + 2 * longest + reserve)) -gt $budget ]; then
    summary+=("$(printf '%-17s skipped (t=%ss, runs take up to %ss)' "$name" "$((SECONDS - t0))" "$longest")")
    continue
  fi
  s=$SECONDS
  FB_SM90_FWD_PROBE=$(env_of "$v") step "$name" 12 "$build/flashbench" run $spec \
    --filter "$filter" --kernels flash-sm90,cudnn --no-ceilings -q -o "$out/$name.json"
  [ $n -gt 1 ] && [ $((SECONDS - s)) -gt "$longest" ] && longest=$((SECONDS - s))
  [ -f "$out/$name.json" ] && runs+=("$name")
done
# ncu: one launch each at d = 128 N = 1k, default, static,pairq and pairq here, static (the least needed: its order is
# the default's) after the clocks if time is left; only the metric names this ncu knows (listed beside the tests).
want="lts__t_sectors_srcunit_tex_op_read.sum l1tex__m_xbar2l1tex_read_sectors.sum
lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum lrc__lts2lrc_sectors_op_read.sum
gpu__time_duration.sum dram__bytes_read.sum"
metrics=""
for m in $want; do b=${m%.*}; grep -q "^$b " "$out/ncu-query.txt" 2>/dev/null && metrics="$metrics${metrics:+,}$m"; done
[ -n "$metrics" ] || metrics=lts__t_sectors_srcunit_tex_op_read.sum,l1tex__m_xbar2l1tex_read_sectors.sum,gpu__time_duration.sum
ncu_one() {  # setting
  keep "$1" || return 0
  [ $((budget - (SECONDS - t0))) -lt 5 ] && { summary+=("ncu-$1 skipped (t=$((SECONDS - t0))s)"); return 0; }
  FB_SM90_FWD_PROBE=$(env_of $1) step ncu-$1 6 ncu --csv --metrics "$metrics" -k 'regex:flash_sm90_fwd' -c 1 \
    "$build/flashbench" run $spec --filter "$one" --kernels flash-sm90 --no-ceilings -q --warmup 1 --reps 1 \
    --warmup-time 0
}
for v in default spq pairq; do ncu_one $v; done
# The best setting so far: the highest geometric mean of its readings over the d = 128 N <= 2k rows (as the table).
best=$(python3 - "$out" "${runs[@]}" <<'PY'
import json, math, os, sys
out, names = sys.argv[1], sys.argv[2:]
def ratios(n):
    try:
        res = json.load(open(os.path.join(out, n + ".json")))["results"]
    except (OSError, ValueError, KeyError):
        return {}
    v = {}
    for r in res:
        ok = r["status"] == "ok" and r.get("verified", True) is not False
        v.setdefault(r["key"], {})[r["kernel"]] = r["tflops"] if ok else float("nan")
    return {k: x["flash-sm90"] / x["cudnn"] for k, x in v.items()
            if "flash-sm90" in x and "cudnn" in x and x["cudnn"] and x["flash-sm90"] == x["flash-sm90"]}
def target(k):
    return "-d128-" in k and "-causal" not in k and int(k.split("-n")[1].split("-")[0]) <= 2048
rs = {n: ratios(n) for n in names}
defaults = [n for n in names if n.endswith("-default")]
logs = {}
for n in names:
    tag = n.split("-", 1)[1]
    if tag == "default":
        continue
    i = names.index(n)
    near = [d for d in defaults if names.index(d) < i][-1:] + [d for d in defaults if names.index(d) > i][:1]
    for k, x in rs[n].items():
        b = [rs[d][k] for d in near if k in rs[d]]
        if target(k) and b:
            logs.setdefault(tag, []).append(math.log(x / math.exp(sum(map(math.log, b)) / len(b))))
print(max(logs, key=lambda t: sum(logs[t]) / len(logs[t])) if logs else "pairq")
PY
)
keep "$best" || best=default
echo "best $best" >"$out/best.txt"
# Clocks: each alone ~1.5 s at d = 128 N = 1k, nvidia-smi every 50 ms (as results/h200/s16/calls/job-clock16.sh).
: >"$out/windows.txt"
if [ $((budget - (SECONDS - t0))) -ge 6 ]; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv,nounits -lms 50 >"$out/smi.csv" 2>&1 &
  smi=$!
  for v in $(printf '%s\n' default "$best" | awk '!seen[$0]++'); do
    [ $((budget - (SECONDS - t0))) -lt 3 ] && break
    echo "clock-$v start $(date +%s.%N)" >>"$out/windows.txt"
    FB_SM90_FWD_PROBE=$(env_of "$v") step clock-$v 5 "$build/flashbench" run $spec --filter "$one" \
      --kernels flash-sm90 --no-ceilings -q --min-time 1.5 --max-time 1.8 -o "$out/clock-$v.json"
    echo "clock-$v end $(date +%s.%N)" >>"$out/windows.txt"
  done
  kill $smi 2>/dev/null
fi
ncu_one static
python3 - "$out" "${runs[@]}" <<'PY' | tee "$out/table.txt"
import csv, glob, json, math, os, statistics, sys
from datetime import datetime
out, names = sys.argv[1], sys.argv[2:]
nan = float("nan")
label = {"pairq": "pairq", "static": "static", "spq": "static,pairq"}
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
settings = [t for t in ("pairq", "spq", "static") if any(tag(n) == t for n in names)]
def around(n, k):  # default/cudnn around run n: the geometric mean of the nearest default runs before and after it
    i = names.index(n)
    before = [s for s in defaults if names.index(s) < i]
    after = [s for s in defaults if names.index(s) > i]
    return gmean([ratio.get((s, k), nan) for s in before[-1:] + after[:1]])
def cls(k):
    if "-causal" in k:
        return "causal control"
    if "-d64-" in k:
        return "d64 non-causal"
    n = int(k.split("-n")[1].split("-")[0])
    return "d128 N<=2k" if n <= 2048 else "d128 N>2k"
def cell(x, w=7):
    return f"{x:>{w - 1}.3f}x" if x == x else f"{'-':>{w}}"
tests = {}
for line in open(os.path.join(out, "tests-rc.txt")) if os.path.exists(os.path.join(out, "tests-rc.txt")) else []:
    p = line.split()
    if len(p) == 2 and p[1].startswith("rc="):
        tests[p[0][6:]] = p[1] == "rc=0"
for t in ("pairq", "spq"):
    try:
        tail = open(os.path.join(out, f"tests-{t}.log")).read().strip().splitlines()[-1:]
    except OSError:
        tail = ["no log"]
    print(f"GPU tests '[sm90fwd]' under {label[t]}: {'PASSED' if tests.get(t) else 'FAILED'}; {' '.join(tail)}")
print("flash-sm90 forward: default vs pairq (plane-major tile order), static (static round-robin) and static,pairq;")
print("dflt/cudnn TFLOP/s from the first default run; drift = last default run's ratio / first's; each reading")
print("(setting / cudnn) / (default / cudnn), same-process ratios, the default runs before and after averaged; mean =")
print("geometric mean of the readings; sp/st = static,pairq's mean over static's; '-' = not run, failed or not verified")
hdr = []
for t in settings:
    hdr += [f"{t[:3]} {n.split('-')[0]}" for n in names if tag(n) == t] + [f"{t[:3]} mean"]
print(f'{"case":38} {"dflt":>5} {"cudnn":>5} {"d/cud":>6} {"drift":>6} ' + " ".join(f"{h:>8}" for h in hdr)
      + f' {"sp/st":>7}')
logs, means = {}, {}
for k in keys:
    first = tf.get((defaults[0], k), {}) if defaults else {}
    r1 = ratio.get((defaults[0], k), nan) if defaults else nan
    r2 = ratio.get((defaults[-1], k), nan) if defaults else nan
    drift = r2 / r1 if r1 == r1 and r2 == r2 and len(defaults) > 1 else nan
    cells = []
    for t in settings:
        xs = []
        for r in [n for n in names if tag(n) == t]:
            b = around(r, k)
            xs.append(ratio.get((r, k), nan) / b if b == b else nan)
        means[(t, k)] = gmean(xs)
        logs.setdefault((t, cls(k)), []).extend(xs)
        cells += [cell(x, 8) for x in xs] + [cell(means[(t, k)], 8)]
    sp, st = means.get(("spq", k), nan), means.get(("static", k), nan)
    spst = sp / st if sp == sp and st == st else nan
    logs.setdefault(("sp/st", cls(k)), []).append(spst)
    print(f"{k.removesuffix('-fwd'):38} {first.get('flash-sm90', nan):>5.0f} {first.get('cudnn', nan):>5.0f} "
          f"{r1:>5.3f}x {drift:>5.3f}x " + " ".join(cells) + f" {cell(spst)}")
print("geomeans over all readings (setting / default; sp/st: static,pairq / static, per row):")
classes = ["d128 N<=2k", "d128 N>2k", "d64 non-causal", "causal control"]
for t in settings + ["sp/st"]:
    print(f"  {label.get(t, t):13} " + "  ".join(
        f"{c} {cell(gmean(logs.get((t, c), [])), 6)} ({len([y for y in logs.get((t, c), []) if y == y])})"
        for c in classes))
print("flash-sm90 rows not ok or not verified: " + ("; ".join(bad) if bad else "none"))
# The pre-registered rule (docs/perf-notes.md, flash-sm90 forward, "Session 17, prepared for session 18: pairq").
print("rule (pre-registered): a setting ships as the non-causal default at d = 128 if its geomean over the d = 128")
print("N <= 2k rows (bf16 512 / 1k / 2k, fp16 1k, GQA 1k) >= 1.010x, no d = 128 non-causal row's mean < 0.990x,")
print("every row verified, its GPU tests passed; static,pairq must also be >= 1.000x over pairq there. d = 64: pairq")
print("ships there only if both d = 64 rows' means >= 1.000x and their geomean >= 1.010x (static,pairq: never, its d = 64")
print("runs lose the shipped variant's lazyres and tail split)")
def rule(t):
    if t not in settings:
        return "not run"
    g = gmean(logs.get((t, "d128 N<=2k"), []))
    rows = [k for k in keys if cls(k).startswith("d128")]
    low = [k.removesuffix("-fwd") for k in rows if means.get((t, k), nan) < 0.99]
    unread = [k.removesuffix("-fwd") for k in rows if means.get((t, k), nan) != means.get((t, k), nan)]
    why = []
    if not g >= 1.01:
        why.append(f"geomean {g:.3f}x < 1.010x")
    if low:
        why.append("rows < 0.990x: " + ", ".join(low))
    if unread:
        why.append("rows without a reading: " + ", ".join(unread))
    if bad:
        why.append("rows not ok / not verified")
    if t in ("pairq", "spq") and not tests.get(t):
        why.append("GPU tests failed")
    if t == "spq":
        gp = gmean(logs.get(("pairq", "d128 N<=2k"), []))
        if gp == gp and g == g and g < gp:
            why.append(f"below pairq ({g:.3f}x < {gp:.3f}x)")
    d128 = "SHIPS at d = 128" if not why else "does not ship at d = 128 (" + "; ".join(why) + ")"
    if t == "pairq":
        d64 = [means.get((t, k), nan) for k in keys if cls(k) == "d64 non-causal"]
        ok64 = d64 and all(x >= 1.0 for x in d64) and gmean(d64) >= 1.01 and not bad and tests.get(t)
        d128 += "; d = 64: " + ("SHIPS" if ok64 else "does not ship")
    return d128
for t in ("pairq", "spq"):
    print(f"  {label[t]:13} {rule(t)}")
print("\nncu, one launch each, d = 128 bf16 non-causal N = 1k (b16-h16); call F (session 17): default hw-coalesced 0.46M")
print("of 35.7M delivered sectors, L2->LRC 35.2M; cudnn 14.8M coalesced, L2->LRC 20.9M. Prediction (perf-notes): pairq")
print("2-6M coalesced, static,pairq 8-15M (if blocks 2i, 2i + 1 share a GPC), static ~default")
vals = {}
tags = ["default", "pairq", "static", "spq"]
for t in tags:
    p = os.path.join(out, f"ncu-{t}.log")
    if not os.path.exists(p):
        continue
    for r in csv.reader(open(p)):
        if len(r) > 14 and r[0].strip('"').isdigit():
            vals.setdefault(r[12], {})[t] = r[14]
            vals.setdefault("(grid, block)", {})[t] = f"{r[8]} {r[7]}"
print(f"{'metric':68s} " + " ".join(f"{t:>13s}" for t in tags) + " " + " ".join(f"{t + '/d':>8s}" for t in tags[1:]))
def num(s):
    try:
        return float(s.replace(",", ""))
    except (AttributeError, ValueError):
        return nan
for m, v in sorted(vals.items()):
    d = num(v.get("default"))
    qs = [num(v.get(t)) / d if d == d and d else nan for t in tags[1:]]
    shown = {t: v.get(t, "-")[:11] if m.startswith("(") else v.get(t, "-") for t in tags}  # grid only
    print(f"{m:68s} " + " ".join(f"{shown[t]:>13s}" for t in tags) + " " + " ".join(f"{q:>8.3f}" for q in qs))
if not vals:
    print("(not run or no CSV)")
print("\nclocks: each alone ~1.5 s at d = 128 N = 1k (default and the best setting by the readings); medians of the")
print("nvidia-smi samples inside the run (first 0.7 s dropped); call C: default 1695 MHz at the 692 W cap")
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
        print(f"{name:14s} {us:8.1f} us, no samples")
        continue
    print(f"{name:14s} {us:8.1f} us {len(s):4d} samples {statistics.median(x[1] for x in s):6.0f} MHz "
          f"{statistics.median(x[2] for x in s):6.1f} W {statistics.median(x[3] for x in s):4.0f} C "
          f"{sorted(set(x[4] for x in s))}")
if not win:
    print("(not run: no time left)")
PY
echo "--- steps (total $((SECONDS - t0)) s)"
printf '%s\n' "${summary[@]}"
echo "--- table again"
cat "$out/table.txt"
