#!/usr/bin/env bash
# Session 19 call A (one H200): main d21f73a built on the device for sm_90a; session 18's prepared pmajor64 job
# (results/h200/s18/calls/job2-sm90bwd64.sh, rule in perf-notes), the portable backward's desc2 vs nodesc2 at
# N = 8k / 16k (interleaved, twice each, in-binary cudnn beside as a control), F18's GQA d = 64 rows re-timed twice
# beside PyTorch's SDPA peers, then every GPU test.
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-560}
export B=${B:-build-dev}
source out/common15.sh
cat out/commit.txt > $R/commit.txt 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi0.csv 2>&1
fb=$B/flashbench; S=results/h200/s19/calls
TN=45 JT=75 runjob pmajor64 results/h200/s18/calls/job2-sm90bwd64.sh
for i in 1 2; do
  TAILN=1 step desc2-$i 40 $fb run $S/c19-desc2long.json -q -o $R/desc2-$i.json
  TAILN=1 step nodesc2-$i 40 env FB_FLASH_BWD=nodesc2 $fb run $S/c19-desc2long.json -q -o $R/nodesc2-$i.json
done
for i in 1 2; do
  TAILN=1 step gqa64-$i 40 $fb run $S/c19-gqa64.json -q -o $R/gqa64-$i.json
  TAILN=1 step peersgqa64-$i 50 python3 scripts/peers.py $S/c19-gqa64.json --backends flash,cudnn -o $R/peers-gqa64-$i.json
  python3 scripts/ratios.py $R/gqa64-$i.json $R/peers-gqa64-$i.json --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash > $R/sum-gqa64-$i.txt 2>&1
done
python3 - $R <<'PY'
import json, sys, glob
R = sys.argv[1]
def t(f):
    try: return {(r["key"], r["kernel"]): r for r in json.load(open(f))["results"]}
    except Exception as e: print(f, e); return {}
print("desc2 vs nodesc2 (TFLOP/s; cudnn control)")
for i in (1, 2):
    a, b = t(f"{R}/desc2-{i}.json"), t(f"{R}/nodesc2-{i}.json")
    for (k, kern), r in sorted(a.items()):
        o = b.get((k, kern), {})
        print(f"  round {i} {k:40s} {kern:6s} desc2 {r.get('tflops')} nodesc2 {o.get('tflops')} TFLOP/s ok={r.get('verified')}/{o.get('verified')}")
PY
TAILN=6 step gputests 170 $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
for i in 1 2; do grep -B2 -A14 "^summary" $R/sum-gqa64-$i.txt | grep -E "vs|worst|bwd|fwd" | head -12; done
cat $R/pmajor64/table.txt 2>/dev/null | tail -25
rm -f $R/*/ncu-query.txt
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
