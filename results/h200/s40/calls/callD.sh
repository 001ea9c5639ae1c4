#!/usr/bin/env bash
# Session 40, call D (one H200; issue 13): the binaries of commit.txt (the session's final kernels). Ten GQA/MQA shapes
# no config names (held40g-*.json, seed 4060, drawn after the session's change, held40g.py), both masks, backward,
# flash and flash-sm90 beside FlashAttention-2 and torch-cudnn, one round.
R=$OUT/D; mkdir -p $R/held; export DEADLINE=${DEADLINE:-360}
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
c=results/h200/s40/calls
for s in $(cd $c && ls held40g-*.json | sed 's/\.json$//'); do
  step fb-$s 40 $fb run $c/$s.json -q --no-ceilings -o $R/held/fb-$s.json
  step peers-$s 30 python3 scripts/peers.py $c/$s.json --backends flash,cudnn -o $R/held/peers-$s.json
done
python3 - $R/held > $R/table.txt <<'PY'
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
print("held-out GQA/MQA shapes (seed 4060): peer time / ours (median), one round; - : a side missing or not verified")
print(f"{'case':52s} {'sm90/t-cudnn':>12s} {'flash/t-fa2':>11s}")
for key in sorted({k for k, _ in ours}):
    def ratio(a, b, src):
        return f"{src[(key, b)] / ours[(key, a)]:.3f}" if (key, a) in ours and (key, b) in src else "-"
    print(f"{key:52s} {ratio('flash-sm90', 'torch-cudnn', peer):>12s} "
          f"{ratio('flash', 'torch-flash', peer):>11s}")
PY
cat $R/table.txt
find $R -size 0 -delete
tar czf $OUT/D.tgz -C $OUT D && rm -rf $R; echo "done t=$((SECONDS-t0))"
