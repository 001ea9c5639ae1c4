#!/usr/bin/env bash
# Session 36, call C (one H200; issue 13): a measurement. Call B had the widened causal d = 64 plane groups lose 11% on
# the GQA d = 64 grid's 32 q / 8 kv batch 16 N = 1024 row (8 -> 64 planes a group) while gaining on other many-plane
# shapes; the schedule model has no memory term. Here each of eight shapes runs under forced plane groups
# (FB_SM90_BWD64_PG=G, the L2 group to every plane), two rounds in rotated order, flash-sm90 only, verified, to see
# what a group of G planes costs beside what the model says it gains. No rule: the numbers set call D's bound.
R=$OUT/C; mkdir -p $R/ab; export DEADLINE=${DEADLINE:-400}
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
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -l 1 \
  > $R/smi.csv 2>/dev/null &
smi=$!
c=results/h200/s36/calls
declare -A G=(
  [grid-b16-h32-kv8-n1024]="8 16 32 64 128" [mpc-b6-h32-kv8-n1000]="8 16 24 48" [mpc-b12-h16-kv2-n2200]="1 4 8 12 24"
  [pgc-b1-h40-kv8-n7100]="1 2 4 8" [grid-b4-h32-kv8-n4096]="2 4 8 16 32" [pgs-b16-h16-kv4-n1024]="8 16 32 64"
  [pgs-b8-h40-kv8-n1500]="4 8 16 32 64" [pgs-b24-h16-kv4-n1200]="7 14 28 56 96")
for r in 1 2; do
  for s in grid-b16-h32-kv8-n1024 mpc-b6-h32-kv8-n1000 mpc-b12-h16-kv2-n2200 pgc-b1-h40-kv8-n7100 grid-b4-h32-kv8-n4096 \
           pgs-b16-h16-kv4-n1024 pgs-b8-h40-kv8-n1500 pgs-b24-h16-kv4-n1200; do
    gs=${G[$s]}; [ $r = 2 ] && gs=$(echo $gs | tr ' ' '\n' | tac | tr '\n' ' ')
    for g in $gs; do
      step g$g-$s-$r 30 env FB_SM90_BWD64_PG=$g $fb run $c/$s.json --kernels flash-sm90 --no-ceilings -q \
        -o $R/ab/g$g-$s-$r.json
    done
    step def-$s-$r 30 $fb run $c/$s.json --kernels flash-sm90 --no-ceilings -q -o $R/ab/def-$s-$r.json
  done
done
kill $smi 2>/dev/null
python3 - $R/ab > $R/table.txt <<'PY'
import glob, json, math, os, re, sys
d = sys.argv[1]
t = {}
for f in glob.glob(os.path.join(d, "*.json")):
    m = re.match(r"(g\d+|def)-(.*)-(\d)\.json$", os.path.basename(f))
    for r in json.load(open(f))["results"]:
        if r.get("status") == "ok" and r.get("verified") is True:
            t.setdefault(m.group(2), {}).setdefault(m.group(1), []).append(r["time_ms"]["median"])
print("median time (ms) per forced plane group G, geomean of two rounds; def = the default's choice; (unverified rows left out)")
for s, v in sorted(t.items()):
    gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
    keys = sorted([k for k in v if k != "def"], key=lambda k: int(k[1:])) + (["def"] if "def" in v else [])
    print(f"{s:28s} " + "  ".join(f"{k}:{gm(v[k]):.4f}" for k in keys))
PY
cat $R/table.txt
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
