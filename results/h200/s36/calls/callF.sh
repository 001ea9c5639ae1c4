#!/usr/bin/env bash
# Session 36, call F (one H200; issue 13): a measurement on the final binaries (commit.txt): eight shapes no config
# names, drawn after session 36's changes (unnamed36-*.json, seed 3699: MHA, GQA and MQA, d = 64 and 128, bf16 and
# fp16, causal or not, forward and backward), beside torch-cudnn and FlashAttention-2, one round each; every row
# verified. To find the next losses, not to judge a change.
R=$OUT/F; mkdir -p $R; export DEADLINE=${DEADLINE:-400}
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
c=results/h200/s36/calls
for s in $(cd $c && ls unnamed36-*.json | sed 's/\.json$//'); do
  step fb-$s 40 $fb run $c/$s.json -q -o $R/fb-$s.json
  step peers-$s 30 python3 scripts/peers.py $c/$s.json --backends flash,cudnn -o $R/peers-$s.json
done
args=""
for s in $(cd $c && ls unnamed36-*.json | sed 's/\.json$//'); do
  [ -f $R/fb-$s.json ] && [ -f $R/peers-$s.json ] && python3 scripts/ratios.py --round $R/fb-$s.json $R/peers-$s.json \
    --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash > $R/ratios-$s.txt 2>&1
  grep -A40 "^  b" $R/ratios-$s.txt | grep -v "^--" | awk '{print $1, $2}' | head -24 > /dev/null
done
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
tar czf $OUT/F.tgz -C $OUT F && rm -rf $R; echo "done t=$((SECONDS-t0))"
