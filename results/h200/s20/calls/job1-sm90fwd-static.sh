# Session 20, first call (sm90fwd; issue 13; <= 60 s on the H200): `static` at d = 128 non-causal N <= 640, the
# measurement session 19's call B asked for. FB_SM90_FWD_PROBE=static: the static round-robin (block b: work tiles b,
# b + grid, ... on min(n_work, SMs) blocks) in place of the tile counter; at d = 128 non-causal in pairq's plane-major
# order (the default there since session 18), so that blocks k q_tiles .. (k + 1) q_tiles - 1 of every round run one
# plane's query tiles, started together (q_tiles = 2 / 3 / 4 divide 132). Host-only: the kernels are the default's.
# `shortstatic` (prepared on branch sm90fwds19b, off by default: FwdDefaults::kShortStaticHeadDim = 0) takes exactly
# this launch on d = 128 non-causal launches of at most 4 K/V tiles a work tile (seq_k <= 512: class T below) and the
# default's elsewhere; the rule below flips its default (one value, 128) on static's readings of the T rows.
# Why (docs/perf-notes.md, flash-sm90 forward, "Session 19" and "Session 19, prepared for session 20"): call B
# (results/h200/s19/callB/sm90fwd/) read the static launch in pairq's order 1.022x over the tile counter at d = 128
# N = 512 b32-h16 (5 readings; fp16 1.018x; ncu 7.4M -> 11.5M sectors coalesced, 1860 -> 1898 MHz at the cap) and level
# at 5 / 6 / 8 / 12 K/V tiles a work tile (N = 640 / 768 / 1k / 1536); session 18's call A 1.017x at N = 512 over pairq.
# Steps: the GPU tests '[sm90fwd]' under static and under shortstatic, two processes side by side (a timed-out run,
# rc 124, drops static from every later step); flashbench default, static, default, static, default, static, default
# (a run other than the last starts only while it and the last fit beside the ncu and clock steps), then static,
# default if both fit, on configs/sm90fwd-static-s20.json's 11 rows below (shapes no other config names), each beside
# cudnn, every row verified; ncu, one launch each of default and static at d = 128 N = 512 bf16 b28-h16 (the LRC's
# hardware-coalesced and L2-to-LRC read sectors, the SMs' L2 reads, DRAM bytes, time, grid); the SM clock
# (nvidia-smi every 50 ms), ~1.5 s each of default and static on the same row; ncu at N = 256 b48-h16 if time is left.
# The table (OUTDIR/table.txt, last): per row its class (T: shortstatic takes the static launch, <= 4 K/V tiles; E:
# the edge, N = 640, 5 K/V tiles; C: controls, the default's launch under shortstatic, static expected level or
# behind), default/cudnn of the first default run and the drift (last default run's ratio / first's); each reading
# (static / cudnn) / (default / cudnn), the default runs before and after averaged; per row the mean; geomeans per
# class and per N; the pre-registered rule's verdict; ncu; clocks. Dry-run with stub binaries: see the perf-notes.
#   BUILD=<build dir with flashbench and tests/flashbench_gpu_tests> OUTDIR=<dir> \
#     bash results/h200/s20/calls/job1-sm90fwd-static.sh
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
spec=configs/sm90fwd-static-s20.json
rows='b48-h16-kv16-n256-d128-bf16-full|b40-h24-kv24-n256-d128-bf16-full|b40-h16-kv16-n384-d128-bf16-full'
rows="$rows|b22-h24-kv24-n384-d128-fp16-full|b28-h16-kv16-n512-d128-bf16-full|b14-h32-kv32-n512-d128-bf16-full"
rows="$rows|b20-h24-kv24-n512-d128-fp16-full|b20-h16-kv16-n640-d128-bf16-full|b14-h16-kv16-n768-d128-bf16-full"
rows="$rows|b12-h24-kv24-n1024-d128-bf16-full|b28-h16-kv16-n512-d128-bf16-causal"
filter="^($rows)-fwd\$"
r512='^b28-h16-kv16-n512-d128-bf16-full-fwd$'
r256='^b48-h16-kv16-n256-d128-bf16-full-fwd$'
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
env_of() { case $1 in static) echo static ;; *) echo "" ;; esac; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
# The GPU tests under static and under shortstatic first, side by side (~9 s alone in session 19's call B), ncu's
# metric list beside them (no GPU). Both run the default kernels; a timed-out static run (rc 124) drops static from
# every later step.
: >"$out/tests-rc.txt"
s=$SECONDS
for w in static shortstatic; do
  (FB_SM90_FWD_PROBE=$w timeout 20 "$build/tests/flashbench_gpu_tests" '[sm90fwd]' >"$out/tests-$w.log" 2>&1
   echo "tests-$w rc=$?" >"$out/tests-rc-$w.txt") &
