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
# beside flash-sm90's and the in-binary cuDNN's (flashbench) on three bf16 rows of the papers' grid: d = 128
# non-causal N = 512, 1024, 16384. Per launch: the kernel's name (its knob and tile), time, SM cycles and clock,
# warp instructions executed, registers a thread, grid, DRAM bytes, SM throughput. Reads: same name and instructions
# in 9.14 and 9.19 with 9.19 faster = the launch or clock, not the code; other instructions = a new kernel (its mix is
# the lead); ours with fewer instructions and more cycles = the issue order, not the count.
set -uo pipefail
export DEADLINE=${DEADLINE:-220}
source scripts/call_step.sh
call_begin $OUT/W
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
m=gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum
m=$m,launch__registers_per_thread,launch__grid_size,dram__bytes_read.sum,dram__bytes_write.sum
m=$m,sm__throughput.avg.pct_of_peak_sustained_elapsed
for c in n512 n1024 n16384; do
  python3 - $R/spec-$c.json $c <<'PY'
import json, sys
s = json.load(open("configs/issue13-h200.json"))  # the papers' setup: 16k tokens, model dim 2048 (16 heads at d = 128)
s.update({"name": "ncu50w-" + sys.argv[2], "seq": [int(sys.argv[2][1:])], "head_dim": [128], "dtype": ["bf16"],
          "causal": [False], "pass": ["fwd"], "kernels": ["flash-sm90", "cudnn"], "warmup": 0, "reps": 1,
          "verify": False})
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
call_end W
