#!/usr/bin/env bash
# Session 27 call D (one H200; issue 13). Main's binaries with call C's shipped rule (R1: the portable backward's
# non-causal d = 128 head-split cap is the group) and the tail-split GPU test's two new MHA rows (commit.txt).
#  1. GPU tests [bwd_gqa] (the forced head splits, the cap check, the tail split's rows: on 132 SMs at least two must
#     split now, where session 26's and call C's runs warned that none did).
#  2. The portable backward on session 25's unnamed GQA shapes (unnamed27-gqa-bwd.json: 40 q on 8 / 1 kv heads,
#     batch 2, N 2000 / 4500, d = 128, bf16, both masks; session 26's call D read 40 / 1 N = 4500 non-causal 0.969x
#     and 40 / 8 causal N = 2000 / 4500 0.904x / 0.972x FlashAttention-2 before that session's and this one's
#     head-split changes) beside torch-flash, two interleaved rounds, every row verified.
R=$OUT/D; mkdir -p $R; export DEADLINE=${DEADLINE:-200}
set -uo pipefail
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {  # step NAME MAX_SECONDS CMD...: skipped when under MAX/2 is left
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt $(( max / 2 )) ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; timeout -k 3 $max "$@" < /dev/null > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"
}
tar xJf out/b.txz
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
fb=$src/build-dev/flashbench
cat out/commit.txt > $R/commit.txt 2>/dev/null
step tests 120 $src/build-dev/tests/flashbench_gpu_tests "[bwd_gqa]"
tail -3 $R/tests.log; grep -c "no run of flash's tail split" $R/tests.log
g=results/h200/s27/calls/unnamed27-gqa-bwd.json
for r in 1 2; do
  step fb-$r 40 $fb run $g -q -o $R/fb-$r.json
  step peers-$r 40 python3 scripts/peers.py $g --backends flash -o $R/peers-$r.json
done
python3 scripts/ratios.py --round $R/fb-1.json $R/peers-1.json --round $R/fb-2.json $R/peers-2.json \
  --pair flash:torch-flash > $R/rounds.txt 2>&1
cat $R/rounds.txt
tar czf $OUT/D.tgz -C $OUT D && rm -rf $R; echo "done t=$((SECONDS-t0))"
