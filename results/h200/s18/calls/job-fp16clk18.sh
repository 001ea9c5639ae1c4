# Session 18 (lead), call A: why our fp16 forward is ~5% slower than our bf16 at d = 128 non-causal while cuDNN's is
# level (F17: N = 1k ours 264.9 / 279.5 us, cudnn 258.2 / 259.5). Each kernel alone ~1.5 s at d = 128 N = 1k, bf16 then
# fp16 (flash-sm90, cudnn, flash-sm90, cudnn), nvidia-smi every 50 ms: clock and power at the 692 W cap; then ncu (one
# launch each, clocks locked): cycles, instructions, tensor-pipe activity, L2 and DRAM, for both kernels and dtypes.
# The question it answers: cycles (ours executes more / stalls more in fp16) or clock (ours draws more power in fp16).
#   BUILD=<build dir> OUTDIR=<dir> bash results/h200/s18/calls/job-fp16clk18.sh
set -uo pipefail
build=${BUILD:?}; out=${OUTDIR:?}; mkdir -p "$out"; out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd); spec=$here/clock18.json
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv,nounits -lms 50 > "$out/smi.csv" 2>&1 &
smi=$!
: > "$out/windows.txt"
for f in n1024-d128-bf16 n1024-d128-fp16; do
  for k in flash-sm90 cudnn flash-sm90 cudnn; do
    n=$(( $(wc -l < "$out/windows.txt") / 2 + 1 ))
    echo "$n $k-$f start $(date +%s.%N)" >> "$out/windows.txt"
    timeout 12 "$build/flashbench" run "$spec" --kernels $k --filter "$f-" --no-ceilings -q --min-time 1.5 --max-time 2 \
      -o "$out/$n-$k-$f.json" > "$out/$n-$k-$f.log" 2>&1
    echo "$n $k-$f end $(date +%s.%N) rc=$?" >> "$out/windows.txt"
  done
done
kill $smi 2>/dev/null
# ncu: L2 counters, only the metric names this ncu knows (queried first, so one unknown name cannot void the run)
want="lts__t_sectors.sum lts__t_requests.sum lts__t_sectors_op_read.sum lts__t_sectors_op_write.sum lts__t_sectors_op_atom.sum
lts__t_sectors_op_red.sum lts__t_sectors_srcunit_tex.sum lts__t_sectors_srcunit_ltcfabric.sum lts__t_sectors_srcunit_tex_op_read.sum
lts__t_sectors_srcunit_tex_op_write.sum lts__t_sectors_lookup_hit.sum lts__t_sectors_lookup_miss.sum lts__t_sector_hit_rate.pct
lts__throughput.avg.pct_of_peak_sustained_elapsed dram__bytes_read.sum dram__bytes_write.sum smsp__inst_executed.sum
sm__cycles_elapsed.avg.per_second sm__cycles_elapsed.avg sm__cycles_active.avg gpu__time_duration.sum
sm__inst_executed_pipe_tensor_op_gmma.sum sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active
sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active smsp__inst_executed_op_shared_ld.sum
smsp__sass_thread_inst_executed_op_conversion_pred_on.sum smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio l1tex__m_xbar2l1tex_read_sectors.sum l1tex__m_l1tex2xbar_write_sectors.sum"
ncu --query-metrics --chip gh100 > "$out/ncu-query.txt" 2>&1
have=""
for m in $want; do b=${m%.*}; b=${b%.avg}; grep -q "^$b " "$out/ncu-query.txt" && have="$have${have:+,}$m"; done
[ -n "$have" ] || have="gpu__time_duration.sum,lts__t_sectors.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum"
echo "metrics: $have" > "$out/ncu.log"
for f in n1024-d128-bf16 n1024-d128-fp16; do
  for k in flash-sm90 cudnn; do
    timeout 30 ncu --csv --metrics "$have" -k 'regex:flash_sm90_fwd|sdpa|fprop' -c 1 \
      "$build/flashbench" run "$spec" --kernels $k --filter "$f-" --no-ceilings -q --warmup 1 --reps 1 --warmup-time 0 \
      > "$out/ncu-$k-$f.csv" 2>> "$out/ncu.log"
    echo "ncu $k $f rc=$?" >> "$out/ncu.log"
  done
done
python3 - "$out" <<'PY' | tee "$out/table.txt"
import csv, glob, json, os, statistics, sys
from datetime import datetime
out = sys.argv[1]
rows = []
for r in csv.reader(open(os.path.join(out, "smi.csv"))):
    try:
        rows.append((datetime.strptime(r[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp(), float(r[1]), float(r[2]),
                     float(r[3]), r[4].strip()))
    except (ValueError, IndexError):
        pass
win = {}
for line in open(os.path.join(out, "windows.txt")):
    p = line.split()
    win.setdefault((int(p[0]), p[1]), {})[p[2]] = float(p[3])
print("(1) each kernel alone ~2 s; SM clock and power: medians of the samples inside the run (its first 0.7 s dropped)")
print(f"{'run':34s} {'median us':>9s} {'samples':>7s} {'SM MHz':>7s} {'W':>6s} {'C':>4s}  reasons")
for (n, name), w in sorted(win.items()):
    k, f = name.split("-", 1)[0], name
    us = float("nan")
    for j in glob.glob(os.path.join(out, f"{n}-*.json")):
        try:
            us = 1000 * json.load(open(j))["results"][0]["time_ms"]["median"]
        except Exception:
            pass
    s = [x for x in rows if w.get("start", 0) + 0.7 <= x[0] <= w.get("end", 0) - 0.2]
    if not s:
        print(f"{str(n) + ' ' + name:34s} {us:9.1f} {0:7d}"); continue
    print(f"{str(n) + ' ' + name:34s} {us:9.1f} {len(s):7d} {statistics.median(x[1] for x in s):7.0f} "
          f"{statistics.median(x[2] for x in s):6.1f} {statistics.median(x[3] for x in s):4.0f}  {sorted(set(x[4] for x in s))}")
print("\n(2) ncu (one launch each; ncu's default clock control)")
vals = {}
for p in sorted(glob.glob(os.path.join(out, "ncu-*.csv"))):
    tag = os.path.basename(p)[4:-4]
    for r in csv.reader(open(p)):
        if len(r) > 14 and r[0].strip('"').isdigit():
            vals.setdefault(r[12], {})[tag] = r[14]
tags = sorted({t for v in vals.values() for t in v})
print(f"{'metric':52s} " + " ".join(f"{t[-26:]:>26s}" for t in tags))
for m, v in sorted(vals.items()):
    print(f"{m:52s} " + " ".join(f"{v.get(t, '-'):>26s}" for t in tags))
PY
