#!/usr/bin/env bash
# Session 26 call F (one H200; issue 13). Main plus the change measured in call E (TcTiles<128>::kShortKeys =
# kEveryLaunch: the portable flash forward at d = 128 takes the lean prologue and epilogue on every launch), built on
# the lead's machine and carried (commit.txt: the base commit; the change uncommitted until this call passes).
#  1. GPU tests of the portable forward ([flashfwd]; the d = 128 non-causal test now has 1280 and 2100 x 3001 rows),
#     as shipped and under FB_FLASH_FWD_PROBE=nokpipe; compute-sanitizer memcheck on d = 128 launches past 1024 keys.
#  2. The new default against band4 (every word's baseline: on launches past 1024 keys a row the old default's kernel;
#     on shorter ones the kernel without the lean bits) on call E's shapes of N 1100-2048, two interleaved rounds.
#  3. ncu (diagnostic): FlashAttention-2's forward kernel (torch-flash) and ours at batch 3 x 12 heads, d = 128,
#     N = 1100 / 1280 (ours 0.95 / 0.98x after the change): grid, block, registers, shared memory, occupancy.
R=$OUT/F; mkdir -p $R; export DEADLINE=${DEADLINE:-420}
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
step tests 150 $src/build-dev/tests/flashbench_gpu_tests "[flashfwd]"
step tests-nokpipe 120 env FB_FLASH_FWD_PROBE=nokpipe $src/build-dev/tests/flashbench_gpu_tests "[flashfwd]"
tail -3 $R/tests.log $R/tests-nokpipe.log
step memcheck 60 compute-sanitizer --tool memcheck --leak-check full $fb run $c/san-fwd128.json --no-ceilings -o $R/memcheck.json
tail -2 $R/memcheck.log
f='n(1100|1280|1400|1792|2048)-'
for r in 1 2; do
  for s in epi-odd epi-gqa epi-grid; do
    step new-$s-$r 40 $fb run $c/$s.json --filter "$f" --no-ceilings -q -o $R/epi-$s-$r.json
    step old-$s-$r 40 env FB_FLASH_FWD_PROBE=band4 $fb run $c/$s.json --filter "$f" --no-ceilings -q -o $R/def-$s-$r.json
  done
done
# epi_table.py: def-* (here band4, the old default's kernel past 1024 keys) time over epi-* (here the new default).
python3 $c/epi_table.py $R > $R/table.txt 2>&1; cat $R/table.txt
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for n in 1100 1280; do
  step ncu-torch-$n 30 $ncu --clock-control none --kernel-name regex:flash_fwd --launch-skip 1 --launch-count 1 \
    --section LaunchStats --section Occupancy --section SpeedOfLight -f -o $R/ncu-torch-$n python3 $c/torch_flash_one.py 3 12 $n 128
  step ncu-flash-$n 30 $ncu --clock-control none --kernel-name regex:flash_fwd_tc --launch-skip 1 --launch-count 1 \
    --section LaunchStats --section Occupancy --section SpeedOfLight -f -o $R/ncu-flash-$n $fb run $c/epi-odd.json \
    --filter "^b3-h12-kv12-n$n-d128-bf16-full-fwd\$" --warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/ncu-flash-$n-run.json
  for k in torch flash; do
    [ -f $R/ncu-$k-$n.ncu-rep ] && timeout 10 $ncu --import $R/ncu-$k-$n.ncu-rep --page details --csv > $R/ncu-$k-$n.csv 2>&1
    echo "--- ncu $k N=$n"; grep -E '"(Grid Size|Block Size|Registers Per Thread|Dynamic Shared Memory Per Block|Static Shared Memory Per Block|Duration|Theoretical Occupancy|Achieved Occupancy|Block Limit Registers|Block Limit Shared Mem|Waves Per SM)"' \
      $R/ncu-$k-$n.csv 2>/dev/null | awk -F'","' '{print $(NF-2) " " $(NF-1) " " $NF}' | head -14
  done
done
rm -f $R/*.ncu-rep
kill $smi
tar czf $OUT/F.tgz -C $OUT F && rm -rf $R; echo "done t=$((SECONDS-t0))"
