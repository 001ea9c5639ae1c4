#!/usr/bin/env bash
# Session 53, call Z (one Hopper GPU; issue 13; no rule: a lead). Call U's ncu read for the long GQA backward, where
# session 49's call M on an H100 left flash-sm90 behind torch-cudnn (nine rows at N >= 4096, 0.903-0.994x; 32 q / 8 kv
# heads non-causal N = 16384 0.903x). ncu (clocks free, one backward, cold L2 per launch) of torch-cudnn's launches
# (scripts/peers.py under ncu, cuDNN's kernels only) beside flash-sm90's and the in-binary cuDNN's on the GQA grid's
# rows (configs/gqa-h200.json: 16k tokens, d = 128, bf16): 32 / 8 heads non-causal and causal at N = 16384 and
# non-causal at N = 4096. Per launch: kernel name, time, DRAM bytes: whether the gap is kernel time (as at MHA, call U:
# ours shorter) or the harness.
set -uo pipefail
export DEADLINE=${DEADLINE:-150}
source scripts/call_step.sh
call_begin $OUT/Z
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
for c in n16384-full n16384-causal n4096-full; do
  python3 - $R/spec-$c.json $c <<'PY'
import json, sys
n, mask = sys.argv[2].split("-")
s = json.load(open("configs/gqa-h200.json"))
s.update({"name": "ncu53z-" + sys.argv[2], "seq": [int(n[1:])], "heads": [32], "kv_heads": [8],
          "causal": [mask == "causal"],
          "kernels": ["flash-sm90", "cudnn"], "pass": ["bwd"], "warmup": 0, "reps": 1, "verify": False})
json.dump(s, open(sys.argv[1], "w"), indent=2)
PY
  step ncu-torch-cudnn-$c 40 $ncu --clock-control none --kernel-name regex:'cudnn|sdpa|dot_do_o|convert_dq' \
    --metrics $m --csv python3 scripts/peers.py $R/spec-$c.json --backends cudnn --no-launch-hold \
    -o $R/ncu-torch-cudnn-$c.json
  for k in flash-sm90 cudnn; do
    step ncu-$k-$c 30 $ncu --clock-control none --kernel-name regex:'flash_sm90|cudnn|sdpa|dot_do_o|convert_dq|bwd' \
      --metrics $m --csv $fb run $R/spec-$c.json --kernels $k --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q \
      -o $R/ncu-$k-$c.json
  done
done
python3 - $R <<'PY' | tee $R/ncu-summary.txt
import csv, glob, io, os, statistics, sys
TIME = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
BYTES = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "ncu-*.log"))):
    lines = open(f).read().splitlines()
    head = next((i for i, l in enumerate(lines) if l.startswith('"ID",')), None)
    print(os.path.basename(f)[4:-4])
    if head is None:
        print("  no table (see the log)")
        continue
    by = {}
    for r in csv.DictReader(io.StringIO("\n".join(l for l in lines[head:] if not l.startswith("==")))):
        v, u = r["Metric Value"].replace(",", ""), r["Metric Unit"]
        try:
            v = float(v)
        except ValueError:
            continue
        v = v * TIME.get(u, 1.0) if u in TIME else v * BYTES.get(u, 1.0) / 2**20 if u in BYTES else v
        by.setdefault(r["Kernel Name"][:90], {}).setdefault(r["Metric Name"], []).append(v)
    for k, d in by.items():
        print(f"  {k:90s} n={len(d.get('gpu__time_duration.sum', []))}  " +
              "  ".join(f"{m.split('__')[-1]}={statistics.median(v):.1f}" for m, v in d.items()))
PY
call_end Z
