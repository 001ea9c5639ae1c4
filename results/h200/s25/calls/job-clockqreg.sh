#!/usr/bin/env bash
# Session 25: flash-sm90's d = 128 forward (clockqreg.json, bf16 non-causal N = 1k) alone under --min-time 3, default,
# qreg, default, qreg, with nvidia-smi sampling SM clock, power, temperature and throttle reasons every 50 ms; the
# table gives each window's median clock and power (samples inside a run's window only). After session 16's
# job-clock128.sh.   FB=<flashbench> OUTDIR=<dir> bash job-clockqreg.sh
set -uo pipefail
fb=${FB:?}; out=${OUTDIR:?}; mkdir -p "$out"; out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd); spec=$here/clockqreg.json
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv,nounits -lms 50 > "$out/smi.csv" 2>&1 &
smi=$!
: > "$out/windows.txt"
n=0
for w in default qreg default qreg; do
  n=$((n + 1))
  echo "$n $w start $(date +%s.%N)" >> "$out/windows.txt"
  if [ $w = default ]; then env -u FB_SM90_FWD_PROBE timeout 20 "$fb" run "$spec" --no-ceilings -q --min-time 3 --max-time 4 -o "$out/$n-$w.json" > "$out/$n-$w.log" 2>&1
  else FB_SM90_FWD_PROBE=$w timeout 20 "$fb" run "$spec" --no-ceilings -q --min-time 3 --max-time 4 -o "$out/$n-$w.json" > "$out/$n-$w.log" 2>&1; fi
  echo "$n $w end $(date +%s.%N) rc=$?" >> "$out/windows.txt"
done
kill $smi 2>/dev/null
python3 - "$out" <<'PY' | tee "$out/table.txt"
import csv, json, os, statistics, sys
from datetime import datetime
out = sys.argv[1]
rows = []
for r in csv.reader(open(os.path.join(out, "smi.csv"))):
    try:
        t = datetime.strptime(r[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
        rows.append((t, float(r[1]), float(r[2]), float(r[3]), r[4].strip()))
    except (ValueError, IndexError):
        pass
win = {}
for line in open(os.path.join(out, "windows.txt")):
    p = line.split()
    win.setdefault((p[0], p[1]), {})[p[2]] = float(p[3])
print(f"{'run':16s} {'median us':>9s} {'reps':>5s} {'samples':>7s} {'SM MHz':>7s} {'W':>6s} {'C':>4s}  reasons")
for (n, k), w in win.items():
    try:
        r = json.load(open(os.path.join(out, f"{n}-{k}.json")))["results"][0]
        us, reps = 1000 * r["time_ms"]["median"], r["time_ms"].get("reps", "?")
    except Exception:
        us, reps = float("nan"), "?"
    s = [x for x in rows if w.get("start", 0) + 1.0 <= x[0] <= w.get("end", 0) - 0.2]
    if not s:
        print(f"{n + '-' + k:16s} {us:9.1f} {reps!s:>5s} {0:7d}")
        continue
    print(f"{n + '-' + k:16s} {us:9.1f} {reps!s:>5s} {len(s):7d} {statistics.median(x[1] for x in s):7.0f} "
          f"{statistics.median(x[2] for x in s):6.1f} {statistics.median(x[3] for x in s):4.0f}  "
          f"{sorted(set(x[4] for x in s))}")
PY
