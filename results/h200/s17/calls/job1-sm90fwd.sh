# Session 17, sm90fwd (issue 13; <= 60 s on the H200): the probe `mcast` (FB_SM90_FWD_PROBE=mcast; kOptMcast) against
# the default. Call A's clock/L2 job (d = 128 bf16 non-causal N = 1k, 16k tokens, model dim 2048): both kernels at the
# 692 W power cap, ours at 1710 MHz against cudnn's 1740-1755 (the row's 2% gap), ours reading 36.7M L2 sectors for
# the SMs' loads against cudnn's 18.5M while the SMs receive the same 35.65M: each of a plane's 8 query tiles reads
# the plane's K/V from L2, cudnn multicasts K/V across a 2-block cluster. mcast runs non-causal launches (d = 128 and
# 64) in 2-block clusters whose blocks run query tiles 2i and 2i + 1 of one plane at the same time, each K/V tile read
# once (rank 0's producer multicasts K, rank 1's V, into both blocks); causal launches run the default.
# Steps: the GPU tests '[sm90fwd]' under mcast (its new case [mcast] included); flashbench default, mcast, default,
# mcast, default on configs/sm90fwd-s17.json (13 rows), each beside the in-binary cudnn, every row verified; ncu
# (one launch each, default and mcast, d = 128 N = 1k): L2 sectors, those of the SMs' reads, what the SMs receive,
# time, DRAM bytes, the grid; then, if the budget leaves room, each alone for ~1.5 s (d = 128 N = 1k) with nvidia-smi sampling the SM
# clock and power every 50 ms. A run other than the last starts only while it and the last still fit.
# The table (OUTDIR/table.txt, last): per row default/cudnn of the first default run, drift (last default run's ratio
# / first's), each mcast reading as (mcast / cudnn) / (default / cudnn) with the default runs before and after
# averaged (geometric mean), their mean; geometric means per class; flash-sm90 rows not verified; ncu; clocks.
#   BUILD=<build dir> OUTDIR=<dir> bash results/h200/s17/calls/job1-sm90fwd.sh
# Ran in calls B (on 65e79c1's kernel) and C (on 5d46b87's); mcast was removed after call C (the word is refused since):
# the job is the record of what ran, for a build of 5d46b87.
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
spec=configs/sm90fwd-s17.json
rows='b32-h16-kv16-n512-d128-bf16-full|b16-h16-kv16-n1024-d128-bf16-full|b8-h16-kv16-n2048-d128-bf16-full'
rows="$rows|b4-h16-kv16-n4096-d128-bf16-full|b2-h16-kv16-n8192-d128-bf16-full|b16-h16-kv16-n1024-d128-fp16-full"
rows="$rows|b16-h32-kv8-n1024-d128-bf16-full|b15-h16-kv16-n1100-d128-bf16-full|b11-h16-kv16-n1536-d128-bf16-full"
rows="$rows|b5-h16-kv16-n3000-d128-bf16-full|b16-h16-kv16-n1024-d64-bf16-full|b4-h16-kv16-n4096-d64-bf16-full"
rows="$rows|b16-h16-kv16-n1024-d128-bf16-causal"
filter="^($rows)-fwd\$"
one='^b16-h16-kv16-n1024-d128-bf16-full-fwd$'
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
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
FB_SM90_FWD_PROBE=mcast step tests-mcast 18 "$build/tests/flashbench_gpu_tests" '[sm90fwd]'
trc=$?
echo "tests-mcast rc=$trc" >"$out/tests-rc.txt"
# A timed-out test run under mcast may be a hang: then no further mcast process (the default runs and ncu only).
words="default mcast default mcast default"
[ "$trc" -eq 124 ] && words="default default default" && echo "tests timed out: mcast not run further" >>"$out/tests-rc.txt"
runs=()
n=0
longest=5  # the longest run so far but the first (s): a run other than the last starts only if it and the last fit
plan=($words)
reserve=12  # seconds kept for the ncu step
for v in "${plan[@]}"; do
  n=$((n + 1))
  name=$n-$v
  if [ $n -lt ${#plan[@]} ] && [ $((SECONDS - t0 + 2 * longest + reserve)) -gt $budget ]; then
    summary+=("$(printf '%-17s skipped (t=%ss, runs take up to %ss)' "$name" "$((SECONDS - t0))" "$longest")")
    continue
  fi
  s=$SECONDS
  FB_SM90_FWD_PROBE=${v#default} step "$name" 12 "$build/flashbench" run $spec \
    --filter "$filter" --kernels flash-sm90,cudnn --no-ceilings -q -o "$out/$name.json"
  [ $n -gt 1 ] && [ $((SECONDS - s)) -gt "$longest" ] && longest=$((SECONDS - s))
  [ -f "$out/$name.json" ] && runs+=("$name")
done
# ncu: one launch each of the default and mcast at d = 128 N = 1k: call A's L2 counters and the L2 request coalescer's
# (the lead, 21:50: programmatic = multicast, hardware = identical requests of one GPC's SMs close together), only the
# names this ncu knows (queried first, so that one unknown name cannot void the step); its CSV names the grid too.
want="lts__t_sectors.sum lts__t_sectors_srcunit_tex_op_read.sum l1tex__m_xbar2l1tex_read_sectors.sum
gpu__time_duration.sum dram__bytes_read.sum lts__t_sectors_srcunit_ltcfabric.sum lrc__lts2lrc_sectors_op_read.sum
lrc__xbar2gpc_sectors_op_read.sum lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum
lrc__request_sectors_op_read_coalescing_achieved_type_programmatic.sum"
metrics=""
if [ $((budget - (SECONDS - t0))) -ge 10 ]; then
  timeout 5 ncu --query-metrics --chip gh100 >"$out/ncu-query.txt" 2>&1
  for m in $want; do b=${m%.*}; grep -q "^$b " "$out/ncu-query.txt" && metrics="$metrics${metrics:+,}$m"; done
fi
[ -n "$metrics" ] || metrics=lts__t_sectors.sum,lts__t_sectors_srcunit_tex_op_read.sum,l1tex__m_xbar2l1tex_read_sectors.sum,gpu__time_duration.sum
for v in $(echo "$words" | tr ' ' '\n' | sort -u); do
  [ $((budget - (SECONDS - t0))) -lt 6 ] && { summary+=("ncu-$v skipped (t=$((SECONDS - t0))s)"); continue; }
  FB_SM90_FWD_PROBE=${v#default} step ncu-$v 8 ncu --csv --metrics "$metrics" -k 'regex:flash_sm90_fwd' -c 1 \
    "$build/flashbench" run $spec --filter "$one" --kernels flash-sm90 --no-ceilings -q --warmup 1 --reps 1 \
    --warmup-time 0
done
# Clocks: each alone ~1.5 s at d = 128 N = 1k, nvidia-smi every 50 ms (as results/h200/s16/calls/job-clock16.sh).
: >"$out/windows.txt"
if [ $((budget - (SECONDS - t0))) -ge 6 ]; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv,nounits -lms 50 >"$out/smi.csv" 2>&1 &
  smi=$!
  for v in $(echo "$words" | tr ' ' '\n' | sort -u); do
    [ $((budget - (SECONDS - t0))) -lt 3 ] && break
    echo "clock-$v start $(date +%s.%N)" >>"$out/windows.txt"
    FB_SM90_FWD_PROBE=${v#default} step clock-$v 5 "$build/flashbench" run $spec --filter "$one" \
      --kernels flash-sm90 --no-ceilings -q --min-time 1.5 --max-time 1.8 -o "$out/clock-$v.json"
    echo "clock-$v end $(date +%s.%N)" >>"$out/windows.txt"
  done
  kill $smi 2>/dev/null
fi
python3 - "$out" "${runs[@]}" <<'PY' | tee "$out/table.txt"
import csv, glob, json, math, os, statistics, sys
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
defaults = [n for n in names if n.endswith("-default")]
probes = [n for n in names if n.endswith("-mcast")]
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
    if (n + 127) // 128 % 2:
        return "d128 odd tiles"  # N = 1100: 9 query tiles, the last pair's second one empty
    return "d128 N<=2k" if n <= 2048 else "d128 N>2k"
def cell(x, w=7):
    return f"{x:>{w - 1}.3f}x" if x == x else f"{'-':>{w}}"
try:
    tests = open(os.path.join(out, "tests-rc.txt")).read().strip()
    tail = open(os.path.join(out, "tests-mcast.log")).read().strip().splitlines()[-1:]
except OSError:
    tests, tail = "tests-mcast: no log", []
print(f"GPU tests '[sm90fwd]' under mcast: {' '.join(tests.split())} {'PASSED' if tests.split()[1:2] == ['rc=0'] else 'FAILED'};"
      f" {' '.join(tail)}")
print("flash-sm90 forward, default vs mcast (K/V multicast in 2-block clusters, non-causal); dflt/cudnn TFLOP/s from")
print("the first default run; drift = last default run's ratio / first's; each reading (mcast / cudnn) / (default /")
print("cudnn), same-process ratios, the default runs before and after averaged; mean = geometric mean of the")
print("readings; '-' = not run, failed or not verified")
print(f'{"case":38} {"dflt":>5} {"cudnn":>5} {"d/cud":>6} {"drift":>6} '
      + " ".join(f"{'mc ' + r.split('-')[0]:>7}" for r in probes) + f' {"mean":>7}')
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
print("geomeans of mcast / default over all readings:")
for c, x in logs.items():
    print(f"  {c:15} {gmean(x):.3f}x ({len([y for y in x if y == y])} readings)")
low = [k.removesuffix('-fwd') for k, m in means.items() if m == m and m < 0.99 and "-causal" not in k]
print("non-causal rows with mean < 0.990x: " + (", ".join(low) if low else "none"))
print("flash-sm90 rows not ok or not verified: " + ("; ".join(bad) if bad else "none"))
print("\nncu, one launch each, d = 128 bf16 non-causal N = 1k (b16-h16); call A: default 36.7M tex read sectors,")
print("cudnn 18.5M; both 35.65M xbar2l1tex; model for mcast: ~19M tex read, xbar2l1tex unchanged")
vals = {}
for p in sorted(glob.glob(os.path.join(out, "ncu-default.log")) + glob.glob(os.path.join(out, "ncu-mcast.log"))):
    tag = os.path.basename(p)[4:-4]
    for r in csv.reader(open(p)):
        if len(r) > 14 and r[0].strip('"').isdigit():
            vals.setdefault(r[12], {})[tag] = r[14]
            vals.setdefault("(grid, block)", {})[tag] = f"{r[8]} {r[7]}"
tags = ["default", "mcast"]
print(f"{'metric':70s} " + " ".join(f"{t:>26s}" for t in tags) + f" {'mcast/dflt':>10s}")
for m, v in sorted(vals.items()):
    try:
        q = float(v["mcast"].replace(",", "")) / float(v["default"].replace(",", ""))
    except (KeyError, ValueError, ZeroDivisionError):
        q = nan
    print(f"{m:70s} " + " ".join(f"{v.get(t, '-'):>26s}" for t in tags) + f" {q:>10.3f}")
print("\nclocks: each alone ~1.5 s at d = 128 N = 1k; medians of the nvidia-smi samples inside the run (first 0.7 s"
      " dropped)")
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
for line in open(os.path.join(out, "windows.txt")):
    p = line.split()
    if len(p) >= 3:
        win.setdefault(p[0], {})[p[1]] = float(p[2])
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
