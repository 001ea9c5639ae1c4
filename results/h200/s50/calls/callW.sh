#!/usr/bin/env bash
# Session 50, call W (prepared for a later session; one Hopper GPU; issue 13; no rule: a lead). Which forward kernel
# PyTorch's cuDNN (9.19) runs where flash-sm90 trails torch-cudnn but not the in-binary cuDNN (9.14), and where its time
# goes. Session 49's call M on the H200 (results/h200/s49/M/): at the papers' d = 128 non-causal bf16 forward
# flash-sm90 reads 1.017-1.041x the in-binary cuDNN (every row) and 0.972-1.015x torch-cudnn (N = 512, 1024, 2048 and
# 16384 behind in both rounds), the in-binary cuDNN 0.943-0.985x torch-cudnn. cuDNN frontend v1.19 published the
# source of cuDNN's Hopper forward (knob_7_64x128x128 at d = 128, the name the in-binary 9.14 runs: session 48's call
# O); read on the CPU (results/sass/s50/) its unmasked K/V step issues 567 instructions a warp against our 528, with
# the same 16 HGMMA and 66 MUFU: not the leaner kernel. So this call asks what the step costs on the GPU: ncu (no clock control,
# one forward, cold L2 per launch) of torch-cudnn's launches (scripts/peers.py under ncu, cuDNN's kernels only)
# beside flash-sm90's and the in-binary cuDNN's (flashbench) on three bf16 rows of the papers' grid, d = 128
# non-causal N = 512, 1024, 16384, and the GQA grid's 8-head MHA row at N = 1024 (b16: half the papers' work tiles;
# 0.943x torch-cudnn in call M, the papers' 16-head row 0.979x: a cuDNN heuristic picking another kernel there?). Per launch: the kernel's name (its knob and tile), time, SM cycles and clock,
# warp instructions executed, registers a thread, grid, DRAM bytes, SM throughput. Reads: same name and instructions
# in 9.14 and 9.19 with 9.19 faster = the launch or clock, not the code; other instructions = a new kernel (its mix is
# the lead); ours with fewer instructions and more cycles = the issue order, not the count.
# Then the clocks under load (ncu times one launch; the chip runs power-limited at d = 128, session 16: 1.67 GHz
# against a 1.98 GHz boost): each of the three kernels timed alone at N = 16384 for ~3 s of reps (flashbench
# --min-time 3; peers.py with 800 reps) while nvidia-smi samples SM clock and power every 50 ms; the median clock and
# power of each window (samples over 250 W) beside its TFLOP/s. A kernel that does the same work at a higher clock
# under the same power cap spends less energy a FLOP: that would be the gap, not the schedule.
set -uo pipefail
export DEADLINE=${DEADLINE:-330}
source scripts/call_step.sh
call_begin $OUT/W
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
m=gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum
m=$m,launch__registers_per_thread,launch__grid_size,dram__bytes_read.sum,dram__bytes_write.sum
m=$m,sm__throughput.avg.pct_of_peak_sustained_elapsed
for c in n512 n1024 n16384 n1024h8; do
  python3 - $R/spec-$c.json $c <<'PY'
import json, sys
c = sys.argv[2]
if c.endswith("h8"):  # gqa-h200's 8-head MHA row at 16k tokens (b16 N = 1024): 0.943x torch-cudnn in call M
    s = json.load(open("configs/gqa-h200.json"))
    s.update({"seq": [1024], "heads": [8], "kv_heads": [8]})
else:  # the papers' setup: 16k tokens, model dim 2048 (16 heads at d = 128)
    s = json.load(open("configs/issue13-h200.json"))
    s.update({"seq": [int(c[1:])]})
s.update({"name": "ncu50w-" + c, "head_dim": [128], "dtype": ["bf16"], "causal": [False], "pass": ["fwd"],
          "kernels": ["flash-sm90", "cudnn"], "warmup": 0, "reps": 1, "verify": False})
