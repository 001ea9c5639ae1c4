#!/usr/bin/env bash
# Session 28, call C (one H200; issue 13). Main's binaries with kFwdVAfterS the d = 128 default (call B: vlate passed
# the rule in both classes) and the probe words novlate (d = 128 without it) and vlate64 (d = 64 with it)
# (commit.txt), built on the lead's machine and carried.
#  1. GPU tests of the portable forward ([flashfwd]) as shipped, under novlate and under vlate64; compute-sanitizer
#     (memcheck, racecheck, synccheck) on late-san.json as shipped and under vlate64.
#  2. Held-out check of the flip (shapes no config names and no earlier call timed: batch 6 x 10 heads N 900 / 1700 /
#     4500 bf16, 32 q / 8 kv heads N 2900 / 7000 fp16, causal or not): novlate against the default, two interleaved
#     rounds, FlashAttention-2 beside them. Rule, written before the call: the flip stays if these rows' geomean
#     (novlate time / default time) is >= 1.0 and no row is below 0.98.
#  3. vlate64 against the d = 64 default: late64-grid.json (16k tokens, N 512-16k, bf16) and late64-odd.json (batch 3
#     x 24 heads N 1280 / 4800, fp16), causal or not, three interleaved rounds, FlashAttention-2 beside them. Rule,
#     written before the call: a class (non-causal / causal) takes it at a geomean >= 1.005 with no row below 0.985.
R=$OUT/C; mkdir -p $R; export DEADLINE=${DEADLINE:-480}
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
gt=$src/build-dev/tests/flashbench_gpu_tests
cat out/commit.txt > $R/commit.txt 2>/dev/null
c=results/h200/s28/calls
step test-def 90 $gt "[flashfwd]"
step test-novlate 90 env FB_FLASH_FWD_PROBE=novlate $gt "[flashfwd]"
step test-vlate64 90 env FB_FLASH_FWD_PROBE=vlate64 $gt "[flashfwd]"
step san-def 120 bash scripts/sanitize.sh -e $fb -s $c/late-san.json -t "memcheck racecheck synccheck" \
  $R/san-def.json
step san-vlate64 100 env FB_FLASH_FWD_PROBE=vlate64 bash scripts/sanitize.sh -e $fb -s $c/late-san.json \
  -t "memcheck racecheck synccheck" $R/san-vlate64.json
for s in conf128-mha conf128-gqa late64-grid late64-odd; do
  step peers-$s 40 python3 scripts/peers.py $c/$s.json --backends flash -o $R/peers-$s.json
done
for r in 1 2 3; do
  if [ $r -le 2 ]; then
    for s in conf128-mha conf128-gqa; do
      step def-$s-$r 30 $fb run $c/$s.json --no-ceilings -q -o $R/def-$s-$r.json
      step novlate-$s-$r 30 env FB_FLASH_FWD_PROBE=novlate $fb run $c/$s.json --no-ceilings -q \
        -o $R/novlate-$s-$r.json
    done
  fi
  for s in late64-grid late64-odd; do
    step def-$s-$r 30 $fb run $c/$s.json --no-ceilings -q -o $R/def-$s-$r.json
    step vlate64-$s-$r 30 env FB_FLASH_FWD_PROBE=vlate64 $fb run $c/$s.json --no-ceilings -q \
      -o $R/vlate64-$s-$r.json
  done
done
mkdir -p $R/d128 $R/d64
cp $R/*-conf128-*.json $R/d128/ 2>/dev/null; cp $R/*-late64-*.json $R/d64/ 2>/dev/null
{ python3 $c/late_table.py $R/d128 novlate def; echo; python3 $c/late_table.py $R/d64 def vlate64; } \
  > $R/table.txt 2>&1
rm -rf $R/d128 $R/d64
for k in test-def test-novlate test-vlate64; do echo "$k: $(grep -E 'test cases|All tests' $R/$k.log | tail -1)"; done
for k in san-def san-vlate64; do echo "$k: $(tail -3 $R/$k.log | tr '\n' ' ')"; done
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
tar xzf $OUT/C.tgz -O C/table.txt 2>/dev/null | grep -v "^b" | tail -14
