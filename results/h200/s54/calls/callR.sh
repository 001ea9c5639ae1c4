#!/usr/bin/env bash
# Session 54, call R (one Hopper GPU; no rule, a diagnostic after call Q): call Q read torch-cudnn's median on the same
# row 8-9% apart between two peers.py processes (32 x 8 heads N = 1024 d = 128 bf16 forward: 0.2656 / 0.2428 ms;
# 32 x 16 N = 512: 0.1385 / 0.1490) while flashbench's in-binary cuDNN read within 0.5-2%. Does PyTorch's cuDNN launch
# different kernels in different processes, or the same kernels at different speeds? Four processes of
# cudnn_kernels.py (kernel names and times under the profiler, then 20 reps timed as peers.py times them) and four of
# peers.py on each of the two rows, interleaved with flashbench (flash-sm90, the in-binary cudnn).
set -uo pipefail
export DEADLINE=${DEADLINE:-200}
source scripts/call_step.sh
call_begin $OUT/R
mkdir -p $R/specs
for row in 32,8,1024 32,16,512; do
  IFS=, read -r b h n <<< "$row"
  echo "{\"name\": \"r-b$b-h$h-n$n\", \"seq\": [$n], \"batch\": [$b], \"heads\": [$h], \"head_dim\": [128],
    \"dtype\": [\"bf16\"], \"causal\": [false], \"pass\": [\"fwd\"], \"kernels\": [\"flash-sm90\", \"cudnn\"],
    \"warmup\": 5, \"reps\": 20, \"seed\": 42, \"verify\": true}" > $R/specs/r-b$b-h$h-n$n.json
done
smi_start
for i in 1 2 3 4; do
  for row in 32,8,1024 32,16,512; do
    IFS=, read -r b h n <<< "$row"
    s=r-b$b-h$h-n$n
    step probe-$s-$i 30 python3 results/h200/s54/calls/cudnn_kernels.py $b $h $n 128
    step peers-$s-$i 30 python3 scripts/peers.py $R/specs/$s.json --backends cudnn -o $R/peers-$s-$i.json
    step fb-$s-$i 20 $fb run $R/specs/$s.json --no-ceilings -q -o $R/fb-$s-$i.json
  done
done
smi_stop
for f in $R/probe-*.log; do echo "== $(basename $f .log)"; grep -E "^kernel|^reps" $f | cut -c1-150; done \
  | tee $R/probes.txt
python3 - $R <<'PY' | tee $R/table.txt
import glob, json, os, sys
R = sys.argv[1]
for f in sorted(glob.glob(f"{R}/peers-*.json") + glob.glob(f"{R}/fb-*.json")):
    for r in json.load(open(f)).get("results", []):
        if r["status"] == "ok":
            t = r["time_ms"]
            print(f"{os.path.basename(f):28s} {r['kernel']:12s} median {t['median']:.4f} min {t['min']:.4f}")
PY
call_end R
