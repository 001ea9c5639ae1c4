#!/usr/bin/env bash
# PREPARED in session 30 for session 31, NOT RUN (issue 13; session 30's call D, whose two starts were refused,
# reworked for the binaries that ship pdltail). Carry main's binaries (commit.txt = HEAD): the portable d = 128
# forward runs a non-causal grid's partial last wave as a programmatically dependent launch (kFwdPdlTail, the default
# since session 30's call E, which ran the suite under the probe word only). The whole GPU test suite in two halves on
# the shipped binaries (no probe word), then memcheck of the portable forward at session 29's partial-last-wave shape
# (batch 2 x 12 heads d = 128 N = 3400: 528 + 120 blocks, split). Then, for the gap calls A-C found (the d = 128
# non-causal forward 0.845-1.009x FA2 on held-out shapes of a few waves before pdltail, 0.984-1.019x on call E's nine
# with it, FA2 measured once a call): ncu's SM-active cycles (mean / max / min) and time of ours and FA2's at two
# one-wave-plus-tail shapes (batch 5 x 6 heads N = 1600: 390 blocks; batch 2 x 14 heads N = 1550: 364), and three
# interleaved rounds of ours and FA2 (peers.py) on four of call C's shapes, so that each ratio has FA2 three times.
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-300}
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
cat out/commit.txt > $R/commit.txt 2>/dev/null
step gpu-tests-1 150 $src/build-dev/tests/flashbench_gpu_tests -# "[#test_gpu]" --durations yes
step gpu-tests-2 150 $src/build-dev/tests/flashbench_gpu_tests -# "~[#test_gpu]" --durations yes
for k in 1 2; do echo "gpu-tests-$k: $(grep -E 'test cases|All tests|FAILED' $R/gpu-tests-$k.log | tail -3)"; done
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
step san-memcheck 60 $san --tool memcheck --error-exitcode 9 $fb run results/h200/s29/calls/ragged-fwd.json \
  --filter 'n3400-' --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/san-memcheck.json
echo "memcheck: $(grep -E 'ERROR SUMMARY' $R/san-memcheck.log | tail -1)"
pkill -9 -f compute-sanitizer; pkill -9 -f build-dev/flashbench
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
m="--section LaunchStats --section Occupancy"
m="$m --metrics sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min"
m="$m,gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active"
one="--warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q"
c=results/h200/s30/calls
for sh in "5 6 1600 tail-b5-h6-n1600" "2 14 1550 third-b2-h14-n1550"; do
  set -- $sh
  step ncu-fa2-$3 60 $ncu --clock-control none --kernel-name regex:flash_fwd --launch-skip 1 --launch-count 1 $m \
    --csv python3 results/h200/s26/calls/torch_flash_one.py $1 $2 $3 128
  # Ours: one forward is two launches at these shapes (the whole wave, then the tail; ncu serializes them, so the
  # tail's overlap with the first launch's drain does not show): the second forward's two (the first is a warm-up).
  step ncu-ours-$3 40 $ncu --clock-control none --kernel-name regex:flash_fwd_tc --launch-skip 2 --launch-count 2 $m \
    --csv $fb run $c/$4.json $one -o $R/ncu-ours-$3-run.json
  for w in fa2 ours; do
    echo "$w-$3: $(grep -hE '"(gpu__time_duration.sum|sm__cycles_active.(avg|max|min)|Grid Size)"' $R/ncu-$w-$3.log \
      | awk -F'","' '{printf "%s=%s ", $13, $15}' | tr -d '"')"
  done
done
mkdir -p $R/gap
gap="third-b2-h14-n1550 tail-b5-h6-n1600 third-b1-h20-n4100 third-b1-h40-kv8-n1800"
for r in 1 2 3; do
  for s in $gap; do
    step fb-$s-$r 20 $fb run $c/$s.json --no-ceilings -q -o $R/gap/def-$s-$r.json
    step fa2-$s-$r 40 python3 scripts/peers.py $c/$s.json --backends flash -o $R/gap/peers-$s-$r.json
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
rows = {}
for f in sorted(glob.glob(os.path.join(d, "def-*-[0-9].json"))):
    spec, r = re.match(r"def-(.*)-(\d)\.json", os.path.basename(f)).groups()
    ours = med(f, "flash"); fa2 = med(os.path.join(d, f"peers-{spec}-{r}.json"), "torch-flash")
    for k, t in ours.items():
        if k in fa2: rows.setdefault(k, []).append(fa2[k] / t)
print("FA2 time / ours, round by round (ours and FA2 interleaved), and their geomean")
for k, v in sorted(rows.items()):
    g = math.exp(sum(map(math.log, v)) / len(v))
    print(f"{k:44s} " + " ".join(f"{x:.3f}" for x in v) + f"  gm {g:.3f}")
PY
cat $R/gap-table.txt
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
