# Session 19, call B (sm90fwd; issue 13; <= 60 s on the H200): `pinq`, pairq's cohorts pinned by the static
# round-robin. FB_SM90_FWD_PROBE=pinq: d = 128 non-causal launches in pairq's plane-major order (the d = 128 default
# since session 18) run the static round-robin (block b: tiles b, b + grid, ...) on a grid of whole planes,
# pinned_plane_grid (kernels/flash_sm90/flash_sm90_split.h): the largest multiple of q_tiles at most the SM count, where
# that takes no more rounds than the SM count (132 blocks at N = 512 / 768 / 1536, 128 at 1k / 2k, 130 at 640);
# elsewhere the default launch. Host-only: the kernels are the default's (PTX identical), only the grid and the tile
# counter's absence differ.
# Why (docs/perf-notes.md, flash-sm90 forward, "Session 19"): session 18's call A measured static,pairq over pairq
# 1.017x at d = 128 N = 512 (both runs: 1.039 / 1.039x against pairq's 1.013 / 1.031x over the order before), level
# at N = 1k - 4k; 132 = 33 x 4, so at N = 512 the static round-robin puts one plane's four query tiles on blocks
# 4i .. 4i + 3 in every round.
# Steps: the GPU tests '[sm90fwd]' under pinq (a timed-out run, rc 124, drops pinq from every later step); flashbench
# default, pinq, static, default, pinq, static, default (a run other than the last starts only while it and the last
# fit beside the ncu and clock steps), then pinq, default if both fit, on configs/sm90fwd-s19.json's 11 rows below,
# each beside cudnn, every row verified; ncu, one launch each of default and pinq at d = 128 N = 512 bf16 (the LRC's
# hardware-coalesced and L2-to-LRC read sectors, the SMs' L2 reads, DRAM bytes, time, grid), then at N = 1k fp16
# (pinq's 128-block grid) if time is left; the SM clock (nvidia-smi every 50 ms), ~1.5 s each of default and pinq at
# d = 128 N = 512 bf16.
# `static` (an existing word) is pinq's launch on the rows where pinq takes 132 blocks (a third reading of the same
# launch there), static's 132-block round-robin on the 128 / 130-block rows (grid against grid), and the static
# variant on the controls (at d = 64 without the lazy rescale: not a control for it).
# The table (OUTDIR/table.txt, last): per row its class (A: pinq on 132 blocks, B: on fewer, C: pinq runs the default
# launch), pinq's grid, default/cudnn of the first default run and the drift (last default run's ratio / first's);
# each reading (setting / cudnn) / (default / cudnn), the default runs before and after averaged; per row the means;
# geomeans per class; the pre-registered rule's verdicts; ncu; clocks. Dry-run with stub binaries at 0 / 3.5-4.5 s a
# run: every step, 53-58 s.
#   BUILD=<build dir with flashbench and tests/flashbench_gpu_tests> OUTDIR=<dir> \
#     bash results/h200/s19/calls/job1-sm90fwd.sh
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
spec=configs/sm90fwd-s19.json
rows='b32-h16-kv16-n512-d128-bf16-full|b32-h16-kv16-n512-d128-fp16-full|b21-h16-kv16-n768-d128-bf16-full'
rows="$rows|b10-h16-kv16-n1536-d128-bf16-full|b16-h16-kv16-n1024-d128-fp16-full|b8-h16-kv16-n2048-d128-fp16-full"
rows="$rows|b16-h16-kv16-n1024-d128-bf16-full|b25-h16-kv16-n640-d128-bf16-full|b33-h8-kv8-n1024-d128-bf16-full"
rows="$rows|b32-h16-kv16-n512-d128-bf16-causal|b32-h32-kv32-n512-d64-bf16-full"
filter="^($rows)-fwd\$"
r512='^b32-h16-kv16-n512-d128-bf16-full-fwd$'
r1k='^b16-h16-kv16-n1024-d128-fp16-full-fwd$'
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
env_of() { case $1 in pinq) echo pinq ;; static) echo static ;; *) echo "" ;; esac; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
# The GPU tests under pinq first (~8-10 s in session 18's calls; three d = 128 cases more), ncu's metric list beside them
# (no GPU). pinq runs the default kernels; a timed-out run (rc 124) drops it from every later step all the same.
: >"$out/tests-rc.txt"
s=$SECONDS
(FB_SM90_FWD_PROBE=pinq timeout 18 "$build/tests/flashbench_gpu_tests" '[sm90fwd]' >"$out/tests-probe.log" 2>&1
 echo "tests-probe rc=$?" >"$out/tests-rc.txt") &