done
(timeout 6 ncu --query-metrics --chip gh100 >"$out/ncu-query.txt" 2>&1) &
wait
dropped=0
for w in static shortstatic; do
  line=$(cat "$out/tests-rc-$w.txt" 2>/dev/null || echo "tests-$w rc=none")
  echo "$line" >>"$out/tests-rc.txt"
  summary+=("$(printf '%-17s %-6s %3ss  %s' "tests-$w" "${line#* }" "$((SECONDS - s))" \
    "$(tail -n 1 "$out/tests-$w.log" | cut -c1-70)")")
  [ $w = static ] && [ "${line#* }" = "rc=124" ] && dropped=1 && echo "tests-static timed out: static is not run further" \
    >>"$out/tests-rc.txt"
done
echo "tests: $(tr '\n' ' ' <"$out/tests-rc.txt")$((SECONDS - s))s (t=$((SECONDS - t0))s)"
runs=()
n=0
longest=4  # the longest run so far but the first (s): a run other than the last starts only if it and the last fit
plan=(default static default static default static default)
reserve=11  # seconds kept for two ncu launches (~2-3 s each) and the two clock steps (~2-3 s each)
for v in "${plan[@]}"; do
  n=$((n + 1))
  name=$n-$v
  [ "$v" = static ] && [ $dropped = 1 ] && { summary+=("$(printf '%-17s dropped (tests timed out)' "$name")"); continue; }
  # The last planned run (a default) always runs: it closes the readings. Before it, a static run starts only if it
  # and that last default fit beside the ncu and clock steps, a default run only if a static run and the last fit too.
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
# A fourth static reading and a closing default, as a pair, where both fit beside the ncu and clock steps.
if [ $dropped = 0 ] && [ $((SECONDS - t0 + 2 * longest + reserve)) -le $budget ]; then
  for v in static default; do
    n=$((n + 1))
    name=$n-$v
    FB_SM90_FWD_PROBE=$(env_of "$v") step "$name" 12 "$build/flashbench" run $spec \
      --filter "$filter" --kernels flash-sm90,cudnn --no-ceilings -q -o "$out/$name.json"
    [ -f "$out/$name.json" ] && runs+=("$name")
  done
else
  summary+=("$(printf '%-17s skipped (t=%ss, runs take up to %ss)' "8-static, 9-default" "$((SECONDS - t0))" "$longest")")
fi
# ncu: one launch each of default and static at d = 128 N = 512 bf16 b28-h16 (then N = 256 b48-h16 after the clocks,
# if time is left); session 19's job1-sm90fwd.sh metrics, only the names this ncu knows (listed beside the tests).
want="lts__t_sectors_srcunit_tex_op_read.sum l1tex__m_xbar2l1tex_read_sectors.sum
lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum lrc__lts2lrc_sectors_op_read.sum
gpu__time_duration.sum dram__bytes_read.sum"
metrics=""
for m in $want; do b=${m%.*}; grep -q "^$b " "$out/ncu-query.txt" 2>/dev/null && metrics="$metrics${metrics:+,}$m"; done
[ -n "$metrics" ] || metrics=lts__t_sectors_srcunit_tex_op_read.sum,l1tex__m_xbar2l1tex_read_sectors.sum,gpu__time_duration.sum
ncu_one() {  # name, setting, filter
  [ "$2" = static ] && [ $dropped = 1 ] && return 0
  [ $((budget - (SECONDS - t0))) -lt 5 ] && { summary+=("ncu-$1 skipped (t=$((SECONDS - t0))s)"); return 0; }
  FB_SM90_FWD_PROBE=$(env_of $2) step ncu-$1 6 ncu --csv --metrics "$metrics" -k 'regex:flash_sm90_fwd' -c 1 \
    "$build/flashbench" run $spec --filter "$3" --kernels flash-sm90 --no-ceilings -q --warmup 1 --reps 1 \
    --warmup-time 0
}
ncu_one 512-default default "$r512"
ncu_one 512-static static "$r512"
# Clocks: each alone ~1.5 s at d = 128 N = 512 bf16 b28-h16, nvidia-smi every 50 ms (as session 19's job); both or
# neither (~2.5-3 s each: a default's clock alone says nothing).
: >"$out/windows.txt"
if [ $((budget - (SECONDS - t0))) -ge 7 ]; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv,nounits -lms 50 >"$out/smi.csv" 2>&1 &
  smi=$!
  for c in 512-default:default 512-static:static; do
    name=${c%%:*}; v=${c#*:}
    [ "$v" = static ] && [ $dropped = 1 ] && continue
    [ $((budget - (SECONDS - t0))) -lt 4 ] && break
    echo "clock-$name start $(date +%s.%N)" >>"$out/windows.txt"
    FB_SM90_FWD_PROBE=$(env_of "$v") step clock-$name 5 "$build/flashbench" run $spec --filter "$r512" \
      --kernels flash-sm90 --no-ceilings -q --min-time 1.5 --max-time 1.8 -o "$out/clock-$name.json"
    echo "clock-$name end $(date +%s.%N)" >>"$out/windows.txt"
  done
  kill $smi 2>/dev/null
fi
[ $((budget - (SECONDS - t0))) -ge 10 ] && { ncu_one 256-default default "$r256"; ncu_one 256-static static "$r256"; }
python3 - "$out" "${runs[@]}" <<'PY' | tee "$out/table.txt"
import csv, json, math, os, statistics, sys
from datetime import datetime
out, names = sys.argv[1], sys.argv[2:]
nan = float("nan")
KEYS_PER_KV_TILE = 128  # d = 128's K/V tile (kernels/flash_sm90/flash_sm90_config.h)
MAX_KV_TILES = 4  # FwdDefaults::kShortStaticMaxKvTiles
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
def field(k, p):  # "b28-h16-kv16-n512-d128-bf16-full-fwd" -> the number after prefix p ("b", "h", "n", "d")
    for part in k.split("-"):
        if part.startswith(p) and part[len(p):].isdigit():
            return int(part[len(p):])
    return 0
def short_static(k):  # kernels/flash_sm90/flash_sm90_split.h short_tile_static, d = 128 in pairq's order
    return field(k, "d") == 128 and "-causal" not in k and 0 < field(k, "n") <= MAX_KV_TILES * KEYS_PER_KV_TILE
def cls(k):
    if short_static(k):
        return "T"
    if field(k, "d") == 128 and "-causal" not in k and field(k, "n") <= (MAX_KV_TILES + 1) * KEYS_PER_KV_TILE:
        return "E"
    return "C"
tag = lambda n: n.split("-", 1)[1]
defaults = [n for n in names if tag(n) == "default"]
statics = [n for n in names if tag(n) == "static"]
def around(n, k):  # default/cudnn around run n: the geometric mean of the nearest default runs before and after it
    i = names.index(n)
    before = [s for s in defaults if names.index(s) < i]
    after = [s for s in defaults if names.index(s) > i]
    return gmean([ratio.get((s, k), nan) for s in before[-1:] + after[:1]])
def cell(x, w=8):
    return f"{x:>{w - 1}.3f}x" if x == x else f"{'-':>{w}}"
rc = {}
try:
    for line in open(os.path.join(out, "tests-rc.txt")):
        p = line.split()
        if len(p) == 2 and p[0].startswith("tests-"):
            rc[p[0][6:]] = p[1]
except OSError:
    pass
tests_ok = {w: rc.get(w) == "rc=0" for w in ("static", "shortstatic")}
for w in ("static", "shortstatic"):
    try:
        tail = open(os.path.join(out, f"tests-{w}.log")).read().strip().splitlines()[-1:]
    except OSError:
        tail = ["no log"]
    print(f"GPU tests '[sm90fwd]' under {w}: {'PASSED' if tests_ok[w] else 'FAILED'}; {' '.join(tail)}")
print("flash-sm90 forward, d = 128: default (the tile counter) vs static (the static round-robin; non-causal in pairq's")
print("order); class T: shortstatic takes static's launch (non-causal, <= 4 K/V tiles a work tile), E: the edge (5 K/V")
print("tiles), C: controls (shortstatic runs the default's launch; static expected level or behind); dflt/cudnn TFLOP/s")
print("from the first default run; drift = last default run's ratio / first's; each reading (static / cudnn) / (default /")
print("cudnn), same-process ratios, the default runs before and after averaged; mean = geometric mean of the readings")
print(f'{"case":36} {"cl":>2} {"tiles":>5} {"dflt":>5} {"cudnn":>5} {"d/cud":>6} {"drift":>6} ' +
      " ".join(f"{'st ' + n.split('-')[0]:>8}" for n in statics) + f' {"st mean":>8}')
logs, means, drifts = {}, {}, []
# Rows by class (T, E, C), then causal last, N, dtype, batch.
keys.sort(key=lambda k: ("TEC".index(cls(k)), "-causal" in k, field(k, "n"), "-fp16-" in k, -field(k, "b")))
for k in keys:
    first = tf.get((defaults[0], k), {}) if defaults else {}
    r1 = ratio.get((defaults[0], k), nan) if defaults else nan
    r2 = ratio.get((defaults[-1], k), nan) if defaults else nan
    drift = r2 / r1 if r1 == r1 and r2 == r2 and len(defaults) > 1 else nan
    drifts.append(drift)
    xs = []
    for r in statics:
        b = around(r, k)
        xs.append(ratio.get((r, k), nan) / b if b == b else nan)
    means[k] = gmean(xs)
    logs.setdefault(cls(k), []).extend(xs)
    logs.setdefault(f"n{field(k, 'n')}" + ("c" if "-causal" in k else ""), []).extend(xs)
    tiles = field(k, "b") * field(k, "h") * -(-field(k, "n") // 128)
    print(f"{k.removesuffix('-fwd'):36} {cls(k):>2} {tiles:>5} {first.get('flash-sm90', nan):>5.0f} "
          f"{first.get('cudnn', nan):>5.0f} {r1:>5.3f}x {drift:>5.3f}x " + " ".join(cell(x) for x in xs) +
          f" {cell(means[k])}")
def count(xs):
    return len([y for y in xs if y == y])
print("geomeans over all readings (static / default): " + "  ".join(
    f"{c} {cell(gmean(logs.get(c, [])), 7)} ({count(logs.get(c, []))})" for c in "TEC"))
print("  per N: " + "  ".join(f"{c} {cell(gmean(v), 7)} ({count(v)})" for c, v in logs.items() if c.startswith("n")) +
      f"   default drift geomean {cell(gmean(drifts), 7)}")
print("flash-sm90 rows not ok or not verified: " + ("; ".join(bad) if bad else "none"))
print("rule (pre-registered, docs/perf-notes.md flash-sm90 forward \"Session 19, prepared for session 20\"): shortstatic")
print("becomes the default at d = 128 (FwdDefaults::kShortStaticHeadDim = 128: the static round-robin on non-causal")
print("launches of <= 4 K/V tiles a work tile) if static's readings over the T rows have a geomean >= 1.010x, those of")
print("the three N = 512 rows >= 1.010x, no T row's mean < 0.995x; every row verified, '[sm90fwd]' passed under static")
print("and shortstatic, the default runs' drift geomean 0.985-1.015x (else the call is too noisy to flip on). E and C")
print("rows are read against the prediction, not gated")
why = []
g = gmean(logs.get("T", []))
if not g >= 1.01:
    why.append(f"T geomean {g:.3f}x < 1.010x")
g512 = gmean(logs.get("n512", []))
if not g512 >= 1.01:
    why.append(f"N = 512 geomean {g512:.3f}x < 1.010x")
low = [k.removesuffix("-fwd") for k in keys if cls(k) == "T" and means[k] < 0.995]
unread = [k.removesuffix("-fwd") for k in keys if cls(k) == "T" and means[k] != means[k]]
if low:
    why.append("T rows < 0.995x: " + ", ".join(low))
if unread:
    why.append("T rows without a reading: " + ", ".join(unread))
if not any(cls(k) == "T" for k in keys):
    why.append("no T rows read")
gd = gmean(drifts)
if not 0.985 <= gd <= 1.015:
    why.append(f"default drift {gd:.3f}x outside 0.985-1.015x")
if bad:
    why.append("rows not ok / not verified")
for w in ("static", "shortstatic"):
    if not tests_ok[w]:
        why.append(f"GPU tests under {w} failed")
print("  shortstatic at d = 128: " + ("SHIPS (flip FwdDefaults::kShortStaticHeadDim to 128)" if not why else
                                     "does not ship (" + "; ".join(why) + ")"))
vals = {}
tags = ["512-default", "512-static", "256-default", "256-static"]
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
print("\nncu, one launch each (clock locked), d = 128 non-causal bf16: N = 512 b28-h16, N = 256 b48-h16 if time was left;")
print("session 19's call B at N = 512 b32-h16: default 7.42M sectors coalesced in hardware, static's launch 11.45M; L2 ->")
print("LRC 11.47M -> 7.43M; time 170.2 -> 172.1 us")
print(f"{'metric':68s} " + " ".join(f"{t:>12s}" for t in tags) + f" {'512 s/d':>7s} {'256 s/d':>7s}")
for m, v in sorted(vals.items()):
    q1 = num(v.get("512-static")) / num(v.get("512-default")) if num(v.get("512-default")) else nan
    q2 = num(v.get("256-static")) / num(v.get("256-default")) if num(v.get("256-default")) else nan
    shown = {t: v.get(t, "-")[:11] if m.startswith("(") else v.get(t, "-") for t in tags}
    print(f"{m:68s} " + " ".join(f"{shown[t]:>12s}" for t in tags) + f" {q1:>7.3f} {q2:>7.3f}")
if not vals:
    print("(not run or no CSV)")
print("\nclocks: each alone ~1.5 s at d = 128 N = 512 bf16 b28-h16 (default and static); medians of the nvidia-smi samples")
print("inside the run (first 0.7 s dropped); session 19's call B at b32-h16: default 1860 MHz, static's launch 1898, 692 W cap")
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
json.dump({"runs": names, "rows": {k: {"class": cls(k), "static": means[k]} for k in keys},
           "classes": {c: gmean(v) for c, v in logs.items()}, "drift": gd, "verdict": not why, "why_not": why,
           "tests_ok": tests_ok, "bad": bad, "ncu": vals},
          open(os.path.join(out, "summary.json"), "w"), indent=1, default=str)
PY
echo "--- steps (total $((SECONDS - t0)) s)"
printf '%s\n' "${summary[@]}"
echo "--- table again"
cat "$out/table.txt"
