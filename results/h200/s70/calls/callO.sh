#!/usr/bin/env bash
# Session 70, call O (one Hopper GPU; issue 13): the probe `ones` on d = 64's inference forward (FwdTraits::kOnesSum:
# P V with N = 72 over V and a tile of ones, so O's accumulator carries P's row sums and the softmax adds none).
#   gpu-ones: the GPU test [ones] (O judged beside naive by the runner's rule on eight shapes, five of them d = 64
#             launches `ones` takes: causal, seq_q != seq_k both ways, GQA, fp16 / bf16, rows with no key; O off the
#             training forward's bits there, equal on launches it does not take); memcheck: [ones] and [nolse]
#             under compute-sanitizer
#   fb-torch: tests/gpu_fb_torch.py (with the C API's kernel names with settings: a removed word refused by the
#             kernel, `ones` within 2% of the default's O and off its bits)
#   ab: the bf16 and fp16 grids' forwards (24 rows each: d = 64 the rule's rows but for the tail split's launches,
#       which with d = 128 are the controls `ones` does not change) in one peers.py loop, reps interleaved,
#       torch-cudnn, flash_sm90 and ones_probe.py:flash_sm90_ones, two rounds (the second with ours first);
#       paired.py: ones against flash_sm90 (above 1.0: ones faster) and each against torch-cudnn; rule.py the
#       rule (docs/perf-notes.md, session 70, written before this call; its rows corrected in session 71)
# In that order, then fb-torch and the memcheck last (a short DEADLINE costs those, not the A/B's rounds); GRIDS
# (default "bf16 fp16") picks the A/B's grids. About 330 s on an H100.
set -uo pipefail
export DEADLINE=${DEADLINE:-360}
source scripts/call_step.sh
call_begin $OUT/O
step gpu-ones 90 $gt "[ones]"
tail -2 $R/gpu-ones.log
smi_start
for g in ${GRIDS:-bf16 fp16}; do
  src=configs/issue13-h200.json
  [ $g = fp16 ] && src=configs/issue13-fp16-h200.json
  spec_for $src $R/$g-fwd.json flash-sm90 fwd
  for r in 1 2; do
    order=()
    [ $r = 2 ] && order=(--callables-first)
    step ab-$g-$r 80 python3 scripts/peers.py $R/$g-fwd.json --backends cudnn \
      --callable scripts/fb_torch.py:flash_sm90 --callable results/h200/s70/calls/ones_probe.py:flash_sm90_ones \
      --busy-hold --interleave "${order[@]}" -o $R/ab-$g-$r.json
  done
  python3 scripts/paired.py $R/ab-$g-1.json $R/ab-$g-2.json --pair flash_sm90_ones:flash_sm90 \
    --pair flash_sm90:torch-cudnn --pair flash_sm90_ones:torch-cudnn --json $R/paired-$g.json > $R/paired-$g.log
  grep -E ": ahead [0-9]+, level" $R/paired-$g.log | sed "s/^/$g: /"
done
smi_stop
# Which d = 64 forwards the tail split splits here (rule.py's controls), from the library's own plan.
step splits 40 python3 results/h200/s70/calls/splits.py $R
tail -1 $R/splits.log
# Last, so that a short deadline costs these checks rather than the A/B's rounds.
step fb-torch 120 python3 tests/gpu_fb_torch.py
grep -E "problems|FAIL" $R/fb-torch.log | head -8
step memcheck-ones 120 compute-sanitizer --tool memcheck --error-exitcode 9 $gt "[ones],[nolse]"
grep -E "ERROR SUMMARY|test cases" $R/memcheck-ones.log | tail -2
python3 results/h200/s70/calls/rule.py $R > $R/rule.txt 2>&1
cat $R/rule.txt
call_end O
