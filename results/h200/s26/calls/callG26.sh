#!/usr/bin/env bash
# Session 26 call G (one H200; issue 13). Main's binaries (commit.txt), built on the lead's machine and carried.
# Call D read the portable flash backward 0.904x FlashAttention-2 at 40 q / 8 kv heads, batch 2, N = 2000, causal
# (40 / 1 and 24 / 4 at the same lengths 1.30x). The GQA head split (flash_bwd.cu head_split(), the shared model in
# common/head_split.h) picks how many subsets a K/V plane's query heads take; this call forces each divisor of the
# group (FB_FLASH_BWD_SPLIT=S) beside the shipped choice and torch-flash, on six shapes no config names (groups 4, 5,
# 6, 7; N 1500-4500; causal or not), two interleaved rounds (bwdsplit_table.py). Diagnostic, nothing decided before it.
# Then ncu of torch-cudnn's forward at batch 3 x 12 heads, d = 128, N = 1280 (flash-sm90 0.95-0.99x there in session
# 25's call B): its kernel name and launch shape.
R=$OUT/G; mkdir -p $R; export DEADLINE=${DEADLINE:-420}
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
declare -A splits=([b2-h40-kv8-n2000]="1 5" [b2-h40-kv8-n4500]="1 5" [b3-h20-kv4-n1800]="1 5"
                   [b2-h24-kv4-n3000]="1 2 3 6" [b1-h56-kv8-n3500]="1 7" [b4-h32-kv8-n1500]="1 2 4")
for r in 1 2; do
  for s in b2-h40-kv8-n2000 b2-h40-kv8-n4500 b3-h20-kv4-n1800 b2-h24-kv4-n3000 b1-h56-kv8-n3500 b4-h32-kv8-n1500; do
    spec=$c/bwdsplit-$s.json
    step ship-$s-$r 40 $fb run $spec --no-ceilings -q -o $R/ship-$s-$r.json
    for S in ${splits[$s]}; do
      step split$S-$s-$r 40 env FB_FLASH_BWD_SPLIT=$S $fb run $spec --no-ceilings -q -o $R/split$S-$s-$r.json
    done
    step peers-$s-$r 40 python3 scripts/peers.py $spec --backends flash -o $R/peers-$s-$r.json
  done
done
python3 $c/bwdsplit_table.py $R | tee $R/table.txt
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
step ncu-torch-cudnn 40 $ncu --clock-control none --kernel-name regex:fprop --launch-skip 1 --launch-count 1 \
  --section LaunchStats --section Occupancy -f -o $R/ncu-torch-cudnn python3 results/h200/s25/calls/torch_cudnn_one.py \
  3 12 1280 128
if [ -f $R/ncu-torch-cudnn.ncu-rep ]; then
  timeout 10 $ncu --import $R/ncu-torch-cudnn.ncu-rep --page details --csv > $R/ncu-torch-cudnn.csv 2>&1
  grep -o '"[^"]*fprop[^"]*"' $R/ncu-torch-cudnn.csv | sort -u | head -2
  grep -E '"(Grid Size|Block Size|Registers Per Thread|Dynamic Shared Memory Per Block|Duration|Waves Per SM)"' \
    $R/ncu-torch-cudnn.csv | awk -F'","' '{print $(NF-2) " " $(NF-1) " " $NF}' | head -8
fi
rm -f $R/*.ncu-rep
kill $smi
tar czf $OUT/G.tgz -C $OUT G && rm -rf $R; echo "done t=$((SECONDS-t0))"
