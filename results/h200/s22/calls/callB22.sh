#!/usr/bin/env bash
# Session 22 call B (one H200): the d = 64 non-causal fp32 backward's blocks in plane-major order (branch s22d64: one
# line, Fp16PairBwdTraits::kPlaneMajor = true; docs/perf-notes.md, "Session 22: the d = 64 kernel in plane-major
# order"), A/B of two binaries built on the lead's machine for sm_90a and carried: OLD = main 592dbe6's flashbench
# (out/old/), NEW = s22d64's (out/b.txz, with its GPU tests). Steps: '[sm90tf32]' with the new binary; six interleaved
# processes old, new, new, old, old, new on configs/fp32-fp16pair-s20.json's five d = 64 non-causal rows (naive in
# each: every row verified against fp64); if the pre-registered rule says SHIPS: the fp32 sweep with the new binary
# beside PyTorch's fp32 SDPA, racecheck / synccheck / initcheck of configs/sanitize-fp32-bwd-race.json (d = 64 and
# 128 at N = 130), every GPU test.
R=$OUT/B; mkdir -p $R; export DEADLINE=${DEADLINE:-420}
set -uo pipefail
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {  # name, limit (s), command...: the limit cut to what is left; skipped under 10 s
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt 10 ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; timeout -k 3 $max "$@" > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"; tail -n ${TAILN:-25} $R/$name.log
}
tar xJf out/b.txz && xz -dkf out/old/flashbench.xz && chmod +x out/old/flashbench && echo "unpacked binaries (t=$((SECONDS-t0)))"
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
B=$src/build-dev; OLD=$PWD/out/old/flashbench; NEW=$B/flashbench
cat out/commit.txt > $R/commit.txt 2>/dev/null; cat out/old/commit.txt > $R/commit-old.txt 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi0.csv 2>&1
TAILN=2 step tests-new 30 $B/tests/flashbench_gpu_tests "[sm90tf32]"
filter='^(b16-h32-kv32-n1024|b4-h32-kv32-n4096|b2-h32-kv32-n8192|b8-h32-kv32-n2000|b5-h32-kv8-n3000)-d64-fp32-full-bwd$'
i=0
for v in old new new old old new; do
  i=$((i + 1)); fb=$OLD; [ $v = new ] && fb=$NEW
  TAILN=1 step ab-$i-$v 25 $fb run configs/fp32-fp16pair-s20.json --filter "$filter" --kernels naive,flash-sm90 \
    --no-ceilings -q -o $R/ab-$i-$v.json
done
python3 - $R <<'PY' | tee $R/ab-table.txt
import json, math, os, sys
R = sys.argv[1]
names = sorted((f[:-5] for f in os.listdir(R) if f.startswith("ab-") and f.endswith(".json")),
               key=lambda n: int(n.split("-")[1]))
nan = float("nan")
tf, bad, keys = {}, [], []
for n in names:
    try:
        res = json.load(open(os.path.join(R, n + ".json")))["results"]
    except (OSError, ValueError, KeyError) as e:
        bad.append(f"{n}: {e}")
        continue
    for r in res:
        k = r["key"]
        if k not in keys:
            keys.append(k)
        ok = r.get("status") == "ok" and r.get("verified") is True
        tf[(n, k, r["kernel"])] = r["tflops"] if ok else nan
        if not ok:
            bad.append(f"{n} {k} {r['kernel']}")
tag = lambda n: n.split("-", 2)[2]
def mean(xs):
    xs = [x for x in xs if x == x]
    return sum(xs) / len(xs) if xs else nan
def gmean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs and all(x == x and x > 0 for x in xs) else nan
new = [n for n in names if tag(n) == "new"]
old = [n for n in names if tag(n) == "old"]
def around(n, k):
    i = names.index(n)
    b = [s for s in old if names.index(s) < i][-1:]
    a = [s for s in old if names.index(s) > i][:1]
    return mean([tf.get((s, k, "flash-sm90"), nan) for s in b + a])
