#!/usr/bin/env bash
# Session 22 call H (one H200; issue 13, a measurement: no kernel changed): the fp16 d = 128 backward section of the
# issue-13 grid (results/h200/s22/calls/issue13-d128-bwd-fp16.json: 12 rows, 20 reps after 5 warm-ups, verified)
# through flashbench (flash-sm90) and scripts/peers.py (torch-cudnn), interleaved in two rounds (F, P, F, P) in one
# call, so that each row's ratio rests on two runs of each side instead of one. Main's final binaries, carried.
R=$OUT/H; mkdir -p $R; export DEADLINE=${DEADLINE:-120}
set -uo pipefail
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
tar xJf out/b.txz
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
fb=$src/build-dev/flashbench
cat out/commit.txt > $R/commit.txt 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi0.csv 2>&1
spec=results/h200/s22/calls/issue13-d128-bwd-fp16.json
for r in 1 2; do
  l=$(left); [ $l -gt 75 ] && l=75; [ $l -lt 15 ] && { echo "SKIP round $r"; break; }
  timeout -k 3 $l $fb run $spec -q -o $R/fb-$r.json > $R/fb-$r.log 2>&1; echo "== fb-$r rc=$? (t=$((SECONDS - t0)))"
  l=$(left); [ $l -gt 75 ] && l=75; [ $l -lt 15 ] && { echo "SKIP peers round $r"; break; }
  timeout -k 3 $l python3 scripts/peers.py $spec --backends cudnn -o $R/peers-$r.json > $R/peers-$r.log 2>&1
  echo "== peers-$r rc=$? (t=$((SECONDS - t0)))"
done
python3 - $R <<'PY' | tee $R/table.txt
import json, math, os, sys
R = sys.argv[1]
def load(n, kern):
    try:
        d = json.load(open(os.path.join(R, n)))
    except (OSError, ValueError):
        return {}
    out = {}
    for r in d["results"]:
        if r["kernel"] != kern:
            continue
        ok = r.get("status") == "ok" and r.get("verified") is not False
        t = r.get("time_ms", {})
        out[r["key"]] = t.get("median") if ok and isinstance(t, dict) else None
    return out
ours = [load(f"fb-{i}.json", "flash-sm90") for i in (1, 2)]
theirs = [load(f"peers-{i}.json", "torch-cudnn") for i in (1, 2)]
keys = sorted({k for d in ours + theirs for k in d}, key=lambda k: ("causal" in k, int(k.split("-n")[1].split("-")[0])))
print("fp16 d = 128 backward, 16k tokens: torch-cudnn median time / flash-sm90 median time (above 1: flash-sm90 faster);")
print("two rounds in one call, flashbench and peers.py interleaved (F1, P1, F2, P2); F20's single-run ratio beside")
f20 = {}
try:
    for line in open("results/h200/s20/final/sum-issue13-fp16-h200.txt"):
        parts = line.split()
        if len(parts) == 2 and parts[0].endswith("-bwd") and "-d128-" in parts[0]:
            f20.setdefault(parts[0], float(parts[1]))  # the first block of the file: vs torch-cudnn
except OSError:
    pass
print(f"{'case':42} {'ours ms':>8} {'cudnn ms':>8} {'round 1':>8} {'round 2':>8} {'both':>7} {'F20':>7}")
allr = []
for k in keys:
    o = [d.get(k) for d in ours]; t = [d.get(k) for d in theirs]
    rr = [t[i] / o[i] if o[i] and t[i] else float("nan") for i in range(2)]
    ov = [x for x in o if x]; tv = [x for x in t if x]
    both = (sum(tv) / len(tv)) / (sum(ov) / len(ov)) if ov and tv else float("nan")
    allr.append(both)
    print(f"{k:42} {sum(ov)/len(ov) if ov else float('nan'):8.4f} {sum(tv)/len(tv) if tv else float('nan'):8.4f} "
          f"{rr[0]:7.3f}x {rr[1]:7.3f}x {both:6.3f}x {f20.get(k, float('nan')):6.3f}x")
ok = [x for x in allr if x == x]
if ok:
    g = math.exp(sum(map(math.log, ok)) / len(ok))
    print(f"both rounds: {min(ok):.3f}-{max(ok):.3f}x, geomean {g:.3f}, >= 1.0 in {sum(x >= 1.0 for x in ok)} of {len(ok)}")
PY
tar czf $OUT/H.tgz -C $OUT H && rm -rf $R; echo "done t=$((SECONDS-t0))"
