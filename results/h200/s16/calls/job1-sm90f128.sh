# Session 16 round 1, sm90f128 (issue 13; <= 55 s; env BUILD, OUTDIR): no kernel change and no probe word. A measurement
# of the one term of the d = 128 non-causal model (docs/perf-notes.md, flash-sm90 forward, "Session 16: d = 128
# non-causal at N <= 4k, where the time goes") that no earlier call isolated: what the launch's partial last round of
# work tiles costs, flash-sm90 beside the in-binary cudnn (both persistent: 132 blocks of 384 threads).
# 1. A staircase (configs/sm90f128-s16.json, bf16, d = 128, non-causal, MHA, every row verified), three series whose rows
#    differ in work by 3-10% but run the same number of rounds of 132 work tiles, shapes no other config names (but
#    b32-h16 N = 512, issue 13's row, the middle of its series):
#      N = 1k, 8 heads:  b30 / b31 / b32 / b33 = 1920 / 1984 / 2048 / 2112 tiles = 14.55 / 15.03 / 15.52 / 16.00 rounds
#      N = 512, 16 heads: b31 / b32 / b33 = 1984 / 2048 / 2112 tiles (the same counts, 4 K/V tiles a work tile)
#      N = 4k, batch 1:  h29 / h32 / h33 = 928 / 1024 / 1056 tiles = 7.03 / 7.76 / 8.00 rounds (32 K/V tiles a tile)
#    Timed three times (runs 1, 2, 3; the ncu steps between 2 and 3), each run flash-sm90 and cudnn on every row.
# 2. Nsight Compute, one launch each (--clock-control none; SourceCounters with per-instruction stall reasons,
#    WarpStateStats, SchedulerStats, SpeedOfLight, MemoryWorkloadAnalysis, LaunchStats) of flash-sm90's shipped forward
#    and cudnn's at b16-h16 N = 1k (issue 13's row furthest behind the in-binary cudnn: 0.976x in the session-15 final;
#    session 13 profiled N = 512 and 16k only). Report, details CSV and SASS source CSV each (ncu-d128-n1024-<kernel>*).
# The table (OUTDIR/table.txt, last): per row tiles, rounds, each kernel's time (median of the runs' medians, us) and
# flash-sm90 / cudnn; per series each kernel's fill phi = (T(full) / T(sparse) - 1) / (W(full) / W(sparse) - 1), the
# row whose last round is full (16.00 / 8.00 rounds) against the one whose last round holds 4 tiles (15.03 / 7.03):
# phi = 0 when the partial last round costs a whole round (time by rounds), 1 when time follows work.
#   BUILD=<build dir> OUTDIR=<dir> bash results/h200/s16/calls/job1-sm90f128.sh
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
unset FB_SM90_FWD_PROBE
budget=55
t0=$SECONDS
rows='b(30|31|32|33)-h8-kv8-n1024|b(31|32|33)-h16-kv16-n512|b1-h(29|32|33)-kv(29|32|33)-n4096'
filter="^($rows)-d128-bf16-full-fwd\$"
summary=()
left() { echo $((budget - (SECONDS - t0))); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
runs=()
timed() {  # run name; needs 8 s
  local name=$1 s=$SECONDS
  local max; max=$(left)
  if [ "$max" -lt 8 ]; then summary+=("$name skipped (t=$((SECONDS - t0))s)"); return; fi
  [ "$max" -gt 15 ] && max=15
  timeout "$max" "$build/flashbench" run configs/sm90f128-s16.json --filter "$filter" --kernels flash-sm90,cudnn \
    --no-ceilings -q -o "$out/$name.json" >"$out/$name.log" 2>&1
  local rc=$?
  summary+=("$(printf '%-22s rc=%-3s %3ss  %s' "$name" "$rc" "$((SECONDS - s))" "$(tail -n 1 "$out/$name.log" | cut -c1-60)")")
  echo "$name rc=$rc $((SECONDS - s))s (t=$((SECONDS - t0))s)"
  [ -f "$out/$name.json" ] && runs+=("$name")
}
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
prof() {  # kernel; starts with 20 s left: the profile (~6 s in session 13's call B, at most 9) and its exports (at most 7)
  local k=$1 re s=$SECONDS
  case $k in flash-sm90) re=flash_sm90_fwd_kernel ;; cudnn) re=fprop ;; esac
  local tag=ncu-d128-n1024-$k
  if [ "$(left)" -lt 20 ]; then summary+=("$tag skipped (t=$((SECONDS - t0))s)"); return; fi
  timeout 9 "$ncu" --clock-control none --kernel-name regex:$re --launch-count 1 --section SourceCounters \
    --section WarpStateStats --section SchedulerStats --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section LaunchStats --import-source no -f -o "$out/$tag" \
    "$build/flashbench" run configs/issue13-h200.json --filter '^b16-h16-kv16-n1024-d128-bf16-full-fwd$' --kernels "$k" \
    --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q -o "$out/$tag-run.json" >"$out/$tag.log" 2>&1
  local rc=$?
  if [ -f "$out/$tag.ncu-rep" ]; then
    timeout 4 "$ncu" --import "$out/$tag.ncu-rep" --page source --print-source sass --csv >"$out/$tag-sass.csv" 2>&1
    timeout 3 "$ncu" --import "$out/$tag.ncu-rep" --page details --csv >"$out/$tag-details.csv" 2>&1
  fi
  summary+=("$(printf '%-22s rc=%-3s %3ss' "$tag" "$rc" "$((SECONDS - s))")")
  echo "$tag rc=$rc $((SECONDS - s))s (t=$((SECONDS - t0))s)"
}
timed 1-run
timed 2-run
prof flash-sm90
prof cudnn
timed 3-run
python3 - "$out" "${runs[@]}" <<'PY' | tee "$out/table.txt"
import csv, json, math, os, statistics, sys
out, names = sys.argv[1], sys.argv[2:]
nan = float("nan")
t = {}  # (key, kernel) -> [median us of each run] (ok and verified only)
case = {}
for n in names:
    try:
        results = json.load(open(os.path.join(out, n + ".json")))["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"({n}.json: {e})")
        continue
    for r in results:
        case[r["key"]] = r["case"]
        ok = r["status"] == "ok" and r.get("verified", True) is not False
        t.setdefault((r["key"], r["kernel"]), []).append(r["time_ms"]["median"] * 1e3 if ok else nan)
def med(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else nan
SMS, BR, BC = 132, 128, 128
def tiles(c):
    return c["batch"] * c["heads"] * -(-c["seq_q"] // BR)
series = [("N = 1k, h8", [f"b{b}-h8-kv8-n1024" for b in (30, 31, 32, 33)]),
          ("N = 512, h16", [f"b{b}-h16-kv16-n512" for b in (31, 32, 33)]),
          ("N = 4k, b1", [f"b1-h{h}-kv{h}-n4096" for h in (29, 32, 33)])]
print("bf16 d = 128 non-causal, 132 SMs, 128-row work tiles; times: median over the runs of each run's median (us);")
print("spread = (max - min) / median over the runs; work, model (rounds, a partial last one counted whole) and each")
print("kernel's time relative to the series' row whose last round holds 4 tiles (b31 / b31 / h29); '-' = not run")
print(f'{"case":22} {"tiles":>5} {"rounds":>6} {"sm90 us":>8} {"sprd":>5} {"cudnn us":>8} {"sprd":>5} {"sm90/cud":>8} '
      f'{"work":>6} {"model":>6} {"sm90":>6} {"cudnn":>6}')
phis = []
for title, keys in series:
    keys = [k + "-d128-bf16-full-fwd" for k in keys]
    base = keys[0] if title != "N = 1k, h8" else keys[1]  # the 15.03-round row for the 1k series
    cb = case.get(base)
    for k in keys:
        c = case.get(k)
        if not c:
            print(f"{k.removesuffix('-d128-bf16-full-fwd'):22} (not run)")
            continue
        n = tiles(c)
        a, b = t.get((k, "flash-sm90"), []), t.get((k, "cudnn"), [])
        ma, mb = med(a), med(b)
        sa = (max(a) - min(a)) / ma if len(a) > 1 and all(x == x for x in a) else nan
        sb = (max(b) - min(b)) / mb if len(b) > 1 and all(x == x for x in b) else nan
        nb = tiles(cb) if cb else nan
        work = n / nb
        model = math.ceil(n / SMS) / math.ceil(nb / SMS)
        ra = ma / med(t.get((base, "flash-sm90"), []))
        rb = mb / med(t.get((base, "cudnn"), []))
        print(f"{k.removesuffix('-d128-bf16-full-fwd'):22} {n:>5} {n / SMS:>6.2f} {ma:>8.1f} {sa:>5.3f} {mb:>8.1f} "
              f"{sb:>5.3f} {ma / mb:>7.3f}x {work:>6.3f} {model:>6.3f} {ra:>6.3f} {rb:>6.3f}")
    full = keys[-1]
    cf = case.get(full)
    if cb and cf:
        w = tiles(cf) / tiles(cb)
        for kern in ("flash-sm90", "cudnn"):
            r = med(t.get((full, kern), [])) / med(t.get((base, kern), []))
            phi = (r - 1) / (w - 1)
            phis.append((title, kern, phi, r, w))
print("fill phi = (T(full last round) / T(last round of 4 tiles) - 1) / (work ratio - 1): 0 = time by rounds (a partial")
print("last round costs a whole one), 1 = time by work; the tail's cost on a 15.5-round row is about (1 - phi) x 3.0%")
for title, kern, phi, r, w in phis:
    print(f"  {title:13} {kern:10} T ratio {r:.3f} for work {w:.3f}: phi {phi:5.2f}")
PY
echo "--- steps (total $((SECONDS - t0)) s)"
printf '%s\n' "${summary[@]}"
for k in flash-sm90 cudnn; do
  f="$out/ncu-d128-n1024-$k-details.csv"
  [ -f "$f" ] || continue
  echo "--- ncu $k (b16-h16 N = 1k)"
  python3 - "$f" <<'PY'
import csv, sys
keep = ("Duration", "Elapsed Cycles", "SM Active Cycles", "Grid Size", "Registers Per Thread", "Issue Slots Busy",
        "No Eligible", "Eligible Warps Per Scheduler", "Warp Cycles Per Issued Instruction", "L2 Hit Rate",
        "DRAM Throughput")
try:
    for r in csv.DictReader(open(sys.argv[1])):
        if r.get("Metric Name") in keep:
            print(f'  {r["Metric Name"]}: {r["Metric Value"]} {r["Metric Unit"]}')
except (OSError, csv.Error) as e:
    print(f"  ({e})")
PY
done
for k in flash-sm90 cudnn; do
  f="$out/ncu-d128-n1024-$k-sass.csv"
  [ -f "$f" ] || continue
  echo "--- ncu $k (b16-h16 N = 1k): warp samples by how often an instruction ran (work tiles 2048, x 8 consumer warps"
  echo "    = 16384 per tile; a K/V step class is a multiple of it), then the ten instructions with the most samples"
  python3 - "$f" <<'PY'
import collections, csv, sys
try:
    rows = list(csv.reader(open(sys.argv[1])))
    i = next(n for n, r in enumerate(rows) if "Address" in r and "Source" in r)
    hdr, data = rows[i], rows[i + 1:]
    ix = {h: n for n, h in enumerate(hdr)}
    stalls = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    ins = []
    for r in data:
        try:
            ins.append((r[ix["Address"]], r[ix["Source"]], int(r[ix["Warp Stall Sampling (All Samples)"]] or 0),
                        int(r[ix["Instructions Executed"]] or 0), {h: int(r[ix[h]] or 0) for h in stalls}))
        except (ValueError, IndexError):
            pass
    total = sum(x[2] for x in ins) or 1
    by, cnt = collections.Counter(), collections.Counter()
    for _, _, s, e, _ in ins:
        by[e] += s
        cnt[e] += 1
    print(f"  {total} samples")
    for e, s in by.most_common(8):
        print(f"  ran {e:>9}x: {cnt[e]:4d} instructions, {s:7d} samples ({s / total:5.1%})")
    for a, src, s, e, st in sorted(ins, key=lambda x: -x[2])[:10]:
        top = max(st.items(), key=lambda kv: kv[1]) if st else ("-", 0)
        print(f"  {a[-6:]} ran {e:>9}x {s:6d} ({s / total:5.1%}) {top[0]}  {src.strip()[:60]}")
except (OSError, StopIteration, csv.Error) as e:
    print(f"  ({e})")
PY
done
echo "--- table again"
cat "$out/table.txt"
