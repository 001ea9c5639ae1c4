#!/usr/bin/env bash
# Session 25 call C (one H200; issue 13). Binaries built on the lead's machine for sm_90a and carried: main c028895
# plus the head-split change below, uncommitted until measured (commit.txt).
#  1. Call B found flash-sm90's non-causal d = 128 backward at 40 q / 8 kv heads, batch 2, N = 4500 at 0.843x
#     torch-cudnn (both rounds) while 40 / 1 at the same N is level: the head split's model (head_split(),
#     common/head_split.h) splits 40 / 8 into 5 one-head subsets (2880 units, each with its fp32 dK / dV partials)
#     because it sets them against the unsplit grid with a whole last wave, which the query tail (session 24) now
#     splits at far lower cost. The change: non-causal d = 128 passes model the unsplit grid with its query tail
#     (HeadSplitModel::unsplit_query_tail); the split's 5% gain is then gone on many non-causal GQA shapes.
#  2. GPU tests [bwd_gqa], [sm90_qtail], [bwd128] on this binary (the workspace follows the new choice).
#  3. A/B on ten shapes no config names (split-*.json: eight the change flips to no split, groups 3-9; two it leaves
#     split: 40 / 1 N = 4500 (5), 64 / 8 N = 1536 (4), where both settings run the same split: same-kernel controls):
#     the new default against FB_SM90_BWD_SPLIT=<the old choice>, two interleaved rounds, verified. Rule (written
#     before the call): the change ships if, over the eight flipped shapes, old / new time >= 1.02x in geomean and no
#     flipped shape is below 0.99x in both rounds. Prediction (the model, 4 steps a unit): 1.0-1.1x on the flipped
#     shapes (40 / 8 N = 4500 ~1.18x if torch-cudnn's time is what the grid allows), the controls 1.00 +- 0.02.
#  4. Diagnostic: the portable flash forward at d = 128 (call B: 0.81x FlashAttention-2 at batch 3 x 12 heads N = 1280)
#     on flashfwd1280.json beside torch-flash, two rounds.
R=$OUT/C; mkdir -p $R; export DEADLINE=${DEADLINE:-400}
set -uo pipefail
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {  # step NAME MAX_SECONDS CMD...: skipped when under MAX/2 is left
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt $(( max / 2 )) ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; timeout -k 3 $max "$@" > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"
}
tar xJf out/b.txz
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
fb=$src/build-dev/flashbench
cat out/commit.txt > $R/commit.txt 2>/dev/null
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 > $R/smi.csv 2>&1 &
smi=$!
c=results/h200/s25/calls
step tests 150 $src/build-dev/tests/flashbench_gpu_tests "[bwd_gqa],[sm90_qtail],[bwd128]"
tail -2 $R/tests.log
# shape: the old rule's split (the new rule's: 1 but for the two controls)
declare -A old=([b2-h40-kv8-n4500]=5 [b2-h24-kv4-n5120]=2 [b2-h24-kv4-n2500]=3 [b3-h16-kv2-n4096]=2
                [b1-h20-kv4-n5300]=5 [b2-h28-kv4-n3100]=7 [b1-h48-kv8-n3100]=3 [b3-h36-kv4-n2300]=3
                [b2-h40-kv1-n4500]=5 [b1-h64-kv8-n1536]=4)
shapes="b2-h40-kv8-n4500 b2-h24-kv4-n5120 b2-h24-kv4-n2500 b3-h16-kv2-n4096 b1-h20-kv4-n5300 b2-h28-kv4-n3100
        b1-h48-kv8-n3100 b3-h36-kv4-n2300 b2-h40-kv1-n4500 b1-h64-kv8-n1536"
for r in 1 2; do
  order="old new"; [ $r -eq 2 ] && order="new old"
  for s in $shapes; do
    for w in $order; do
      if [ $w = new ]; then step $w-$s-$r 40 $fb run $c/split-$s.json --no-ceilings -q -o $R/$w-$s-$r.json
      else step $w-$s-$r 40 env FB_SM90_BWD_SPLIT=${old[$s]} $fb run $c/split-$s.json --no-ceilings -q -o $R/$w-$s-$r.json; fi
    done
  done
done
python3 $c/split_table.py $R $shapes | tee $R/table.txt
for r in 1 2; do
  step fwd1280-$r 60 $fb run $c/flashfwd1280.json --no-ceilings -q -o $R/fwd1280-$r.json
  step peers1280-$r 60 python3 scripts/peers.py $c/flashfwd1280.json --backends flash -o $R/peers1280-$r.json
done
python3 scripts/ratios.py --round $R/fwd1280-1.json $R/peers1280-1.json --round $R/fwd1280-2.json $R/peers1280-2.json \
  --pair flash:torch-flash > $R/rounds1280.txt 2>&1; cat $R/rounds1280.txt | head -12
kill $smi
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