print("flash-sm90 fp32 backward, d = 64 non-causal: s22d64 (plane-major blocks) against main (key-block-major), TFLOP/s,")
print("every cell verified against fp64 by the FP32 rule, naive in each process; new/old: each new reading over the old")
print("binary's nearest readings around it, geomean; x/n: over naive in the same process, geomean")
print(f"{'case':36} {'naive':>6} {'old':>6} {'new':>6} {'new/old':>8} {'old/n':>7} {'new/n':>7}")
ratios = {}
for k in sorted(keys, key=lambda k: int(k.split("-n")[1].split("-")[0])):
    nv = mean([tf.get((n, k, "naive"), nan) for n in names])
    ov = mean([tf.get((n, k, "flash-sm90"), nan) for n in old])
    wv = mean([tf.get((n, k, "flash-sm90"), nan) for n in new])
    r = gmean([tf.get((n, k, "flash-sm90"), nan) / around(n, k) for n in new])
    ratios[k] = r
    on = gmean([tf.get((n, k, "flash-sm90"), nan) / tf.get((n, k, "naive"), nan) for n in old])
    wn = gmean([tf.get((n, k, "flash-sm90"), nan) / tf.get((n, k, "naive"), nan) for n in new])
    print(f"{k.removesuffix('-bwd'):36} {nv:6.1f} {ov:6.1f} {wv:6.1f} {r:7.3f}x {on:6.3f}x {wn:6.3f}x")
print("rows not ok or not verified: " + ("; ".join(bad) if bad else "none"))
tests_ok = "All tests passed" in open(os.path.join(R, "tests-new.log")).read() if os.path.exists(os.path.join(R, "tests-new.log")) else False
g = gmean(list(ratios.values()))
why = []
if bad: why.append("rows not ok / not verified")
if not tests_ok: why.append("'[sm90tf32]' did not pass with the new binary")
if len(new) < 3 or len(old) < 3: why.append("fewer than 3 readings each")
if len(ratios) < 5: why.append(f"{len(ratios)} of 5 rows read")
if not g >= 1.02: why.append(f"geomean new/old {g:.3f}x < 1.02x")
low = [f"{k.removesuffix('-bwd')} {r:.3f}x" for k, r in ratios.items() if not r >= 0.99]
if low: why.append("below 0.99x on: " + ", ".join(low))
print("rule (pre-registered, docs/perf-notes.md \"Session 22: the d = 64 kernel in plane-major order\"): ships if new/old")
print(">= 1.02x geomean over the five rows and >= 0.99x on each, every row verified, '[sm90tf32]' passed")
print(f"geomean new/old {g:.3f}x")
print("verdict: " + ("SHIPS" if not why else "does not ship (" + "; ".join(why) + ")"))
PY
if grep -q "^verdict: SHIPS" $R/ab-table.txt; then
  fb=$NEW
  TAILN=2 step fp32sweep 50 $fb run configs/fp32-h200.json -q -o $R/fp32-h200.json
  TAILN=2 step peersfp32 45 python3 scripts/peers.py configs/fp32-h200.json --backends efficient,math -o $R/peers-fp32-h200.json
  python3 scripts/ratios.py $R/fp32-h200.json --pair flash-sm90:naive --pair flash:naive > $R/sum-fp32.txt 2>&1; grep -A8 "^summary" $R/sum-fp32.txt
  TAILN=5 step race-fp32-bwd 80 bash scripts/sanitize.sh -e $fb -s configs/sanitize-fp32-bwd-race.json -t "racecheck synccheck initcheck" $R/race-fp32-bwd.json
  for f in $R/*racecheck*.log; do [ -f "$f" ] && { grep -m2 -E "RACECHECK SUMMARY|ERROR SUMMARY" "$f"; gzip -f "$f"; }; done
  TAILN=3 step gputests 110 $B/tests/flashbench_gpu_tests
  grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
fi
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
