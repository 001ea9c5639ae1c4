#!/usr/bin/env bash
# Session 68, call L (one Hopper GPU; issue 13): flash-sm90's inference forward. Since session 68 the C API takes
# call.lse NULL in a forward (capi.h) and fb_torch asks for no LSE where no backward can follow, as PyTorch's cuDNN
# computes none under no_grad (peers.py's default forward timing); flash-sm90 then writes O only. Every forward of
# sessions 61-67's one-loop tables wrote its LSE while torch-cudnn's wrote none.
#   gpu-nolse: the GPU test [nolse] (O bit for bit as with the LSE, and no LSE written: the 16-bit kernel at d 64 /
#              128 / 256, the tail split's merge, fp32, fp8), then under compute-sanitizer memcheck
#   fb-torch: tests/gpu_fb_torch.py (peers.py's verdicts through fb_torch; every kernel's inference forward against
#             its training one, bit for bit, and asked for its LSE)
#   lse: the bf16 and fp16 grids' forwards (24 rows each) in one peers.py loop, reps interleaved, torch-cudnn,
#        flash_sm90 (no LSE) and flash_sm90_lse (lse_probe.py: the same kernel asked for its LSE), two rounds (the
#        second with ours first); paired.py: flash_sm90 against flash_sm90_lse (what skipping the LSE buys: above
#        1.0 faster without it) and each against torch-cudnn
# No rule: what the inference forward writes is the API's, not a tuning choice; the call measures what it changes
# in the tables' forward rows. About 300 s on an H100.
set -uo pipefail
export DEADLINE=${DEADLINE:-330}
source scripts/call_step.sh
call_begin $OUT/L
step gpu-nolse 60 $gt "[nolse]"
tail -2 $R/gpu-nolse.log
step memcheck-nolse 90 compute-sanitizer --tool memcheck --error-exitcode 9 $gt "[nolse]"
grep -E "ERROR SUMMARY|test cases" $R/memcheck-nolse.log | tail -2
step fb-torch 120 python3 tests/gpu_fb_torch.py
grep -E "problems|FAIL" $R/fb-torch.log | head -8
smi_start
for g in bf16 fp16; do
  src=configs/issue13-h200.json
  [ $g = fp16 ] && src=configs/issue13-fp16-h200.json
  spec_for $src $R/$g-fwd.json flash-sm90 fwd
  for r in 1 2; do
    order=()
    [ $r = 2 ] && order=(--callables-first)
    step lse-$g-$r 70 python3 scripts/peers.py $R/$g-fwd.json --backends cudnn \
      --callable scripts/fb_torch.py:flash_sm90 --callable results/h200/s68/calls/lse_probe.py:flash_sm90_lse \
      --busy-hold --interleave "${order[@]}" -o $R/lse-$g-$r.json
  done
  python3 scripts/paired.py $R/lse-$g-1.json $R/lse-$g-2.json --pair flash_sm90:flash_sm90_lse \
    --pair flash_sm90:torch-cudnn --pair flash_sm90_lse:torch-cudnn --json $R/paired-$g.json > $R/paired-$g.log
  grep -E ": ahead [0-9]+, level" $R/paired-$g.log | sed "s/^/$g: /"
done
smi_stop
call_end L
