#!/usr/bin/env bash
# Session 35, call E (one H200; issue 13): call D's timing, again. Call D's racecheck ran past its step's limit and its
# process outlived the step (timeout stops its child, not the sanitized process), so its timed rows ran beside it
# (2x slower, the peers' too) and are not used. The same binaries (commit.txt): call A's held-out GQA/MQA spec
# (unnamed35-gqa.json) and two fresh shapes (final-*.json) beside torch-cudnn and FlashAttention-2, two rounds; no
# sanitizer in this call.
R=$OUT/E; mkdir -p $R; export DEADLINE=${DEADLINE:-225}
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
nvidia-smi --query-compute-apps=pid,name --format=csv > $R/apps-before.csv 2>&1
c=results/h200/s35/calls
for r in 1 2; do
  for s in unnamed35-gqa final-b1-h48-kv3-n4800 final-b2-h20-kv1-n3700; do
    step fb-$s-$r 45 $fb run $c/$s.json -q -o $R/fb-$s-$r.json
    step peers-$s-$r 35 python3 scripts/peers.py $c/$s.json --backends flash,cudnn -o $R/peers-$s-$r.json
  done
done
for s in unnamed35-gqa final-b1-h48-kv3-n4800 final-b2-h20-kv1-n3700; do
  if [ -e $R/fb-$s-2.json ] && [ -e $R/peers-$s-2.json ]; then
    python3 scripts/ratios.py --round $R/fb-$s-1.json $R/peers-$s-1.json --round $R/fb-$s-2.json $R/peers-$s-2.json \
      --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash > $R/rounds-$s.txt 2>&1
  else
    python3 scripts/ratios.py --round $R/fb-$s-1.json $R/peers-$s-1.json \
      --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash > $R/rounds-$s.txt 2>&1
  fi
  echo "== $s"; grep -A10 "^summary" $R/rounds-$s.txt | cut -c1-200
done
tar czf $OUT/E.tgz -C $OUT E && rm -rf $R; echo "done t=$((SECONDS-t0))"
