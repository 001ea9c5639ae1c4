#!/usr/bin/env bash
# Session 63, call P (one Hopper GPU; issue 13; a diagnostic, no rule): the position effect of calls W1 / W2. In round
# 2 (ours timed first in each case) flash_sm90 read 178.3 us at the fp16 d = 64 N = 512 causal forward, the first case
# after the N = 16384 backwards, against 135.2 in round 1, steady over its reps, while the four other kernels of the
# case read as in round 1. The d = 64 half of the fp16 grid (24 cases: the same order and predecessors) in peers.py's
# loop with W's five kernels, four rounds (ours first, after, first, first), nvidia-smi every 50 ms beside and each
# log line stamped with the host's clock, so that a slow reading can be set against the SM clock at its time.
set -uo pipefail
export DEADLINE=${DEADLINE:-300}
source scripts/call_step.sh
call_begin $OUT/P
python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); s["name"] = "p-fp16-d64"; s["head_dim"] = [64]
json.dump(s, open(sys.argv[2], "w"))' configs/issue13-fp16-h200.json $R/spec.json
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv \
  -lms 50 > $R/smi50.csv 2>&1 &
smi=$!
cal=()
for k in flash_sm90 cudnn flash; do cal+=(--callable scripts/fb_torch.py:$k); done
r=0
for order in first after first first; do
  r=$((r + 1))
  o=()
  [ $order = first ] && o=(--callables-first)
  s=$SECONDS
  timeout 100 python3 -u scripts/peers.py $R/spec.json --backends cudnn,flash "${cal[@]}" --busy-hold "${o[@]}" \
    -o $R/peers-$r-$order.json 2>&1 | while IFS= read -r line; do echo "$(date +%H:%M:%S.%3N) $line"; done \
    > $R/peers-$r-$order.log
  echo "== round $r ($order) $((SECONDS - s))s"
done
kill $smi 2>/dev/null
python3 - $R <<'PY'
import glob, json, sys
R = sys.argv[1]
key = "b32-h32-kv32-n512-d64-fp16-causal-fwd"
for f in sorted(glob.glob(R + "/peers-*.json")):
    rs = {r["kernel"]: r["time_ms"]["median"] * 1e3 for r in json.load(open(f))["results"] if r["key"] == key}
    print(f.split("/")[-1], {k: round(v, 1) for k, v in rs.items()})
PY
call_end P
