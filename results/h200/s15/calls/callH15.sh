#!/usr/bin/env bash
# Session 15 call H (one H200, no build; call G's binaries, main d53a72d's code): three more interleaved readings of
# the two-head-unit default against unit1h on four of calls D/E's changed rows (the two weakest there, call G's
# 8/1 N = 4096, one more), every row verified.
R=$OUT/H; mkdir -p $R; export DEADLINE=${DEADLINE:-120}
export B=${B:-build-loc} USEBIN=${USEBIN:-out/binF.txz}
source out/common15.sh
fb=$B/flashbench
F="b4-h8-kv1-n4096|b7-h4-kv1-n2000|b5-h8-kv1-n3072|b8-h4-kv1-n2048"
cp out/spec-h.json $R/spec.json
for i in 1 2 3; do
  TAILN=1 step default-$i 15 $fb run out/spec-h.json --kernels flash-sm90 --filter "$F" --no-ceilings -q -o $R/default-$i.json
  TAILN=1 step unit1h-$i 15 env FB_SM90_BWD128=unit1h $fb run out/spec-h.json --kernels flash-sm90 --filter "$F" --no-ceilings -q -o $R/unit1h-$i.json
done
TAILN=1 step default-4 15 $fb run out/spec-h.json --kernels flash-sm90 --filter "$F" --no-ceilings -q -o $R/default-4.json
python3 - $R <<'PY'
import json, sys, os, math
R = sys.argv[1]
def load(n):
    p = os.path.join(R, n + ".json")
    if not os.path.exists(p): return {}
    return {r["key"]: r["time_ms"]["median"] for r in json.load(open(p))["results"] if r.get("status") == "ok" and r.get("verified")}
d = [load(f"default-{i}") for i in range(1, 5)]; u = [load(f"unit1h-{i}") for i in range(1, 4)]
out = ["unit1h time / default time (> 1: the new default faster), each unit1h run against the default runs around it"]
for k in sorted(d[0]):
    rs = []
    for i in range(3):
        if k in u[i] and k in d[i] and k in d[i + 1]:
            rs.append(u[i][k] / math.sqrt(d[i][k] * d[i + 1][k]))
    out.append(f"{k:42s} " + " ".join(f"{x:.3f}" for x in rs) + (f"   geomean {math.exp(sum(map(math.log, rs)) / len(rs)):.3f}" if rs else ""))
open(os.path.join(R, "table.txt"), "w").write("\n".join(out) + "\n"); print("\n".join(out))
PY
tar czf $OUT/H.tgz -C $OUT H && rm -rf $R; echo "done t=$((SECONDS-t0))"
