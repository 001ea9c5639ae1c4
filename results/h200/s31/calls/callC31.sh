#!/usr/bin/env bash
# Session 31, call C (issue 13). Carry main's binaries (commit.txt = HEAD): kFwdKvTail is d = 128's non-causal default
# since call B (`kvtail` there; `nokvtail` now runs the kernels before). The whole GPU suite on the shipped binaries (no
# probe word: the default path takes the pieces' workspace from the backend); the [flashfwd] tests under nokvtail (the
# solo tail); memcheck of a split forward; then the held-out rows behind FlashAttention-2 before: session 30's call E
# five (0.984-0.994x with pdltail) and call A's four (0.984-1.004x): three interleaved rounds of the default, nokvtail
# and FA2 (peers.py), so that each ratio has its peer beside it in every round.
R=$OUT/C; mkdir -p $R/gap; export DEADLINE=${DEADLINE:-300}
set -uo pipefail
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {  # step NAME MAX_SECONDS CMD...: skipped when under MAX/2 is left; the step's process group stopped at MAX
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt $(( max / 2 )) ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; setsid timeout -k 3 $max "$@" < /dev/null > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"
}
tar xJf out/b.txz
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
fb=$src/build-dev/flashbench
gt=$src/build-dev/tests/flashbench_gpu_tests
cat out/commit.txt > $R/commit.txt 2>/dev/null
step gpu-tests-1 130 $gt -# "[#test_gpu]" --durations yes
step gpu-tests-2 130 $gt -# "~[#test_gpu]" --durations yes
for k in 1 2; do
  echo "gpu-tests-$k: $(grep -E 'test cases|All tests|FAILED' $R/gpu-tests-$k.log | tail -2 | cut -c1-200 | tr '\n' ' ')"
done
step tests-nokvtail 60 env FB_FLASH_FWD_PROBE=nokvtail $gt "[flashfwd]"
echo "tests-nokvtail: $(grep -E 'passed|failed' $R/tests-nokvtail.log | tail -2 | tr '\n' ' ')"
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
step san-memcheck 40 $san --tool memcheck --error-exitcode 9 $fb run results/h200/s31/calls/kv-b2-h7-n2600-fp16.json \
  --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/san-memcheck.json
echo "memcheck: $(grep -E 'ERROR SUMMARY' $R/san-memcheck.log | tail -1)"
pkill -9 -f compute-sanitizer; pkill -9 -f build-dev/flashbench
c=results/h200/s30/calls
gap="$c/pdl-b1-h48-kv8-n1000.json $c/pdl-b3-h20-n1150.json $c/pdl-b5-h8-n1700.json $c/pdl-b1-h32-kv8-n2100.json"
gap="$gap $c/pdl-b1-h24-n4500.json $c/third-b2-h14-n1550.json $c/tail-b5-h6-n1600.json $c/third-b1-h20-n4100.json"
gap="$gap $c/third-b1-h40-kv8-n1800.json"
for r in 1 2 3; do
  for f in $gap; do
    s=$(basename $f .json)
    step def-$s-$r 20 $fb run $f --no-ceilings -q -o $R/gap/def-$s-$r.json
    step nokv-$s-$r 20 env FB_FLASH_FWD_PROBE=nokvtail $fb run $f --no-ceilings -q -o $R/gap/nokvtail-$s-$r.json
    step fa2-$s-$r 30 python3 scripts/peers.py $f --backends flash -o $R/gap/peers-$s-$r.json
  done
done
python3 - $R/gap > $R/gap-table.txt 2>&1 <<'PY'
import glob, json, math, os, re, sys
d = sys.argv[1]
def med(path, kernel):
    try:
        rs = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError):
        return {}
    return {r["key"]: r["time_ms"]["median"] for r in rs if r.get("kernel") == kernel and r.get("status") == "ok"
            and (kernel != "flash" or r.get("verified") is True)}
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")
rows = {}
for f in sorted(glob.glob(os.path.join(d, "def-*-[0-9].json"))):
    spec, r = re.match(r"def-(.*)-(\d)\.json", os.path.basename(f)).groups()
    ours = med(f, "flash"); old = med(os.path.join(d, f"nokvtail-{spec}-{r}.json"), "flash")
    fa2 = med(os.path.join(d, f"peers-{spec}-{r}.json"), "torch-flash")
    for k, t in ours.items():
        e = rows.setdefault(k, {"fa2": [], "old": [], "ab": []})
        if k in fa2: e["fa2"].append(fa2[k] / t); e["old"].append(fa2[k] / old[k]) if k in old else None
        if k in old: e["ab"].append(old[k] / t)
print("round by round: FA2 time / ours (the default, kvtail), FA2 time / ours under nokvtail, nokvtail time / default")
print(f"{'case':40s} {'FA2/ours by round':>20s} {'gm':>6s} {'FA2/nokv':>20s} {'gm':>6s} {'nokv/def':>20s} {'gm':>6s}")
for k, e in sorted(rows.items()):
    f = lambda v: " ".join(f"{x:.3f}" for x in v)
    print(f"{k:40s} {f(e['fa2']):>20s} {gm(e['fa2']):6.3f} {f(e['old']):>20s} {gm(e['old']):6.3f} "
          f"{f(e['ab']):>20s} {gm(e['ab']):6.3f}")
g = [gm(e["fa2"]) for e in rows.values() if e["fa2"]]; a = [gm(e["ab"]) for e in rows.values() if e["ab"]]
print(f"FA2/ours: rows {len(g)} geomean {gm(g):.3f} range {min(g):.3f}-{max(g):.3f}; "
      f"nokvtail/default: geomean {gm(a):.3f} range {min(a):.3f}-{max(a):.3f}")
PY
cat $R/gap-table.txt | cut -c1-160
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
