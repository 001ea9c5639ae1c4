#!/usr/bin/env bash
# Session 37, call B (one H200; issue 13): the binaries of commit.txt (split_causal_group() the default, splitone the
# order before). [bwd64] (with [sm90_pgroup]'s head-split rows) and [bwd_gqa] as built, [bwd_gqa] and [sm90_pgroup]
# under splitone; compute-sanitizer memcheck of a head split in non-dividing bounded groups (san-splitpg.json); the GQA
# d = 64 grid (configs/gqa-d64-h200.json, its six causal MQA backward rows the ones session 37 changes) beside
# torch-cudnn and FlashAttention-2, two rounds; eight shapes no config names (unnamed37-*, seed 3710) beside the peers,
# one round.
R=$OUT/B; mkdir -p $R; export DEADLINE=${DEADLINE:-570}
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
c=results/h200/s37/calls
step tests-bwd64 110 $gt "[bwd64]"
step tests-gqa 70 $gt "[bwd_gqa]"
step tests-gqa-splitone 70 env FB_SM90_BWD64=splitone $gt "[bwd_gqa]"
step tests-pgroup-splitone 60 env FB_SM90_BWD64=splitone $gt "[sm90_pgroup]"
for t in bwd64 gqa gqa-splitone pgroup-splitone; do
  echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
step san-memcheck 150 compute-sanitizer --tool memcheck --error-exitcode 9 $fb run $c/san-splitpg.json --no-ceilings \
  -q -o $R/san-memcheck.json
pkill -9 -f compute-sanitizer; pkill -9 -f build-dev/flashbench; sleep 2
tail -3 $R/san-memcheck.log
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 \
  > $R/smi.csv 2>&1 &
smi=$!
for r in 1 2; do
  step fb-gqa64-$r 90 $fb run configs/gqa-d64-h200.json -q -o $R/gqa-d64-h200-$r.json
  step peers-gqa64-$r 80 python3 scripts/peers.py configs/gqa-d64-h200.json --backends flash,cudnn \
    -o $R/peers-gqa-d64-h200-$r.json
done
args=""
for r in 1 2; do [ -f $R/gqa-d64-h200-$r.json ] && [ -f $R/peers-gqa-d64-h200-$r.json ] && \
  args="$args --round $R/gqa-d64-h200-$r.json $R/peers-gqa-d64-h200-$r.json"; done
python3 scripts/ratios.py $args --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash \
  > $R/rounds-gqa-d64.txt 2>&1
echo "== gqa64"; grep -A8 "^summary" $R/rounds-gqa-d64.txt; grep "causal-bwd" $R/rounds-gqa-d64.txt | head -12
for s in $(cd $c && ls unnamed37-*.json | sed 's/\.json$//'); do
  step fb-$s 40 $fb run $c/$s.json -q -o $R/fb-$s.json
  step peers-$s 30 python3 scripts/peers.py $c/$s.json --backends flash,cudnn -o $R/peers-$s.json
done
kill $smi
python3 - $R > $R/table.txt <<'PY'
import glob, json, os, sys
R = sys.argv[1]
ours, peer = {}, {}
for f in glob.glob(os.path.join(R, "fb-*.json")):
    for r in json.load(open(f))["results"]:
        if r.get("status") == "ok" and r.get("verified") is True:
            ours[(r["key"], r["kernel"])] = r["time_ms"]["median"]
for f in glob.glob(os.path.join(R, "peers-*.json")):
    for r in json.load(open(f))["results"]:
        if r.get("status") == "ok":
            peer[(r["key"], r["kernel"])] = r["time_ms"]["median"]
print("peer time / ours (median), one round; - : a side missing or not verified")
print(f"{'case':52s} {'sm90/t-cudnn':>12s} {'sm90/cudnn':>11s} {'flash/t-fa2':>11s}")
for key in sorted({k for k, _ in ours}):
    def ratio(a, b, src):
        return f"{src[(key, b)] / ours[(key, a)]:.3f}" if (key, a) in ours and (key, b) in src else "-"
    print(f"{key:52s} {ratio('flash-sm90', 'torch-cudnn', peer):>12s} {ratio('flash-sm90', 'cudnn', ours):>11s} "
          f"{ratio('flash', 'torch-flash', peer):>11s}")
PY
cat $R/table.txt
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
