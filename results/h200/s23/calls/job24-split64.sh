#!/usr/bin/env bash
# Prepared in session 23 for session 24 (issue 13; UNMEASURED): does session 23's head-split rule for non-causal
# passes (the model's fastest split, near_best 0; flash_sm90_bwd.cu head_split(), d = 128 since session 23) pay at
# d = 64 too? Host words only, no new code: FB_SM90_BWD_SPLIT=s forces s subsets (the same kernels a rule returning s
# would run). Five d = 64 bf16 non-causal GQA shapes no config names where the default's choice (the largest split
# within 5% of the fastest) and the fastest differ (results/h200/s23/calls/split64-*.json; default -> fastest:
# 16 / 2 b3 N = 4096 4 -> 2, 32 / 4 b2 N = 3000 4 -> 2, 64 / 8 b1 N = 3000 4 -> 2, 16 / 2 b1 N = 6000 8 -> 4, 12 / 2
# b6 N = 6000 6 -> 3), two rounds (default, forced fastest, torch-cudnn per shape in turn), every row verified.
# Rule (written before any run): extend the rule to d = 64 (drop `p.head_dim == 128` from the near_best line) if the
# forced-fastest time is >= 1.02x the default's in geomean over the five shapes, every shape >= 0.99x in both rounds.
# Prediction: +2-5% (the model's wave counts; at d = 128 call E read above its prediction).
# Usage on the device: BUILD=<dir with flashbench> OUTDIR=<dir> bash results/h200/s23/calls/job24-split64.sh (~70 s).
set -uo pipefail
R=${OUTDIR:?}/split64; mkdir -p $R; fb=${BUILD:?}/flashbench; export DEADLINE=${DEADLINE:-150}
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {  # step NAME MAX_SECONDS CMD...: skipped when under MAX/2 is left
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt $(( max / 2 )) ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; timeout -k 3 $max "$@" > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"
}
c=results/h200/s23/calls
declare -A fastest=([16x2]=2 [32x4]=2 [64x8]=2 [16x2b1]=4 [12x2]=3)
for r in 1 2; do
  for s in 16x2 32x4 64x8 16x2b1 12x2; do
    step def-$s-$r 25 $fb run $c/split64-$s.json --no-ceilings -q -o $R/def-$s-$r.json
    step fast-$s-$r 25 env FB_SM90_BWD_SPLIT=${fastest[$s]} $fb run $c/split64-$s.json --no-ceilings -q -o $R/fast-$s-$r.json
    step peers-$s-$r 40 python3 scripts/peers.py $c/split64-$s.json --backends cudnn -o $R/peers-$s-$r.json
  done
done
python3 - $R <<'PY' | tee $R/table.txt
import json, math, os, sys
R = sys.argv[1]
def load(n):
    try:
        d = json.load(open(os.path.join(R, n)))
    except (OSError, ValueError):
        return {}
    return {x["key"]: x["time_ms"]["median"] for x in d["results"]
            if x.get("status") == "ok" and x.get("verified") is not False}
print("d = 64 bf16 non-causal backward, median ms: default, forced fastest split, default / fastest; torch-cudnn / fastest")
reads = []
for s in ("16x2", "32x4", "64x8", "16x2b1", "12x2"):
    rows = {}
    for r in "12":
        d, f, p = load(f"def-{s}-{r}.json"), load(f"fast-{s}-{r}.json"), load(f"peers-{s}-{r}.json")
        for k in f:
            if k in d:
                rows.setdefault(k, []).append((d[k], f[k], p.get(k)))
    for k, v in rows.items():
        print(f"{k:40} " + "   ".join(f"{a:.3f} {b:.3f} {a / b:.3f}x" + (f" c{c / b:.3f}" if c else "") for a, b, c in v))
        reads.append([a / b for a, b, _ in v])
if reads:
    g = math.exp(sum(math.log(x) for v in reads for x in v) / sum(len(v) for v in reads))
    ok = len(reads) == 5 and g >= 1.02 and all(len(v) == 2 and min(v) >= 0.99 for v in reads)
    print(f"fastest / default geomean {g:.3f}x over {len(reads)} shapes; rule (>= 1.02x, each >= 0.99x in both rounds): "
          f"{'MET' if ok else 'NOT MET'}")
PY
echo "done t=$((SECONDS-t0))"
