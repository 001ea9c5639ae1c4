# Session 13 call B (round 2, data for session 14; no default changes), sm90fwd (~35 s; env BUILD, OUTDIR):
# 1. Nsight Compute, one launch each (--clock-control none; SourceCounters with per-instruction stall reasons,
#    WarpStateStats, SchedulerStats, SpeedOfLight, MemoryWorkloadAnalysis, LaunchStats): flash-sm90's shipped
#    d = 128 non-causal bf16 forward at N = 512 (b32 h16, 16k tokens: 0.972x the in-binary cudnn in call A, the
#    d = 128 row furthest behind), cudnn's forward on that shape, then flash-sm90 and cudnn at N = 16384 (b1 h16:
#    1.024x, ahead), so that what changes with N is seen in both kernels. Report, details page CSV and SASS
#    source page CSV each (ncu-d128-n<N>-<kernel>*). Call A's kvpf said the small-N gap is not K/V arrival;
#    sessions 8-12 took the boundary's instructions apart; no d = 128 profile at N <= 1024 exists.
# 2. While time is left (BUDGET 38 s): the existing runtime probe words l2hint (Q evict-first, K/V evict-last) and
#    nol2small (L2 plane groups of a third of L2, not a sixth) at d = 128 non-causal N = 512/1k/2k: ship, l2hint,
#    nol2small, ship, each beside cudnn and verified; same-process ratios in table.txt (printed last). No new kernel
#    code: both words' kernels and tests are session 11's / session 8's (tests passed under l2hint in s11's call A).
#   BUILD=<build dir> OUTDIR=<dir> bash results/h200/s13/calls/job2-sm90fwd.sh
mkdir -p "$OUTDIR"
budget=38
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
prof() {  # kernel, N, case key
  local k=$1 n=$2 key=$3 re
  case $k in flash-sm90) re=flash_sm90_fwd_kernel ;; cudnn) re=fprop ;; esac
  [ $((SECONDS + 7)) -le 30 ] || { echo "ncu-$k-n$n skipped (t=${SECONDS}s)"; return; }
  local tag=ncu-d128-n$n-$k
  timeout 9 "$ncu" --clock-control none --kernel-name regex:$re --launch-count 1 --section SourceCounters \
    --section WarpStateStats --section SchedulerStats --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section LaunchStats --import-source no -f -o "$OUTDIR/$tag" \
    "$BUILD/flashbench" run configs/fwd-bf16-h200.json --filter "^$key\$" --kernels $k \
    --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q -o "$OUTDIR/$tag-run.json" > "$OUTDIR/$tag.log" 2>&1
  echo "$tag rc=$? t=${SECONDS}s"
  [ -f "$OUTDIR/$tag.ncu-rep" ] || return
  timeout 4 "$ncu" --import "$OUTDIR/$tag.ncu-rep" --page source --print-source sass --csv > "$OUTDIR/$tag-sass.csv" 2>&1
  timeout 3 "$ncu" --import "$OUTDIR/$tag.ncu-rep" --page details --csv > "$OUTDIR/$tag-details.csv" 2>&1
  python3 - "$OUTDIR/$tag-details.csv" <<'PY'
import csv, sys
keep = ("Duration", "Elapsed Cycles", "SM Active Cycles", "Grid Size", "Registers Per Thread",
        "Dynamic Shared Memory Per Block", "Issue Slots Busy", "No Eligible", "Eligible Warps Per Scheduler",
        "Warp Cycles Per Issued Instruction", "L2 Hit Rate", "DRAM Throughput")
try:
    for r in csv.DictReader(open(sys.argv[1])):
        if r.get("Metric Name") in keep:
            print(f'  {r["Metric Name"]}: {r["Metric Value"]} {r["Metric Unit"]}')
except (OSError, csv.Error) as e:
    print(f"  ({e})")
PY
}
prof flash-sm90 512 b32-h16-kv16-n512-d128-bf16-full-fwd
prof cudnn 512 b32-h16-kv16-n512-d128-bf16-full-fwd
prof flash-sm90 16384 b1-h16-kv16-n16384-d128-bf16-full-fwd
prof cudnn 16384 b1-h16-kv16-n16384-d128-bf16-full-fwd

ran=()
for v in ship l2hint nol2small ship; do
  name=$v; [ "$v" = ship ] && { name=ship-first; [ ${#ran[@]} -gt 0 ] && name=ship-last; }
  if [ "$name" != ship-last ] && [ $((SECONDS + 4)) -gt $budget ]; then echo "$name skipped (t=${SECONDS}s)"; continue; fi
  [ "$name" = ship-last ] && [ $((SECONDS + 3)) -gt 40 ] && { echo "$name skipped (t=${SECONDS}s)"; continue; }
  FB_SM90_FWD_PROBE=${v#ship} timeout 6 "$BUILD/flashbench" run configs/fwd-bf16-h200.json \
    --filter 'n(512|1024|2048)-d128-bf16-full' --kernels flash-sm90,cudnn --no-ceilings -q --warmup 3 --reps 10 \
    -o "$OUTDIR/$name.json" > "$OUTDIR/$name.log" 2>&1
  echo "$name rc=$? t=${SECONDS}s"; ran+=("$name")
done
python3 - "$OUTDIR" "${ran[@]}" <<'PY' | tee "$OUTDIR/table.txt"
import json, math, os, sys
out, names = sys.argv[1], sys.argv[2:]
nan = float("nan")
tf, keys = {}, []
for n in names:
    try:
        for r in json.load(open(os.path.join(out, n + ".json")))["results"]:
            c = r["case"]
            key = (c["head_dim"], "causal" if c["causal"] else "full", c.get("seq_q", c.get("seq")))
            ok = r["status"] == "ok" and r.get("verified", True) is not False
            tf.setdefault((n, key), {})[r["kernel"]] = r["tflops"] if ok else nan
            keys += [key] if key not in keys else []
    except (OSError, ValueError, KeyError) as e:
        print(f"({n}: {e})")
def ratio(n, key):
    v = tf.get((n, key), {})
    a, b = v.get("flash-sm90", nan), v.get("cudnn", nan)
    return a / b if a == a and b == b and b else nan
var = [n for n in names if not n.startswith("ship")]
print("bf16, round 2 (data for session 14): ship/cudnn of the first shipped run; drift = last / first; variant")
print("columns (variant / cudnn) / (ship / cudnn), ship's the geometric mean of both shipped runs; '-' = not run")
print(f'{"d":>3} {"mask":6} {"N":>5} {"ship":>5} {"cudnn":>5} {"s/cud":>6} {"drift":>6} ' + " ".join(f"{c:>10}" for c in var))
for key in sorted(keys):
    r1, r2 = ratio("ship-first", key), ratio("ship-last", key)
    base = math.sqrt(r1 * r2) if r1 == r1 and r2 == r2 else r1
    first = tf.get(("ship-first", key), {})
    cells = [ratio(c, key) / base for c in var]
    print(f"{key[0]:>3} {key[1]:6} {key[2]:>5} {first.get('flash-sm90', nan):>5.0f} {first.get('cudnn', nan):>5.0f} "
          f"{r1:>5.3f}x {r2 / r1 if r1 == r1 else nan:>5.3f}x " + " ".join(f"{x:>9.3f}x" if x == x else f"{'-':>10}" for x in cells))
PY
echo "--- done t=${SECONDS}s"