(timeout 6 ncu --query-metrics --chip gh100 >"$out/ncu-query.txt" 2>&1) &
wait
line=$(cat "$out/tests-rc.txt" 2>/dev/null || echo "tests-probe rc=none")
summary+=("$(printf '%-17s %-6s %3ss  %s' "tests-probe" "${line#* }" "$((SECONDS - s))" \
  "$(tail -n 1 "$out/tests-probe.log" | cut -c1-70)")")
dropped=0
[ "${line#* }" = "rc=124" ] && dropped=1 && echo "tests-probe timed out: pinq is not run further" >>"$out/tests-rc.txt"
echo "tests: $line $((SECONDS - s))s (t=$((SECONDS - t0))s)"
runs=()
n=0
longest=4  # the longest run so far but the first (s): a run other than the last starts only if it and the last fit
plan=(default pinq static default pinq static default)
reserve=11  # seconds kept for two ncu launches (~2-3 s each) and the two clock steps (~2-3 s each)
for v in "${plan[@]}"; do
  n=$((n + 1))
  name=$n-$v
  [ "$v" = pinq ] && [ $dropped = 1 ] && { summary+=("$(printf '%-17s dropped (tests timed out)' "$name")"); continue; }
  # The last planned run (a default) always runs: it closes the readings. Before it, a setting's run starts only if it
  # and that last default fit beside the ncu and clock steps, a default run only if a setting's run and the last fit too.
  need=$((3 * longest + reserve)); [ "$v" != default ] && need=$((2 * longest + reserve))
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
# A third pinq reading and a closing default, as a pair, where both fit beside the ncu and clock steps.
if [ $dropped = 0 ] && [ $((SECONDS - t0 + 2 * longest + reserve)) -le $budget ]; then
  for v in pinq default; do
    n=$((n + 1))
    name=$n-$v
    FB_SM90_FWD_PROBE=$(env_of "$v") step "$name" 12 "$build/flashbench" run $spec \
      --filter "$filter" --kernels flash-sm90,cudnn --no-ceilings -q -o "$out/$name.json"
    [ -f "$out/$name.json" ] && runs+=("$name")
  done
else
  summary+=("$(printf '%-17s skipped (t=%ss, runs take up to %ss)' "8-pinq, 9-default" "$((SECONDS - t0))" "$longest")")
fi
# ncu: one launch each of default and pinq at d = 128 N = 512 bf16 (then N = 1k fp16 after the clocks, if time is left);
# job1-sm90fwd2.sh's metrics (session 18), only the names this ncu knows (listed beside the tests).
want="lts__t_sectors_srcunit_tex_op_read.sum l1tex__m_xbar2l1tex_read_sectors.sum
lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum lrc__lts2lrc_sectors_op_read.sum
gpu__time_duration.sum dram__bytes_read.sum"
metrics=""
for m in $want; do b=${m%.*}; grep -q "^$b " "$out/ncu-query.txt" 2>/dev/null && metrics="$metrics${metrics:+,}$m"; done
[ -n "$metrics" ] || metrics=lts__t_sectors_srcunit_tex_op_read.sum,l1tex__m_xbar2l1tex_read_sectors.sum,gpu__time_duration.sum
ncu_one() {  # name, setting, filter
  [ "$2" = pinq ] && [ $dropped = 1 ] && return 0
  [ $((budget - (SECONDS - t0))) -lt 5 ] && { summary+=("ncu-$1 skipped (t=$((SECONDS - t0))s)"); return 0; }
  FB_SM90_FWD_PROBE=$(env_of $2) step ncu-$1 6 ncu --csv --metrics "$metrics" -k 'regex:flash_sm90_fwd' -c 1 \
    "$build/flashbench" run $spec --filter "$3" --kernels flash-sm90 --no-ceilings -q --warmup 1 --reps 1 \
    --warmup-time 0
}
ncu_one 512-default default "$r512"
ncu_one 512-pinq pinq "$r512"
# Clocks: each alone ~1.5 s at d = 128 N = 512 bf16, nvidia-smi every 50 ms (as session 18's jobs).
: >"$out/windows.txt"
if [ $((budget - (SECONDS - t0))) -ge 6 ]; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv,nounits -lms 50 >"$out/smi.csv" 2>&1 &
  smi=$!
  for c in 512-default:default 512-pinq:pinq; do
    name=${c%%:*}; v=${c#*:}
    [ "$v" = pinq ] && [ $dropped = 1 ] && continue
    [ $((budget - (SECONDS - t0))) -lt 3 ] && break
    echo "clock-$name start $(date +%s.%N)" >>"$out/windows.txt"
    FB_SM90_FWD_PROBE=$(env_of "$v") step clock-$name 5 "$build/flashbench" run $spec --filter "$r512" \
      --kernels flash-sm90 --no-ceilings -q --min-time 1.5 --max-time 1.8 -o "$out/clock-$name.json"
    echo "clock-$name end $(date +%s.%N)" >>"$out/windows.txt"
  done
  kill $smi 2>/dev/null
fi
[ $((budget - (SECONDS - t0))) -ge 10 ] && { ncu_one 1k-default default "$r1k"; ncu_one 1k-pinq pinq "$r1k"; }
python3 - "$out" "${runs[@]}" <<'PY' | tee "$out/table.txt"
import csv, json, math, os, statistics, sys
from datetime import datetime
out, names = sys.argv[1], sys.argv[2:]
nan = float("nan")
SMS = 132
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
def field(k, p):  # "b32-h16-kv16-n512-d128-bf16-full-fwd" -> the number after prefix p ("b", "h", "n", "d")
    for part in k.split("-"):
        if part.startswith(p) and part[len(p):].isdigit():
            return int(part[len(p):])
    return 0
def pinned_grid(n_work, q, sms=SMS):  # kernels/flash_sm90/flash_sm90_split.h pinned_plane_grid
    if n_work <= 0 or q <= 0 or sms < q:
        return 0
    g = sms // q * q
    if n_work <= g:
        return n_work
    return g if -(-n_work // g) == -(-n_work // sms) else 0
def grid(k):  # pinq's grid for row k (0: the default launch)
    if "-causal" in k or field(k, "d") != 128:
        return 0
    q = -(-field(k, "n") // 128)
    return pinned_grid(field(k, "b") * field(k, "h") * q, q)
def cls(k):
    g = grid(k)
    return "A" if g == SMS else "B" if g else "C"
tag = lambda n: n.split("-", 1)[1]
defaults = [n for n in names if tag(n) == "default"]
settings = {s: [n for n in names if tag(n) == s] for s in ("pinq", "static")}
def around(n, k):  # default/cudnn around run n: the geometric mean of the nearest default runs before and after it
    i = names.index(n)
    before = [s for s in defaults if names.index(s) < i]
    after = [s for s in defaults if names.index(s) > i]
    return gmean([ratio.get((s, k), nan) for s in before[-1:] + after[:1]])
def cell(x, w=8):
    return f"{x:>{w - 1}.3f}x" if x == x else f"{'-':>{w}}"
tests_ok = open(os.path.join(out, "tests-rc.txt")).read().startswith("tests-probe rc=0") \
    if os.path.exists(os.path.join(out, "tests-rc.txt")) else False
try:
    tail = open(os.path.join(out, "tests-probe.log")).read().strip().splitlines()[-1:]
except OSError:
    tail = ["no log"]
print(f"GPU tests '[sm90fwd]' under pinq: {'PASSED' if tests_ok else 'FAILED'}; {' '.join(tail)}")
print("flash-sm90 forward: default vs pinq (d = 128 non-causal, pairq's order on the static round-robin over a grid of")
print("whole planes) and static; class A: pinq on 132 blocks (q_tiles divides 132; static's launch there is pinq's), B: on")
print("fewer (128 / 130), C: pinq runs the default launch; dflt/cudnn TFLOP/s from the first default run; drift = last")
print("default run's ratio / first's; each reading (setting / cudnn) / (default / cudnn), same-process ratios, the default")
print("runs before and after averaged; mean = geometric mean of the readings; p/s = pinq's mean over static's")
print(f'{"case":36} {"cl":>2} {"grid":>4} {"dflt":>5} {"cudnn":>5} {"d/cud":>6} {"drift":>6} ' +
      " ".join(f"{'pq ' + n.split('-')[0]:>8}" for n in settings["pinq"]) + f' {"pq mean":>8} ' +
      " ".join(f"{'st ' + n.split('-')[0]:>8}" for n in settings["static"]) + f' {"st mean":>8} {"p/s":>8}')
logs, means = {}, {}
for k in keys:
    first = tf.get((defaults[0], k), {}) if defaults else {}
    r1 = ratio.get((defaults[0], k), nan) if defaults else nan
    r2 = ratio.get((defaults[-1], k), nan) if defaults else nan
    drift = r2 / r1 if r1 == r1 and r2 == r2 and len(defaults) > 1 else nan
    cells, m = {}, {}
    for s, rs in settings.items():
        xs = []
        for r in rs:
            b = around(r, k)
            xs.append(ratio.get((r, k), nan) / b if b == b else nan)
        cells[s], m[s] = xs, gmean(xs)
        logs.setdefault((s, cls(k)), []).extend(xs)
    means[k] = m
    ps = m["pinq"] / m["static"] if m["pinq"] == m["pinq"] and m["static"] == m["static"] else nan
    print(f"{k.removesuffix('-fwd'):36} {cls(k):>2} {grid(k) or '-':>4} {first.get('flash-sm90', nan):>5.0f} "
          f"{first.get('cudnn', nan):>5.0f} {r1:>5.3f}x {drift:>5.3f}x " + " ".join(cell(x) for x in cells["pinq"]) +
          f" {cell(m['pinq'])} " + " ".join(cell(x) for x in cells["static"]) + f" {cell(m['static'])} {cell(ps)}")
print("geomeans over all readings (setting / default): " + "  ".join(
    f"{s} {c} {cell(gmean(logs.get((s, c), [])), 7)} ({len([y for y in logs.get((s, c), []) if y == y])})"
    for s in settings for c in "ABC"))
print("flash-sm90 rows not ok or not verified: " + ("; ".join(bad) if bad else "none"))
print("rule (pre-registered, docs/perf-notes.md flash-sm90 forward \"Session 19\"): pinq becomes d = 128's non-causal")
print("default on class A launches (132 blocks) if the geomean of its readings over the A rows >= 1.010x, the bf16")
print("b32-h16 N = 512 row's mean >= 1.010x, no A row's mean < 0.995x; on class B launches (fewer blocks) too if the")
print("geomean over the B rows >= 1.010x and no B row < 0.995x; only if the C rows (pinq = the default's launch) read")
print("0.985-1.015x (else the call is too noisy to flip on), every row verified and '[sm90fwd]' passed under pinq")
def why_not(c):
    rows = [k for k in keys if cls(k) == c]
    g = gmean(logs.get(("pinq", c), []))
    low = [k.removesuffix("-fwd") for k in rows if means[k]["pinq"] < 0.995]
    unread = [k.removesuffix("-fwd") for k in rows if means[k]["pinq"] != means[k]["pinq"]]
    why = []
    if not g >= 1.01:
        why.append(f"geomean {g:.3f}x < 1.010x")
    if c == "A":
        t = means.get("b32-h16-kv16-n512-d128-bf16-full-fwd", {}).get("pinq", nan)
        if not t >= 1.01:
            why.append(f"b32-h16 N = 512 bf16 {t:.3f}x < 1.010x")
    if low:
        why.append("rows < 0.995x: " + ", ".join(low))
    if unread:
        why.append("rows without a reading: " + ", ".join(unread))
    gc = gmean(logs.get(("pinq", "C"), []))
    if not 0.985 <= gc <= 1.015:
        why.append(f"controls {gc:.3f}x outside 0.985-1.015x")
    if bad:
        why.append("rows not ok / not verified")
    if not tests_ok:
        why.append("GPU tests failed")
    return why
wa = why_not("A")
wb = why_not("B")
print("  pinq class A (132 blocks): " + ("SHIPS" if not wa else "does not ship (" + "; ".join(wa) + ")"))
print("  pinq class B (128 / 130):  " + ("SHIPS" if not wb and not wa else "does not ship (" +
                                          "; ".join(wb + (["A does not ship"] if wa else [])) + ")"))
vals = {}
tags = ["512-default", "512-pinq", "1k-default", "1k-pinq"]
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
print("\nncu, one launch each (clock locked), d = 128 non-causal: N = 512 bf16 (b32-h16; 18.4M sectors delivered, 12.6M of")
print("them K/V reads another block of the plane also makes), N = 1k fp16 (b16-h16) if time was left; session 18 call A")
print("at N = 1k bf16: pairq 18.3-18.7M coalesced in hardware, static,pairq 19.4-19.9M")
print(f"{'metric':68s} " + " ".join(f"{t:>12s}" for t in tags) + f" {'512 p/d':>7s} {'1k p/d':>7s}")
for m, v in sorted(vals.items()):
    q1 = num(v.get("512-pinq")) / num(v.get("512-default")) if num(v.get("512-default")) else nan
    q2 = num(v.get("1k-pinq")) / num(v.get("1k-default")) if num(v.get("1k-default")) else nan
    shown = {t: v.get(t, "-")[:11] if m.startswith("(") else v.get(t, "-") for t in tags}
    print(f"{m:68s} " + " ".join(f"{shown[t]:>12s}" for t in tags) + f" {q1:>7.3f} {q2:>7.3f}")
if not vals:
    print("(not run or no CSV)")
print("\nclocks: each alone ~1.5 s at d = 128 N = 512 bf16 (default and pinq); medians of the nvidia-smi samples inside")
print("the run (first 0.7 s dropped); session 18 call A at N = 1k: default 1710-1718 MHz, static,pairq 1785 MHz, 692 W cap")
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
        print(f"{name:18s} {us:8.1f} us, no samples")
        continue
    print(f"{name:18s} {us:8.1f} us {len(s):4d} samples {statistics.median(x[1] for x in s):6.0f} MHz "
          f"{statistics.median(x[2] for x in s):6.1f} W {statistics.median(x[3] for x in s):4.0f} C "
          f"{sorted(set(x[4] for x in s))}")
if not win:
    print("(not run: no time left)")
json.dump({"runs": names, "rows": {k: {"class": cls(k), "grid": grid(k), **{s: means[k][s] for s in settings}}
                                   for k in keys},
           "classes": {f"{s} {c}": gmean(logs.get((s, c), [])) for s in settings for c in "ABC"},
           "verdict_A": not wa, "verdict_B": not wb and not wa, "tests_ok": tests_ok, "bad": bad,
           "ncu": vals}, open(os.path.join(out, "summary.json"), "w"), indent=1, default=str)
PY
echo "--- steps (total $((SECONDS - t0)) s)"
printf '%s\n' "${summary[@]}"
echo "--- table again"
cat "$out/table.txt"
