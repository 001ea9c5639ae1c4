#!/usr/bin/env bash
# Session 15 call G (one H200, no device build): main d53a72d (unit2h the default) built on the CPU machine and
# carried: the Hopper backward's GPU tests under the new default, then the GQA causal d = 128 rows whose split it
# changes, default against unit1h (the split before) in one call, beside the in-binary cudnn, every row verified.
R=$OUT/G; mkdir -p $R; export DEADLINE=${DEADLINE:-150}
export B=${B:-build-loc} USEBIN=${USEBIN:-out/binF.txz}
source out/common15.sh
fb=$B/flashbench
TAILN=4 step gputests 60 $B/tests/flashbench_gpu_tests "[bwd128],[bwd_gqa]"
F="h(4|8)-kv1-n(1024|4096)-d128-bf16-causal-bwd"
TAILN=2 step default-1 20 $fb run configs/gqa-h200.json --kernels flash-sm90,cudnn --filter "$F" -q -o $R/default-1.json
TAILN=2 step unit1h-1 20 env FB_SM90_BWD128=unit1h $fb run configs/gqa-h200.json --kernels flash-sm90 --filter "$F" -q -o $R/unit1h-1.json
TAILN=2 step default-2 20 $fb run configs/gqa-h200.json --kernels flash-sm90 --filter "$F" -q -o $R/default-2.json
python3 - $R <<'PY'
import json, sys, glob, os
R = sys.argv[1]
def load(n):
    p = os.path.join(R, n + ".json")
    if not os.path.exists(p): return {}
    return {(r["key"], r["kernel"]): r for r in json.load(open(p))["results"] if r.get("status") == "ok" and r.get("verified")}
d1, u, d2 = load("default-1"), load("unit1h-1"), load("default-2")
keys = sorted({k for k, kern in d1 if kern == "flash-sm90"})
out = ["case  default TFLOP/s (two runs)  unit1h  default/unit1h (time ratio, >1 = default faster)  cudnn"]
for k in keys:
    a, b, c = d1.get((k, "flash-sm90")), d2.get((k, "flash-sm90")), u.get((k, "flash-sm90"))
    cd = d1.get((k, "cudnn"))
    if not (a and b and c): out.append(f"{k} missing"); continue
    tm = (a["time_ms"]["median"] * b["time_ms"]["median"]) ** 0.5
    out.append(f"{k:42s} {a['tflops']:.0f} {b['tflops']:.0f}  {c['tflops']:.0f}  {c['time_ms']['median']/tm:.3f}  {cd['tflops'] if cd else float('nan'):.0f}")
open(os.path.join(R, "table.txt"), "w").write("\n".join(out) + "\n"); print("\n".join(out))
PY
tar czf $OUT/G.tgz -C $OUT G && rm -rf $R; echo "done t=$((SECONDS-t0))"
