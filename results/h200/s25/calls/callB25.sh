#!/usr/bin/env bash
# Session 25 call B (one H200; issue 13: shapes that no config names; a measurement, no kernel changed). Binaries of
# main (commit.txt) built on the lead's machine for sm_90a and carried. unnamed25-mha.json (batch 3, model dim 1536:
# 24 heads at d = 64, 12 at d = 128, N 1280 / 2560 / 4800, bf16 / fp16, causal or not, fwd / bwd: 48 cases) and
# unnamed25-gqa.json (40 q heads on 8 or 1 kv heads, d = 128, batch 2, N 2000 / 4500, bf16: 16 cases), flash,
# flash-sm90 and the in-binary cudnn, every row verified, beside the PyTorch peers (torch-cudnn, torch-flash), two
# interleaved rounds (session 23's protocol). What it is for: where the kernels stand after session 24's defaults
# on shapes chosen after them (no kernel or default was tuned on these). Then ncu of cuDNN's forward kernels (below).
R=$OUT/B; mkdir -p $R; export DEADLINE=${DEADLINE:-575}
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
for r in 1 2; do
  step fb-mha-$r 120 $fb run $c/unnamed25-mha.json -q -o $R/fb-mha-$r.json
  step peers-mha-$r 100 python3 scripts/peers.py $c/unnamed25-mha.json --backends flash,cudnn -o $R/peers-mha-$r.json
  step fb-gqa-$r 60 $fb run $c/unnamed25-gqa.json -q -o $R/fb-gqa-$r.json
  step peers-gqa-$r 60 python3 scripts/peers.py $c/unnamed25-gqa.json --backends flash,cudnn -o $R/peers-gqa-$r.json
done
kill $smi
# ncu (diagnostic, after every timed step): the launch shape of cuDNN's forward kernels at the row furthest behind
# (bf16 d = 128 non-causal b16-h16 N = 1k): torch-cudnn's (PyTorch's own cuDNN) and the in-binary cudnn's (9.14), and
# ours, one launch each (the second fprop launch: after a warm-up one), kernel name, grid, block, registers, shared
# memory, duration, SM clock.
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
if [ "$(left)" -ge 60 ]; then
  timeout 25 $ncu --clock-control none --kernel-name regex:fprop --launch-skip 1 --launch-count 1 --section LaunchStats \
    --section SpeedOfLight --section Occupancy -f -o $R/ncu-torch-cudnn python3 $c/torch_cudnn_one.py 16 16 1024 128 \
    > $R/ncu-torch-cudnn.log 2>&1
  for k in cudnn flash-sm90; do
    re=fprop; [ $k = flash-sm90 ] && re=flash_sm90_fwd_kernel
    timeout 20 $ncu --clock-control none --kernel-name regex:$re --launch-skip 1 --launch-count 1 --section LaunchStats \
      --section SpeedOfLight --section Occupancy -f -o $R/ncu-$k $fb run configs/issue13-h200.json \
      --filter '^b16-h16-kv16-n1024-d128-bf16-full-fwd$' --kernels $k --warmup 1 --reps 1 --warmup-time 0 --no-ceilings \
      -q -o $R/ncu-$k-run.json > $R/ncu-$k.log 2>&1
  done
  for k in torch-cudnn cudnn flash-sm90; do
    [ -f $R/ncu-$k.ncu-rep ] && timeout 5 $ncu --import $R/ncu-$k.ncu-rep --page details --csv > $R/ncu-$k-details.csv 2>&1
    echo "--- ncu $k"; grep -E '"(Grid Size|Block Size|Registers Per Thread|Dynamic Shared Memory Per Block|Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput)"' \
      $R/ncu-$k-details.csv 2>/dev/null | awk -F'","' '{print $5 " | " $(NF-2) " " $(NF-1) " " $NF}' | head -12
    grep -o '"[^"]*fprop[^"]*"\|"[^"]*flash_sm90_fwd_kernel[^"]*"' $R/ncu-$k-details.csv 2>/dev/null | sort -u | head -2
  done
  rm -f $R/*.ncu-rep
fi
for r in 1 2; do for g in mha gqa; do
  python3 scripts/ratios.py $R/fb-$g-$r.json $R/peers-$g-$r.json --pair flash-sm90:torch-cudnn --pair flash:torch-flash \
    > $R/sum-$g-$r.txt 2>&1; echo "== round $r $g"; grep -A6 "^summary" $R/sum-$g-$r.txt | tail -n 5
done; done
python3 scripts/ratios.py --round $R/fb-{mha,gqa}-1.json $R/peers-{mha,gqa}-1.json \
  --round $R/fb-{mha,gqa}-2.json $R/peers-{mha,gqa}-2.json \
  --pair flash-sm90:torch-cudnn --pair flash:torch-flash --pair flash-sm90:cudnn > $R/rounds.txt 2>&1; grep -A12 "^summary" $R/rounds.txt
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
