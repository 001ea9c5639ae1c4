#!/usr/bin/env bash
# PREPARED in session 26 for session 27, NOT RUN (issue 13, diagnostic). Carry main's binaries (commit.txt = HEAD).
# The portable forward at d = 128 is 0.958-0.986x FlashAttention-2 on ragged last waves at small batch (batch 3 x 12
# heads, N = 1100 / 1280: 324 / 360 blocks on 264 slots; session 26's call E), with the same occupancy as FA2's
# kernel (call F's ncu). Where the time goes: per-SM block counts and active cycles (is the last wave spread one block
# an SM, or two on fewer SMs?), the kernel's duration, for FA2's kernel (torch_flash_one.py) and ours, one launch each.
R=$OUT/L; mkdir -p $R
tar xJf out/b.txz
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
fb=$src/build-dev/flashbench
cat out/commit.txt > $R/commit.txt 2>/dev/null
c=results/h200/s26/calls
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
m=gpu__time_duration.sum,sm__ctas_launched.sum,sm__ctas_launched.max,sm__ctas_launched.min,sm__cycles_active.max,sm__cycles_active.min,sm__cycles_active.avg,sm__cycles_elapsed.max
for n in 1100 1280 1792; do
  timeout 40 $ncu --clock-control none --kernel-name regex:flash_fwd --launch-skip 1 --launch-count 1 --metrics $m \
    python3 $c/torch_flash_one.py 3 12 $n 128 > $R/ncu-torch-$n.log 2>&1
  timeout 40 $ncu --clock-control none --kernel-name regex:flash_fwd_tc --launch-skip 1 --launch-count 1 --metrics $m \
    $fb run $c/epi-odd.json --filter "^b3-h12-kv12-n$n-d128-bf16-full-fwd\$" --warmup 1 --reps 1 --warmup-time 0 \
    --no-ceilings -q -o $R/ncu-flash-$n-run.json > $R/ncu-flash-$n.log 2>&1
  for k in torch flash; do echo "--- $k N=$n"; grep -E "gpu__time|sm__ctas|sm__cycles" $R/ncu-$k-$n.log; done
done
tar czf $OUT/L.tgz -C $OUT L && rm -rf $R
