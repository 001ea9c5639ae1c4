#!/usr/bin/env bash
# Session 19 call B (one H200): int19b (main with pmajor64 the d = 64 default + the helpers' probe branches) built on
# the device for sm_90a. The helpers' jobs (job1-sm90fwd.sh, job1-flashfwd.sh, job1-fp32.sh; each <= 60 s, its own
# tests first, table last), the rows pmajor64 changes beside their peers (issue 13's d = 64 non-causal backward,
# bf16 + fp16; the GQA grid's d = 64 non-causal backward), and desc2 vs nodesc2 at N = 6k / 8k / 16k re-timed under
# the rule call A's note pre-registered.
R=$OUT/B; mkdir -p $R; export DEADLINE=${DEADLINE:-560}
export B=${B:-build-dev}
source out/common15.sh
cat out/commit.txt > $R/commit.txt 2>/dev/null
fb=$B/flashbench; S=results/h200/s19/calls
for j in sm90fwd flashfwd fp32; do
  [ -f $S/job1-$j.sh ] && TN=30 JT=70 runjob $j $S/job1-$j.sh
done
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 > $R/smi.csv 2>&1 &
smi=$!
TAILN=1 step d64bwd 60 $fb run $S/c19-d64bwd.json -q -o $R/c19-d64bwd.json
TAILN=1 step peersd64 60 python3 scripts/peers.py $S/c19-d64bwd.json --backends cudnn -o $R/peers-c19-d64bwd.json
TAILN=1 step gqa64bwd 40 $fb run $S/c19-gqa64bwd.json -q -o $R/c19-gqa64bwd.json
TAILN=1 step peersgqa64 40 python3 scripts/peers.py $S/c19-gqa64bwd.json --backends cudnn -o $R/peers-c19-gqa64bwd.json
kill $smi
for f in c19-d64bwd c19-gqa64bwd; do python3 scripts/ratios.py $R/$f.json $R/peers-$f.json --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn > $R/sum-$f.txt 2>&1; grep -A6 "^summary" $R/sum-$f.txt; done
for i in 1 2; do
  TAILN=1 step desc2-$i 40 $fb run $S/c19-desc2long-b.json -q -o $R/desc2-$i.json
  TAILN=1 step nodesc2-$i 40 env FB_FLASH_BWD=nodesc2 $fb run $S/c19-desc2long-b.json -q -o $R/nodesc2-$i.json
done
python3 - $R <<'PY'
import json, sys, math
R = sys.argv[1]
def t(f):
    try: return {(r["key"], r["kernel"]): r for r in json.load(open(f))["results"]}
    except Exception as e: print(f, e); return {}
print("nodesc2 / desc2 (flash TFLOP/s ratio; cudnn in the same pair of runs as the control)")
g = {}
for i in (1, 2):
    a, b = t(f"{R}/desc2-{i}.json"), t(f"{R}/nodesc2-{i}.json")
    for (k, kern), r in sorted(a.items()):
        o = b.get((k, kern), {})
        ok = r.get("verified") is True and o.get("verified") is True
        x = (o.get("tflops") or float("nan")) / (r.get("tflops") or float("nan"))
        if kern == "flash" and ok: g.setdefault(k, []).append(x)
        print(f"  round {i} {k:40s} {kern:6s} desc2 {r.get('tflops', 0):7.1f} nodesc2 {o.get('tflops', 0):7.1f}  {x:.4f} verified={ok}")
allx = [x for v in g.values() for x in v]
if allx:
    gm = math.exp(sum(map(math.log, allx)) / len(allx))
    print(f"geomean nodesc2/desc2 {gm:.4f} over {len(allx)} readings; min {min(allx):.4f}; rule: >= 1.005 and none < 0.995 -> "
          + ("RESTRICT desc2 to seq_k <= 4096" if gm >= 1.005 and min(allx) >= 0.995 and len(allx) == 6 else "KEEP"))
PY
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
