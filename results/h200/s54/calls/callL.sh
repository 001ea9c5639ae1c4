#!/usr/bin/env bash
# Session 54, call L (prepared for a later session; one Hopper GPU, an H200 if one comes; no rule, a diagnostic after
# call C): on the H200, PyTorch's cuDNN at 32 x 8 heads N = 1024 d = 128 (bf16 forward) read 0.230-0.279 ms over three
# peers.py processes under the flush's write and 0.277-0.279 under FB_L2_FLUSH=clean, while flashbench timed the same
# cuDNN kernel at 0.250-0.257 under either. Which of peers.py's settings makes the difference: three processes each of
# peers.py under {busy, spin} hold x {write, clean} flush, interleaved with flashbench (flash-sm90, the in-binary cudnn)
# under each flush, and cudnn_kernels.py (the kernel's name and profiler time, then reps without any hold) once a round.
set -uo pipefail
export DEADLINE=${DEADLINE:-200}
source scripts/call_step.sh
call_begin $OUT/L
spec=$R/l-b32-h8-n1024.json
echo '{"name": "l-b32-h8-n1024", "seq": [1024], "batch": [32], "heads": [8], "head_dim": [128], "dtype": ["bf16"],
  "causal": [false], "pass": ["fwd"], "kernels": ["flash-sm90", "cudnn"], "warmup": 5, "reps": 20, "seed": 42,
  "verify": true}' > $spec
smi_start
for i in 1 2 3; do
  for f in write clean; do
    step fb-$f-$i 20 env FB_L2_FLUSH=$f $fb run $spec --no-ceilings -q -o $R/fb-$f-$i.json
    for h in busy spin; do
      step peers-$h-$f-$i 20 env FB_L2_FLUSH=$f python3 scripts/peers.py $spec --backends cudnn --$h-hold \
        -o $R/peers-$h-$f-$i.json
    done
  done
  step probe-$i 30 python3 results/h200/s54/calls/cudnn_kernels.py 32 8 1024 128
done
smi_stop
python3 - $R <<'PY' | tee $R/table.txt
import glob, json, os, sys
R = sys.argv[1]
rows = {}
for f in sorted(glob.glob(f"{R}/fb-*.json") + glob.glob(f"{R}/peers-*.json")):
    side = os.path.basename(f).rsplit("-", 1)[0]
    for r in json.load(open(f)).get("results", []):
        if r["status"] == "ok":
            rows.setdefault(f"{side} {r['kernel']}", []).append(r["time_ms"]["median"])
for k, v in sorted(rows.items()):
    print(f"{k:34s} " + " ".join(f"{x:.4f}" for x in v) + f"   spread {max(v) / min(v) - 1:.3f}")
PY
grep -h "^kernel\|^reps" $R/probe-*.log | cut -c1-140
call_end L
