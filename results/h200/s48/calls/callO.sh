#!/usr/bin/env bash
# Session 48, call O (one Hopper GPU; issue 13), on the binaries of commit.txt (call N's two rules met: fused and the
# forward's sub-wave pieces are the defaults). Two parts:
# 1. ncu on the H100 lead of session 47 (docs/perf-notes.md "Session 47"): flash-sm90's d = 64 causal backward at
#    N = 1024 takes 1.46x its H200 time, the in-binary cuDNN 1.07x. DRAM bytes read and written, L2 bytes and time of
#    every launch of one backward, ours and the in-binary cuDNN's, on the H100's worst rows of call M (d = 64 causal
#    N = 1024, d = 64 non-causal N = 4096, d = 128 non-causal N = 2048; bf16, the papers' 16k tokens).
# 2. callM.sh's first round under the new defaults (issue 13's grids beside PyTorch's SDPA) in the time left.
set -uo pipefail
export DEADLINE=${DEADLINE:-150}
source scripts/call_step.sh
call_begin $OUT/O
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
python3 - $R/ncu-spec.json <<'PY'
import json, sys
s = json.load(open("configs/issue13-h200.json"))
s.update({"name": "ncu48", "seq": [1024, 2048, 4096], "head_dim": [64, 128], "causal": [False, True],
          "kernels": ["flash-sm90", "cudnn"], "pass": ["bwd"], "warmup": 1, "reps": 1, "verify": False})
json.dump(s, open(sys.argv[1], "w"), indent=2)
PY
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
for c in 'n1024-d64-bf16-causal' 'n4096-d64-bf16-full' 'n2048-d128-bf16-full'; do
  for k in flash-sm90 cudnn; do
    step ncu-$k-$c 40 $ncu --clock-control none --metrics $m --csv $fb run $R/ncu-spec.json --filter "$c" \
      --kernels $k --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/ncu-$k-$c.json
  done
done
python3 - $R <<'PY' | tee $R/ncu-summary.txt
import csv, glob, io, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "ncu-*.log"))):
    text = open(f).read()
    start = text.find('"ID"')
    if start < 0:
        print(os.path.basename(f), "no ncu table"); continue
    rows = list(csv.DictReader(io.StringIO(text[start:])))
    kern = {}
    for r in rows:
        k = (r["ID"], r["Kernel Name"][:60])
        kern.setdefault(k, {})[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    print(os.path.basename(f)[4:-4])
    for (i, name), v in kern.items():
        if "flush" in name.lower() or "fill" in name.lower():
            continue
        print(f"  {name:60s} {v.get('gpu__time_duration.sum', 0) / 1e3:9.1f} us  rd {v.get('dram__bytes_read.sum', 0) / 2**20:8.1f} MiB"
              f"  wr {v.get('dram__bytes_write.sum', 0) / 2**20:8.1f} MiB  L2 {v.get('lts__t_bytes.sum', 0) / 2**20:9.1f} MiB"
              f"  sm {v.get('sm__throughput.avg.pct_of_peak_sustained_elapsed', 0):5.1f}%")
PY
call_end O
# 2: call M's steps under the defaults built, in what is left of the command's 600 s
DEADLINE=$((560 - SECONDS)) bash results/h200/s47/calls/callM.sh
