#!/usr/bin/env bash
# Session 40, call B (one H200; issue 13): the binaries of commit.txt (big8 flash-sm90's default since call A). Every
# GPU test as built; [sm90_big8] under FB_SM90_BWD_SPLIT=nobig8 and bar5, [sm90_causal8] under bar5; six shapes no
# config names (held40-*.json, seed 4040, drawn after the change, held40.py) beside the peers, one round; then three
# explorations (three interleaved rounds each, not a rule's call): flash-sm90 on session 39's 4 x 10 / 1 N = 9300 fp16
# causal row (x40-b4-*) with forced head splits 2 / 10; on session 38's 1 x 32 / 8 N = 16384 non-causal row (x40-b1-*)
# with splits 1 / 2 / 4 forced and the query tail off; flash on 1 x 8 / 8 N = 16384 d = 64 (y40-*) under tail / lean.
R=$OUT/B; mkdir -p $R/held $R/x1 $R/x2 $R/y1; export DEADLINE=${DEADLINE:-540}
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
step tests-all 200 $gt
step tests-big8-nobig8 40 env FB_SM90_BWD_SPLIT=nobig8 $gt "[sm90_big8]"
step tests-big8-bar5 40 env FB_SM90_BWD_SPLIT=bar5 $gt "[sm90_big8],[sm90_causal8]"
step tests-word-big8 10 env FB_SM90_BWD_SPLIT=big8 $fb run $c/x40-b4-h10-kv1-n9300.json -q --no-ceilings -o $R/refused.json
for t in all big8-nobig8 big8-bar5; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
echo "big8 word: $(tail -1 $R/tests-word-big8.log); written: $(ls $R/refused.json 2>/dev/null || echo none)"
for s in $(cd $c && ls held40-*.json | sed 's/\.json$//'); do
  step fb-$s 40 $fb run $c/$s.json -q -o $R/held/fb-$s.json
  step peers-$s 30 python3 scripts/peers.py $c/$s.json --backends flash,cudnn -o $R/held/peers-$s.json
done
# explorations: DIR SPEC ENVVAR "VARIANT=WORD ..." (def: unset); rounds alternate the order
explore() {
  local dir=$1 s=$2 var=$3 vs=$4 order
  for r in 1 2 3; do
    order=$vs; [ $r = 2 ] && order=$(echo $vs | tr ' ' '\n' | tac | tr '\n' ' ')
    for vw in $order; do
      local v=${vw%%=*} w=${vw#*=}
      step $dir-$v-$r 40 env $var=$w $fb run $c/$s.json --no-ceilings -q -o $R/$dir/$v-$s-$r.json
    done
  done
}
explore x1 x40-b4-h10-kv1-n9300 FB_SM90_BWD_SPLIT "def= s2=2 s10=10"
explore x2 x40-b1-h32-kv8-n16384 FB_SM90_BWD_SPLIT "def= s1=1 s2=2 s4=4"
explore y1 y40-b1-h8-kv8-n16384 FB_FLASH_BWD "def= tail=tail lean=lean"
for r in 1 2 3; do step x2-qoff-$r 40 env FB_SM90_BWD_QTAIL=off $fb run $c/x40-b1-h32-kv8-n16384.json --no-ceilings -q \
  -o $R/x2/qoff-x40-b1-h32-kv8-n16384-$r.json; done
step peers-x1 30 python3 scripts/peers.py $c/x40-b4-h10-kv1-n9300.json --backends cudnn -o $R/x1/peers-x40-b4-h10-kv1-n9300.json
step peers-x2 30 python3 scripts/peers.py $c/x40-b1-h32-kv8-n16384.json --backends cudnn -o $R/x2/peers-x40-b1-h32-kv8-n16384.json
step peers-y1 30 python3 scripts/peers.py $c/y40-b1-h8-kv8-n16384.json --backends flash -o $R/y1/peers-y40-b1-h8-kv8-n16384.json
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
print("held-out shapes (seed 4040): peer time / ours (median), one round; - : a side missing or not verified")
print(f"{'case':52s} {'sm90/t-cudnn':>12s} {'sm90/cudnn':>11s} {'flash/t-fa2':>11s}")
for key in sorted({k for k, _ in ours}):
    def ratio(a, b, src):
        return f"{src[(key, b)] / ours[(key, a)]:.3f}" if (key, a) in ours and (key, b) in src else "-"
    print(f"{key:52s} {ratio('flash-sm90', 'torch-cudnn', peer):>12s} {ratio('flash-sm90', 'cudnn', ours):>11s} "
          f"{ratio('flash', 'torch-flash', peer):>11s}")
PY
ab=results/h200/s29/calls/ab_table.py
python3 $ab $R/x1 flash-sm90 torch-cudnn def s2 s10 >> $R/table.txt 2>&1
python3 $ab $R/x2 flash-sm90 torch-cudnn def s1 s2 s4 qoff >> $R/table.txt 2>&1
python3 $ab $R/y1 flash torch-flash def tail lean >> $R/table.txt 2>&1
grep -v "^rule\|^  [a-z0-9]* *\(non-\)\?causal *rows" $R/table.txt | cut -c1-160
find $R -size 0 -delete
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
