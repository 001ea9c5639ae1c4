#!/usr/bin/env bash
# Session 22 call F22b (the same H200 session as F22, right after it; the same binaries): F22's A/B step again with
# the five rows' filter it lacked (in F22 the whole config's 50 rows ran into the step's time limit): the default
# (w2m + the fused pre-pass) against session 21's form (fp16pair128w2a) on the five d = 128 non-causal rows of
# configs/fp32-fp16pair128-s21.json, naive in every process (every row verified), readings default, w2a, w2a, default,
# default, w2a.
R=$OUT/F22b; mkdir -p $R
set -uo pipefail
t0=$SECONDS
[ -x build-dev/flashbench ] || tar xJf out/b.txz
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
fb=$src/build-dev/flashbench
cat out/commit.txt > $R/commit.txt 2>/dev/null
filter='^(b16-h16-kv16-n1024|b4-h16-kv16-n4096|b2-h16-kv16-n8192|b8-h16-kv16-n2000|b5-h16-kv4-n3000)-d128-fp32-full-bwd$'
i=0
for w in default fp16pair128w2a fp16pair128w2a default default fp16pair128w2a; do
  i=$((i + 1)); probe=$w; [ $w = default ] && probe=
  FB_SM90_FP32_BWD_PROBE=$probe timeout -k 2 20 $fb run configs/fp32-fp16pair128-s21.json --filter "$filter" \
    --kernels naive,flash-sm90 --no-ceilings -q -o $R/ab-$i-$w.json > $R/ab-$i-$w.log 2>&1
  echo "ab-$i-$w rc=$? (t=$((SECONDS - t0)))"
done
python3 - $R <<'PY' | tee $R/ab-table.txt
import json, math, os, sys
R = sys.argv[1]
names = sorted((f[:-5] for f in os.listdir(R) if f.startswith("ab-") and f.endswith(".json")),
               key=lambda n: int(n.split("-")[1]))
tf, bad, keys = {}, [], []
for n in names:
    for r in json.load(open(os.path.join(R, n + ".json")))["results"]:
        k = r["key"]
        if k not in keys:
            keys.append(k)
        ok = r.get("status") == "ok" and r.get("verified") is True
        tf[(n, k, r["kernel"])] = r["tflops"] if ok else float("nan")
        if not ok:
            bad.append(f"{n} {k} {r['kernel']}")
tag = lambda n: n.split("-", 2)[2]
nan = float("nan")
def mean(xs):
    xs = [x for x in xs if x == x]
    return sum(xs) / len(xs) if xs else nan
def gmean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs and all(x == x and x > 0 for x in xs) else nan
d_runs = [n for n in names if tag(n) == "default"]
a_runs = [n for n in names if tag(n) == "fp16pair128w2a"]
def around(n, k):  # w2a's readings nearest before and after reading n
    i = names.index(n)
    b = [s for s in a_runs if names.index(s) < i][-1:]
    a = [s for s in a_runs if names.index(s) > i][:1]
    return mean([tf.get((s, k, "flash-sm90"), nan) for s in b + a])
print("flash-sm90 fp32 backward, d = 128 non-causal: the default (w2m + fused pre-pass) against session 21's form")
print("(fp16pair128w2a), TFLOP/s, every cell verified against fp64 by the FP32 rule, naive in each process; dflt/w2a:")
print("each default reading over w2a's nearest readings around it, geomean; x/n: the setting over naive, same process")
print(f"{'case':36} {'naive':>6} {'dflt':>6} {'w2a':>6} {'dflt/w2a':>9} {'dflt/n':>7} {'w2a/n':>7}")
for k in sorted(keys, key=lambda k: int(k.split("-n")[1].split("-")[0])):
    nv = mean([tf.get((n, k, "naive"), nan) for n in names])
    dv = mean([tf.get((n, k, "flash-sm90"), nan) for n in d_runs])
    av = mean([tf.get((n, k, "flash-sm90"), nan) for n in a_runs])
    r = gmean([tf.get((n, k, "flash-sm90"), nan) / around(n, k) for n in d_runs])
    dn = gmean([tf.get((n, k, "flash-sm90"), nan) / tf.get((n, k, "naive"), nan) for n in d_runs])
    an = gmean([tf.get((n, k, "flash-sm90"), nan) / tf.get((n, k, "naive"), nan) for n in a_runs])
    print(f"{k.removesuffix('-bwd'):36} {nv:6.1f} {dv:6.1f} {av:6.1f} {r:8.3f}x {dn:6.3f}x {an:6.3f}x")
print("rows not ok or not verified: " + ("; ".join(bad) if bad else "none"))
PY
tar czf $OUT/F22b.tgz -C $OUT F22b && rm -rf $R; echo "done t=$((SECONDS-t0))"
