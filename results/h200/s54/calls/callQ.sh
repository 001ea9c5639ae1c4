#!/usr/bin/env bash
# Session 54, call Q (one Hopper GPU; issue 13; no rule, a diagnostic): is the short d = 128 forward's gap to cuDNN the
# last round's idle SMs? The papers' d = 128 grid is 2048 work tiles of 128 query rows at every N (15.5 rounds on 132
# SMs, run as 16); GQA's 8 heads at N = 1024 are 1024 (7.8 as 8). Each row here is timed beside a twin with 2112 tiles
# (16 rounds exactly: one more batch or head), flash-sm90 and the in-binary cudnn (flashbench) and torch-cudnn
# (peers.py, busy hold), two interleaved rounds. Prediction (docs/perf-notes.md, "Session 54", before the call): if the
# idle last round is the gap, flash-sm90 takes ~1.00x its time on the twin (same 16 rounds) where the cuDNNs take
# ~1.03x (3.1% more work), so torch-cudnn / flash-sm90 rises ~3% from each row to its twin; if not, the ratio holds.
set -uo pipefail
export DEADLINE=${DEADLINE:-200}
source scripts/call_step.sh
call_begin $OUT/Q
mkdir -p $R/specs
python3 - $R/specs <<'PY'
import json, sys
rows = [  # (name, batch, heads, seq): 2048 / 2112 tiles at N = 512, 1024, 2048
    ("n512-b32-h16", 32, 16, 512), ("n512-b33-h16", 33, 16, 512),
    ("n1024-b32-h8", 32, 8, 1024), ("n1024-b33-h8", 33, 8, 1024),
    ("n2048-b4-h32", 4, 32, 2048), ("n2048-b4-h33", 4, 33, 2048)]
for name, b, h, n in rows:
    json.dump({"name": "q-" + name, "seq": [n], "batch": [b], "heads": [h], "head_dim": [128], "dtype": ["bf16"],
               "causal": [False], "pass": ["fwd"], "kernels": ["flash-sm90", "cudnn"], "warmup": 5, "reps": 20,
               "seed": 42, "verify": True}, open(f"{sys.argv[1]}/q-{name}.json", "w"), indent=2)
PY
smi_start
for r in 1 2; do
  order=(fb peers)
  ((r % 2 == 0)) && order=(peers fb)
  for v in "${order[@]}"; do
    for s in $R/specs/q-*.json; do
      n=$(basename $s .json)
      case $v in
        fb) step fb-$n-$r 30 $fb run $s --no-ceilings -q -o $R/fb-$n-$r.json ;;
        peers) step peers-$n-$r 30 python3 scripts/peers.py $s --backends cudnn -o $R/peers-$n-$r.json ;;
      esac
    done
  done
done
smi_stop
python3 - $R <<'PY' | tee $R/table.txt
import json, math, os, sys
R = sys.argv[1]
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
def med(path, kernel):
    try:
        doc = json.load(open(path))
    except (OSError, ValueError):
        return None
    for r in doc.get("results", []):
        if r["kernel"] == kernel and r["status"] == "ok" and r.get("verified") is not False:
            return r["time_ms"]["median"]
    return None
names = sorted({f.rsplit("-", 1)[0][3:] for f in os.listdir(R) if f.startswith("fb-q-") and f.endswith(".json")})
t = {}
for n in names:
    for k, side in (("flash-sm90", "fb"), ("cudnn", "fb"), ("torch-cudnn", "peers")):
        xs = [med(f"{R}/{side}-{n}-{r}.json", k) for r in (1, 2)]
        t[(n, k)] = gm(xs) if all(xs) else None
print(f"{'row':18s} {'ours ms':>8s} {'cud914':>8s} {'torch':>8s} {'torch/ours':>10s} {'cud914/ours':>11s}")
for n in names:
    o, c, p = t[(n, "flash-sm90")], t[(n, "cudnn")], t[(n, "torch-cudnn")]
    f = lambda x: f"{x:8.4f}" if x else "       -"
    po, co = p / o if o and p else float("nan"), c / o if o and c else float("nan")
    print(f"{n:18s} {f(o)} {f(c)} {f(p)} {po:10.3f} {co:11.3f}")
print("twin / row time (2112 tiles / 2048; 1.031 = the work's ratio):")
for a, b in (("q-n512-b32-h16", "q-n512-b33-h16"), ("q-n1024-b32-h8", "q-n1024-b33-h8"),
             ("q-n2048-b4-h32", "q-n2048-b4-h33")):
    cells = []
    for k in ("flash-sm90", "cudnn", "torch-cudnn"):
        x, y = t.get((a, k)), t.get((b, k))
        cells.append(f"{k} {y / x:.3f}" if x and y else f"{k} -")
    print(f"  {a[2:]:14s} " + "  ".join(cells))
PY
call_end Q
