#!/usr/bin/env bash
# Session 54, call N (one Hopper GPU; no rule, a diagnostic after R3): in one process the first fresh inputs time
# PyTorch's cuDNN forward at 0.226 ms and every later set at 0.237-0.260 (32 x 8 heads N = 1024 d = 128 bf16). ncu on
# three trials of placement.py, the cuDNN forward's every launch (clocks free; L2 flushed before each replay, ncu's
# default):
# duration, DRAM bytes, L2 hit rate per trial (each trial's launches counted by placement.py's "calls").
# Prediction (docs/perf-notes.md, "Session 54"): if trial 0's launches are faster under ncu too, the two speeds ride on
# where the data lie in DRAM; if they are level, on the state between launches that ncu's flush and replay reset.
set -uo pipefail
export DEADLINE=${DEADLINE:-150}
source scripts/call_step.sh
call_begin $OUT/N
step ncu 120 ncu --clock-control none --print-units base --kernel-name regex:fprop --csv --metrics \
  gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct \
  python3 results/h200/s54/calls/placement.py 32 8 1024 128 3
python3 - $R/ncu.log <<'PY' | tee $R/summary.txt
import csv, re, statistics, sys
lines = open(sys.argv[1]).read().splitlines()
calls = [int(m.group(1)) for l in lines for m in [re.search(r"^trial \d+: .* calls (\d+)", l)] if m]
print("\n".join(l for l in lines if l.startswith("trial")))
rows = [r for r in csv.reader(l for l in lines if l.startswith('"'))]
head, data = rows[0], rows[1:]
ix = {k: head.index(k) for k in ("ID", "Metric Name", "Metric Value")}
per = {}
for r in data:
    try:
        per.setdefault(int(r[ix["ID"]]), {})[r[ix["Metric Name"]]] = float(r[ix["Metric Value"]].replace(",", ""))
    except ValueError:
        pass
ids = sorted(per)
print(f"{len(ids)} launches profiled; calls per trial {calls}")
start = 0
for t, n in enumerate(calls):
    launches = [per[i] for i in ids[start:start + n]]
    start += n
    if not launches:
        continue
    def med(k):
        xs = [x[k] for x in launches if k in x]
        return statistics.median(xs) if xs else float("nan")
    dur = [x["gpu__time_duration.sum"] for x in launches if "gpu__time_duration.sum" in x]
    print(f"trial {t}: {len(launches)} launches  duration median {med('gpu__time_duration.sum'):.0f} ns "
          f"(min {min(dur) if dur else float('nan'):.0f})  DRAM read {med('dram__bytes_read.sum'):.3g} B "
          f"write {med('dram__bytes_write.sum'):.3g} B  L2 hit {med('lts__t_sector_hit_rate.pct'):.1f}%")
PY
call_end N
