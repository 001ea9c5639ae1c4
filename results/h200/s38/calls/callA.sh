#!/usr/bin/env bash
# Session 38, call A (one H200; issue 13): the binaries of commit.txt (main's head at the session's start: session 37's
# host refactors and the flash backward's plane-group order from common/tile_order.h, none run on the device yet).
# Every GPU test; compute-sanitizer memcheck of a non-dividing flash plane group (s37's san-flashpg.json); five rows
# behind a peer in session 37, three interleaved rounds beside the peers (beh-*.json, scripts/peer_rounds.py); eight
# shapes no config names (held38-*.json, seed 3800, drawn before any session-38 change) beside the peers, one round.
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-560}
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
c=results/h200/s38/calls
step tests-all 200 $gt
echo "tests-all: $(grep -E 'passed|failed' $R/tests-all.log | tail -2 | tr '\n' ' ')"
step san-memcheck 60 compute-sanitizer --tool memcheck --error-exitcode 9 $fb run results/h200/s37/calls/san-flashpg.json \
  --no-ceilings -q -o $R/san-memcheck.json
pkill -9 -f compute-sanitizer; pkill -9 -f build-dev/flashbench; sleep 2
tail -2 $R/san-memcheck.log
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 \
  > $R/smi.csv 2>&1 &
smi=$!
for s in $(cd $c && ls beh-*.json | sed 's/\.json$//'); do
  step rounds-$s 75 python3 scripts/peer_rounds.py $c/$s.json -o $R/$s --rounds 3 --flashbench $fb \
    --pair flash-sm90:torch-cudnn --pair flash:torch-flash
  grep -A3 "^summary" $R/$s/rounds.txt 2>/dev/null | grep -E "x," | cut -c1-150
done
for s in $(cd $c && ls held38-*.json | sed 's/\.json$//'); do
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
print("held-out shapes (seed 3800): peer time / ours (median), one round; - : a side missing or not verified")
print(f"{'case':52s} {'sm90/t-cudnn':>12s} {'sm90/cudnn':>11s} {'flash/t-fa2':>11s}")
for key in sorted({k for k, _ in ours}):
    def ratio(a, b, src):
        return f"{src[(key, b)] / ours[(key, a)]:.3f}" if (key, a) in ours and (key, b) in src else "-"
    print(f"{key:52s} {ratio('flash-sm90', 'torch-cudnn', peer):>12s} {ratio('flash-sm90', 'cudnn', ours):>11s} "
          f"{ratio('flash', 'torch-flash', peer):>11s}")
PY
cat $R/table.txt
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
