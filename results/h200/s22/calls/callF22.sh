#!/usr/bin/env bash
# Session 22 final call F22 (one H200): main's final code (the d = 128 non-causal fp32 backward = w2a's kernel in
# plane-major order after the fused pre-pass; session 22's other probes removed), binaries built on the lead's machine
# for sm_90a and carried as in call A. The fp32 sweep beside PyTorch's fp32 SDPA without any word; an A/B of the new
# default against session 21's form (fp16pair128w2a) on the five d = 128 rows; shapes no config names; memcheck /
# synccheck of the tiled set; racecheck / synccheck / initcheck of the new d = 128 backward; every GPU test and the
# ctest words' reruns. The 16-bit kernels did not change: F20's tables stand for them.
R=$OUT/F22; mkdir -p $R; export DEADLINE=${DEADLINE:-560}
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
tar xJf out/b.txz && echo "unpacked binaries (t=$((SECONDS-t0)))"
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
B=$src/build-dev; export BUILD=$B
cat out/commit.txt > $R/commit.txt 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi0.csv 2>&1
fb=$B/flashbench
TAILN=2 step fp32 50 $fb run configs/fp32-h200.json -q -o $R/fp32-h200.json
TAILN=2 step peersfp32 45 python3 scripts/peers.py configs/fp32-h200.json --backends efficient,math -o $R/peers-fp32-h200.json
python3 scripts/ratios.py $R/fp32-h200.json --pair flash-sm90:naive --pair flash:naive > $R/sum-fp32.txt 2>&1; grep -A8 "^summary" $R/sum-fp32.txt
# A/B: the default against session 21's d = 128 form, interleaved (naive in every process: every row verified).
ab() {  # name, word
  local probe=$2; [ "$2" = default ] && probe=
  TAILN=1 step ab-$1 25 env FB_SM90_FP32_BWD_PROBE=$probe $fb run configs/fp32-fp16pair128-s21.json --kernels naive,flash-sm90 --no-ceilings -q -o $R/ab-$1.json
}
ab 1-default default; ab 2-w2a fp16pair128w2a; ab 3-w2a fp16pair128w2a; ab 4-default default
python3 - $R <<'PY' | tee $R/ab-table.txt
import json, math, sys, os
R = sys.argv[1]
def load(n):
    try:
        return {(r["key"], r["kernel"]): r for r in json.load(open(os.path.join(R, f"ab-{n}.json")))["results"]}
    except (OSError, ValueError, KeyError):
        return {}
runs = {n: load(n) for n in ["1-default", "2-w2a", "3-w2a", "4-default"]}
keys = sorted({k for d in runs.values() for (k, kern) in d if kern == "flash-sm90"})
ok = lambda r: r is not None and r.get("status") == "ok" and r.get("verified") is True
print("flash-sm90 fp32 backward, d = 128 non-causal: the default (w2m + fused pre-pass) against session 21's w2a, TFLOP/s")
print("(every cell verified against fp64; naive in the same process; readings default, w2a, w2a, default)")
print(f"{'case':36} {'naive':>6} {'dflt':>6} {'w2a':>6} {'dflt/w2a':>9} {'dflt/n':>7} {'w2a/n':>7}")
bad = 0
for k in keys:
    def mean(names, kern):
        xs = [runs[n].get((k, kern)) for n in names]
        if not all(ok(x) for x in xs):
            return float("nan")
        return sum(x["tflops"] for x in xs) / len(xs)
    d, a = mean(["1-default", "4-default"], "flash-sm90"), mean(["2-w2a", "3-w2a"], "flash-sm90")
    n = mean(list(runs), "naive")
    bad += not (d == d and a == a and n == n)
    print(f"{k.removesuffix('-bwd'):36} {n:6.1f} {d:6.1f} {a:6.1f} {d / a:8.3f}x {d / n:6.3f}x {a / n:6.3f}x")
print("rows not verified / missing: " + str(bad))
PY
TAILN=9 step oddshapes 60 bash results/h200/s22/calls/oddshapes22.sh $R
TAILN=5 step san-tiled 40 bash scripts/sanitize.sh -e $fb -s configs/sanitize-tiled.json -t "memcheck synccheck" $R/san-tiled.json
TAILN=5 step race-fp32-bwd128 150 bash scripts/sanitize.sh -e $fb -s configs/sanitize-fp32-bwd128-race.json -t "racecheck synccheck initcheck" $R/race-fp32-bwd128.json
for f in $R/*racecheck*.log; do [ -f "$f" ] && { grep -m3 -E "RACECHECK SUMMARY|ERROR SUMMARY|hazard" "$f"; gzip -f "$f"; }; done
TAILN=3 step gputests 110 $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
for w in tf32pair fp16pair128 fp16pair128w2a; do
  TAILN=2 step tests-$w 25 env FB_SM90_FP32_BWD_PROBE=$w $B/tests/flashbench_gpu_tests "[sm90tf32]"
done
tar czf $OUT/F22.tgz -C $OUT F22 && rm -rf $R; echo "done t=$((SECONDS-t0))"
