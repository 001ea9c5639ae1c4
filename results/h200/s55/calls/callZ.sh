#!/usr/bin/env bash
# Session 55, call Z (one Hopper GPU; no rule, a diagnostic after call Y): on the short d = 128 non-causal bf16
# forwards PyTorch's cuDNN read 0.92-0.98x the in-binary cuDNN's time (the same kernel) under both the busy and the
# self hold (call Y). Is it the forward's output set? peers.py times the forward as inference by default (no_grad: its
# graph has no Stats, the row log-sum-exp that flash-sm90 and the in-binary cudnn always write); --fwd-training times
# it with the LSE. Six rows (16k tokens, 16 and 8 heads, N = 512 / 1024 / 2048), flashbench
# (flash-sm90, the in-binary cudnn) and peers.py's torch-cudnn as inference and as training under the busy and the
# self holds, two interleaved rounds.
set -uo pipefail
export DEADLINE=${DEADLINE:-240}
source scripts/call_step.sh
call_begin $OUT/Z
spec=$R/z-short.json
echo '{"name": "z-short", "seq": [512, 1024, 2048], "tokens": 16384, "heads": [16, 8], "head_dim": [128],
  "dtype": ["bf16"], "causal": [false], "pass": ["fwd"], "kernels": ["flash-sm90", "cudnn"], "warmup": 5, "reps": 20,
  "seed": 42, "verify": true}' > $spec
$fb run $spec --list > $R/list.txt 2>&1 || { echo "callZ: the spec is refused:"; cat $R/list.txt; }
smi_start
for r in 1 2; do
  order=(fb busy-inf busy-train self-train)
  ((r % 2 == 0)) && order=(self-train busy-train busy-inf fb)
  for v in "${order[@]}"; do
    case $v in
      fb) step fb-$r 40 $fb run $spec -q -o $R/fb-$r.json ;;
      busy-inf) step $v-$r 40 python3 scripts/peers.py $spec --backends cudnn -o $R/$v-$r.json ;;
      busy-train) step $v-$r 40 python3 scripts/peers.py $spec --backends cudnn --fwd-training -o $R/$v-$r.json ;;
      self-train) step $v-$r 40 python3 scripts/peers.py $spec --backends cudnn --fwd-training --self-hold \
        -o $R/$v-$r.json ;;
    esac
  done
done
smi_stop
python3 - $R <<'PY' | tee $R/table.txt
import json, os, sys
R = sys.argv[1]
def load(f):
    try:
        return {(r["kernel"], r["key"]): r for r in json.load(open(os.path.join(R, f)))["results"] if r["status"] == "ok"}
    except (OSError, ValueError, KeyError):
        return {}
sides = ["busy-inf", "busy-train", "self-train"]
print(f"{'row':40s} round  flash-sm90  cudnn   " + "  ".join(f"{s:>10s}" for s in sides) + "   (torch-cudnn / cudnn)")
for r in (1, 2):
    fb = load(f"fb-{r}.json")
    peers = {s: load(f"{s}-{r}.json") for s in sides}
    for (kern, key), rec in sorted(fb.items()):
        if kern != "cudnn":
            continue
        c = rec["time_ms"]["median"]
        f = fb.get(("flash-sm90", key), {}).get("time_ms", {}).get("median", float("nan"))
        cells = []
        for s in sides:
            p = peers[s].get(("torch-cudnn", key))
            cells.append(f"{p['time_ms']['median'] / c:10.3f}" if p else f"{'-':>10s}")
        v = "" if rec.get("verified") is True else "  (cudnn not verified)"
        print(f"{key:40s} {r:5d}  {f:10.4f}  {c:.4f}  " + "  ".join(cells) + v)
PY
call_end Z
