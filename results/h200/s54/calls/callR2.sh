#!/usr/bin/env bash
# Session 54, call R2 (one Hopper GPU; no rule, a diagnostic after call R): R found PyTorch's cuDNN forward and
# flash-sm90 each bimodal between processes at the 32 x 8 heads N = 1024 d = 128 row (~0.23 and ~0.255 ms; flashbench's
# in-binary cuDNN in the same processes not), at 1980 MHz throughout, the same cuDNN kernel in every process. Is it
# where the buffers lie? placement.py: in one process, eight placements of fresh inputs, each timed as peers.py times
# (both rows of R); then flashbench four times more on each row.
set -uo pipefail
export DEADLINE=${DEADLINE:-150}
source scripts/call_step.sh
call_begin $OUT/R2
cp results/h100/s54/R/specs/*.json $R/ 2>/dev/null
step place-n1024 40 python3 results/h200/s54/calls/placement.py 32 8 1024 128 10
step place-n512 40 python3 results/h200/s54/calls/placement.py 32 16 512 128 10
for i in 1 2 3 4; do
  for s in r-b32-h8-n1024 r-b32-h16-n512; do
    step fb-$s-$i 20 $fb run $R/$s.json --no-ceilings -q -o $R/fb-$s-$i.json
  done
done
cat $R/place-*.log
python3 - $R <<'PY'
import glob, json, os, sys
for f in sorted(glob.glob(f"{sys.argv[1]}/fb-*.json")):
    for r in json.load(open(f)).get("results", []):
        if r["status"] == "ok":
            print(f"{os.path.basename(f):28s} {r['kernel']:12s} median {r['time_ms']['median']:.4f}")
PY
call_end R2
