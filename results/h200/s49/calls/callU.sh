#!/usr/bin/env bash
# Session 49, call U (prepared for a later session; one Hopper GPU; issue 13): which kernels PyTorch's cuDNN (9.19)
# runs where flash-sm90 trails torch-cudnn but not the in-binary cuDNN (9.14). Session 49's call M
# (results/h100/s49/M/, results/h200/s49/M/): at the d = 128 non-causal backward flash-sm90 reads 1.008x the in-binary
# cuDNN at N = 2048 on the H100 and 1.020x on the H200 (1.019-1.116x over N 512-16k), while the in-binary cuDNN reads
# 0.925x torch-cudnn there on the H100 (0.875x at N = 16384) and 0.925-0.984x over N 512-16k on the H200: the gap is to
# 9.19's backward, not to cuDNN's graph. ncu (no clock control, one backward, cold L2 per launch) of torch-cudnn's launches (scripts/peers.py
# under ncu, kernels of cuDNN only) beside flash-sm90's and the in-binary cuDNN's (flashbench) on four bf16 rows of the
# papers' grid: d = 128 non-causal N = 2048 and 16384, d = 64 non-causal N = 4096, d = 128 causal N = 4096. The names
# carry the kernels' tile shapes (knob_*_MxNxK); the times and DRAM bytes say where 9.19 gains. No rule: a lead.
set -uo pipefail
export DEADLINE=${DEADLINE:-200}
source scripts/call_step.sh
call_begin $OUT/U
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
python3 - $R/ncu-spec.json <<'PY'
import json, sys
s = json.load(open("configs/issue13-h200.json"))
s.update({"name": "ncu49u", "seq": [2048, 4096, 16384], "head_dim": [64, 128], "causal": [False, True],
          "kernels": ["flash-sm90", "cudnn"], "pass": ["bwd"], "warmup": 0, "reps": 1, "verify": False})
json.dump(s, open(sys.argv[1], "w"), indent=2)
PY
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
for c in n2048-d128-bf16-full n16384-d128-bf16-full n4096-d64-bf16-full n4096-d128-bf16-causal; do
  python3 - $R/ncu-spec.json $R/spec-$c.json $c <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
n, d, _, mask = sys.argv[3].split("-")
s.update({"name": "ncu49u-" + sys.argv[3], "seq": [int(n[1:])], "head_dim": [int(d[1:])], "causal": [mask == "causal"]})
json.dump(s, open(sys.argv[2], "w"), indent=2)
PY
  step ncu-torch-cudnn-$c 45 $ncu --clock-control none --kernel-name regex:'cudnn|sdpa|dot_do_o|convert_dq' \
    --metrics $m --csv python3 scripts/peers.py $R/spec-$c.json --backends cudnn --no-launch-hold \
    -o $R/ncu-torch-cudnn-$c.json
  for k in flash-sm90 cudnn; do
    step ncu-$k-$c 40 $ncu --clock-control none --kernel-name regex:'flash_sm90|cudnn|sdpa|dot_do_o|convert_dq' \
      --metrics $m --csv $fb run $R/spec-$c.json --kernels $k --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q \
      -o $R/ncu-$k-$c.json
  done
done
python3 - $R <<'PY' | tee $R/ncu-summary.txt
import csv, glob, io, os, sys
sys.path.insert(0, "scripts")
import ncu_bytes  # bytes in any unit ncu prints; times below
TIME = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "ncu-*.log"))):
    print(os.path.basename(f)[4:-4])
    text = open(f).read()
    try:
        launches = ncu_bytes.parse_ncu_csv(text)
    except ncu_bytes.NcuCsvError as e:
        print("  no table:", e)
        continue
    lines = text.splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith('"ID",'))
    us = {}
    for r in csv.DictReader(io.StringIO("\n".join(l for l in lines[head:] if not l.startswith("==")))):
        if r["Metric Name"] == "gpu__time_duration.sum":
            us[int(r["ID"])] = float(r["Metric Value"].replace(",", "")) * TIME.get(r["Metric Unit"], float("nan"))
    for l in launches:
        v = l["metrics"]
        print(f"  {l['kernel'][:100]:100s} {us.get(l['id'], float('nan')):9.1f} us"
              f"  rd {v[ncu_bytes.READ] / 2**20:7.1f} MiB  wr {v[ncu_bytes.WRITE] / 2**20:7.1f} MiB")
PY
call_end U
