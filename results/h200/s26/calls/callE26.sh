#!/usr/bin/env bash
# Session 26 call E (one H200; issue 13). Main's binaries (commit.txt), built on the lead's machine and carried.
# Call D (results/h200/s26/callD/) found the portable flash forward at d = 128 N = 1280 level with FlashAttention-2
# under FB_FLASH_FWD_PROBE=epi,pro (the lean prologue and epilogue that launches of <= 1024 keys a row already run:
# b3 0.979 / 0.976x, b12 1.000 / 1.002x) where the shipped kernel reads 0.817 / 0.818x and 0.950 / 0.965x.
# Session 14 had measured epi,pro on long launches at 0.985-0.991x (before kFwdFragPipe). This call measures it on
# long launches now: three interleaved rounds (shipped, epi,pro) of epi-grid.json (16k tokens, N 2k-16k, bf16 / fp16,
# causal or not), epi-odd.json (batch 3 / 12 x 12 heads, N 1100-6000) and epi-gqa.json (20 q / 4 kv heads), with
# FlashAttention-2 (scripts/peers.py torch-flash) beside them in rounds 1 and 2.
# Rule, written before the call: a class of launches (non-causal / causal, above 1024 keys a row) takes epi,pro if
# its rows' combined ratios (geometric mean over the three rounds) have a geometric mean >= 1.005 and none is below
# 0.985; where the gain holds only up to some key count, kShortKeys is raised to that count instead.
R=$OUT/E; mkdir -p $R; export DEADLINE=${DEADLINE:-540}
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
c=results/h200/s26/calls
for r in 1 2 3; do
  for s in epi-grid epi-odd epi-gqa; do
    step def-$s-$r 60 $fb run $c/$s.json --no-ceilings -q -o $R/def-$s-$r.json
    step epi-$s-$r 60 env FB_FLASH_FWD_PROBE=epi,pro $fb run $c/$s.json --no-ceilings -q -o $R/epi-$s-$r.json
    [ $r -le 2 ] && step peers-$s-$r 60 python3 scripts/peers.py $c/$s.json --backends flash -o $R/peers-$s-$r.json
  done
done
python3 $c/epi_table.py $R | tee $R/table.txt
for v in def epi; do
  python3 scripts/ratios.py --round $R/$v-epi-{grid,odd,gqa}-1.json $R/peers-epi-{grid,odd,gqa}-1.json \
    --round $R/$v-epi-{grid,odd,gqa}-2.json $R/peers-epi-{grid,odd,gqa}-2.json \
    --pair flash:torch-flash > $R/rounds-$v.txt 2>&1
  echo "[$v]"; grep -A3 "^summary" $R/rounds-$v.txt
done
kill $smi
tar czf $OUT/E.tgz -C $OUT E && rm -rf $R; echo "done t=$((SECONDS-t0))"