json.dump(s, open(sys.argv[1], "w"), indent=2)
PY
  step ncu-torch-cudnn-$c 50 $ncu --clock-control none --kernel-name regex:'cudnn|sdpa' --metrics $m --csv \
    python3 scripts/peers.py $R/spec-$c.json --backends cudnn --no-launch-hold -o $R/ncu-torch-cudnn-$c.json
  for k in flash-sm90 cudnn; do
    step ncu-$k-$c 40 $ncu --clock-control none --kernel-name regex:'flash_sm90|cudnn|sdpa' --metrics $m --csv \
      $fb run $R/spec-$c.json --kernels $k --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/ncu-$k-$c.json
  done
done
python3 - $R <<'PY' | tee $R/ncu-summary.txt
import csv, glob, io, json, os, sys
# Per launch of each log: kernel name, then each metric as [value, unit] (times in us, bytes in MiB, the rest in
# ncu's units).
TIME = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
BYTES = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9}
out = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "ncu-*.log"))):
    name = os.path.basename(f)[4:-4]
    lines = open(f).read().splitlines()
    head = next((i for i, l in enumerate(lines) if l.startswith('"ID",')), None)
    if head is None:
        print(f"{name}: no table (see the log)")
        continue
    launches = {}
    for r in csv.DictReader(io.StringIO("\n".join(l for l in lines[head:] if not l.startswith("==")))):
        v, u = r["Metric Value"].replace(",", ""), r["Metric Unit"]
        try:
            v = float(v)
        except ValueError:
            continue
        if u in TIME:
            v, u = v * TIME[u], "us"
        elif u in BYTES:
            v, u = v * BYTES[u] / 2**20, "MiB"
        d = launches.setdefault(int(r["ID"]), {"kernel": r["Kernel Name"]})
        d[r["Metric Name"]] = [round(v, 3), u]
    out[name] = list(launches.values())
    print(name)
    for d in out[name]:
        print(f"  {d['kernel'][:96]}")
        print("    " + "  ".join(f"{k.split('__')[-1]}={v[0]:g} {v[1]}" for k, v in d.items() if k != "kernel"))
json.dump(out, open(os.path.join(sys.argv[1], "ncu-summary.json"), "w"), indent=1)
PY
# ---- clocks and power under a steady load, N = 16384 ----
python3 - $R/spec-n16384.json $R/spec-clk.json <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s.update({"name": "clk50w-n16384", "warmup": 5, "reps": 800})
json.dump(s, open(sys.argv[2], "w"), indent=2)
PY
clk() {  # NAME COMMAND...: the command under a 50 ms nvidia-smi sampler, into $R/clk-NAME.csv
  local name=$1
  shift
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv,noheader,nounits -lms 50 > $R/clk-$name.csv 2>&1 &
  local pid=$!
  step clk-$name 45 "$@"
  kill $pid 2>/dev/null
}
clk flash-sm90 $fb run $R/spec-clk.json --kernels flash-sm90 --min-time 3 --no-ceilings -q -o $R/clk-flash-sm90.json
clk cudnn $fb run $R/spec-clk.json --kernels cudnn --min-time 3 --no-ceilings -q -o $R/clk-cudnn.json
clk torch-cudnn python3 scripts/peers.py $R/spec-clk.json --backends cudnn -o $R/clk-torch-cudnn.json
python3 - $R <<'PY' | tee $R/clk-summary.txt
import json, os, statistics, sys
R = sys.argv[1]
print(f"{'kernel':12s} {'samples':>7s} {'SM MHz':>7s} {'W':>6s} {'TFLOP/s':>8s}  (medians of the samples over 250 W)")
for k in ("flash-sm90", "cudnn", "torch-cudnn"):
    rows = []
    for line in open(os.path.join(R, f"clk-{k}.csv")):
        f = [x.strip() for x in line.split(",")]
        try:
            rows.append((float(f[1]), float(f[2])))
        except (IndexError, ValueError):
            continue
    busy = [r for r in rows if r[1] > 250]
    tf = "-"
    try:
        for rec in json.load(open(os.path.join(R, f"clk-{k}.json")))["results"]:
            if rec.get("kernel") == k and rec.get("tflops") is not None:
                tf = f"{rec['tflops']:.1f}"
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if busy:
        print(f"{k:12s} {len(busy):7d} {statistics.median(r[0] for r in busy):7.0f} "
              f"{statistics.median(r[1] for r in busy):6.0f} {tf:>8s}")
    else:
        print(f"{k:12s} {len(busy):7d}       -      - {tf:>8s}")
PY
call_end W
