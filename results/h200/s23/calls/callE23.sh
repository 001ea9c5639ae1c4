#!/usr/bin/env bash
# Session 23 call E (one H200; issue 13): session 23's head-split rule (flash_sm90_bwd.cu head_split(): non-causal
# d = 128 passes take the modelled fastest split, not the largest within 5% of it) against main's binary, on shapes
# out of call D's sample whose split the rule changes (results/h200/s23/calls/split-*.json: 64 q / 8 kv b2 N = 1536
# 4 -> 2, 32 / 4 b1 N = 6000 8 -> 2, 16 / 2 b3 N = 4096 8 -> 2, 12 / 2 b1 N = 4096 6 -> 2) and call C's 24 / 4 rows
# (split-24x4.json: 6 -> 3 at N = 2500, 6 -> 2 at 5120), bf16 non-causal backward, verified; torch-cudnn beside. Interleaved rounds
# (old, new, peers per spec; twice). Old: main b028416's flashbench (out/b.txz); new: out/new/flashbench.xz.
# Rule (written before the run): ship if new / old >= 1.02x in geomean over the four out-of-sample rows, every
# one of them >= 0.99x in both rounds. Prediction: +2-6% a row (the model: 2.0-4.4% fewer waves x unit time).
R=$OUT/E; mkdir -p $R; export DEADLINE=${DEADLINE:-170}
set -uo pipefail
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {  # step NAME MAX_SECONDS CMD...: skipped when under MAX/2 is left
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt $(( max / 2 )) ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; timeout -k 3 $max "$@" > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"
}
tar xJf out/b.txz
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
old=$src/build-dev/flashbench
xz -dc out/new/flashbench.xz > $src/build-dev/flashbench-new && chmod +x $src/build-dev/flashbench-new
new=$src/build-dev/flashbench-new
cat out/commit.txt > $R/commit.txt 2>/dev/null; cat out/new/commit.txt > $R/commit-new.txt 2>/dev/null
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 > $R/smi.csv 2>&1 &
smi=$!
c=results/h200/s23/calls
for r in 1 2; do
  for s in 64x8 32x4 16x2 12x2 24x4; do
    spec=$c/split-$s.json
    step old-$s-$r 25 $old run $spec --no-ceilings -q -o $R/old-$s-$r.json
    step new-$s-$r 25 $new run $spec --no-ceilings -q -o $R/new-$s-$r.json
    step peers-$s-$r 40 python3 scripts/peers.py $spec --backends cudnn -o $R/peers-$s-$r.json
  done
done
kill $smi
python3 - $R <<'PY' | tee $R/table.txt
import glob, json, math, os, sys
R = sys.argv[1]
def load(n):
    try:
        d = json.load(open(os.path.join(R, n)))
    except (OSError, ValueError):
        return {}
    return {x["key"]: x["time_ms"]["median"] for x in d["results"]
            if x.get("status") == "ok" and x.get("verified") is not False}
print("bf16 non-causal d = 128 backward, median ms; new / old = old time / new time; cudnn = torch-cudnn time / new time")
oos = []
for s in ("64x8", "32x4", "16x2", "12x2", "24x4"):
    rows = {}
    for r in "12":
        o, n, p = load(f"old-{s}-{r}.json"), load(f"new-{s}-{r}.json"), load(f"peers-{s}-{r}.json")
        for k in n:
            if k in o:
                rows.setdefault(k, []).append((o[k], n[k], p.get(k)))
    for k, v in sorted(rows.items()):
        cells = "   ".join(f"{a:.3f} {b:.3f} {a / b:.3f}x" + (f" c{c / b:.3f}" if c else "") for a, b, c in v)
        print(f"{k:40} {cells}")
        if s != "24x4":
            oos.append([a / b for a, b, _ in v])
if oos:
    g = math.exp(sum(math.log(x) for v in oos for x in v) / sum(len(v) for v in oos))
    ok = g >= 1.02 and all(min(v) >= 0.99 for v in oos) and all(len(v) == 2 for v in oos)
    print(f"out of sample: new / old geomean {g:.3f}x over {len(oos)} rows, lowest reading {min(min(v) for v in oos):.3f}x;"
          f" rule (>= 1.02x, every row >= 0.99x in both rounds): {'MET' if ok else 'NOT MET'}")
PY
tar czf $OUT/E.tgz -C $OUT E && rm -rf $R; echo "done t=$((SECONDS-t0))"
