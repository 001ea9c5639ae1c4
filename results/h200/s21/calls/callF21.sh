#!/usr/bin/env bash
# Session 21 final call F21 (one H200): main's final code (fp16pair128w2a the d = 128 non-causal fp32 backward default;
# pipe2 and edges removed), binaries built on the lead's machine for sm_90a and carried as in calls B and C. Every GPU
# test and the ctest words' reruns ([sm90tf32] under tf32pair and fp16pair128), the fp32 sweep beside PyTorch's fp32
# SDPA without any word, shapes no config names, memcheck / synccheck of the tiled set. The 16-bit kernels are F20's
# (session 20's final sweep stands for them).
R=$OUT/F21; mkdir -p $R; export DEADLINE=${DEADLINE:-300}
set -uo pipefail
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {  # name, limit (s), command...: the limit cut to what is left; skipped under 10 s
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt 10 ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; timeout -k 3 $max "$@" > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"; tail -n ${TAILN:-25} $R/$name.log
}
tar xJf out/b.txz && echo "unpacked binaries (t=$((SECONDS-t0)))"
src=$(cat out/srcdir.txt)  # the source folder the carried binaries were built in (their tests hold its paths)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
B=$src/build-dev; export BUILD=$B
cat out/commit.txt > $R/commit.txt 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi0.csv 2>&1
fb=$B/flashbench
TAILN=2 step fp32 45 $fb run configs/fp32-h200.json -q -o $R/fp32-h200.json
TAILN=2 step peersfp32 40 python3 scripts/peers.py configs/fp32-h200.json --backends efficient,math -o $R/peers-fp32-h200.json
python3 scripts/ratios.py $R/fp32-h200.json --pair flash-sm90:naive --pair flash:naive > $R/sum-fp32.txt 2>&1; grep -A8 "^summary" $R/sum-fp32.txt
TAILN=9 step oddshapes 40 bash results/h200/s21/calls/oddshapes21.sh $R
# Two more for the new default (the two-warpgroup fp16-pair kernel at d = 128 non-causal): GQA 6 / 3 at 777 x 1999
# with input scale 2, and 4100 queries on 97 keys (two key blocks, the last of 33).
TAILN=2 step odd-w2a-1 20 $fb verify --seq-q 777 --seq-k 1999 --batch 3 --heads 6 --kv-heads 3 --dim 128 --dtype fp32 --causal no --pass all --input-scale 2 -q -o $R/odd-777x1999-gqa6x3-d128-fp32-x2.json
TAILN=2 step odd-w2a-2 20 $fb verify --seq-q 4100 --seq-k 97 --batch 1 --heads 2 --dim 128 --dtype fp32 --causal no --pass all -q -o $R/odd-4100x97-h2-d128-fp32.json
TAILN=5 step san-tiled 40 bash scripts/sanitize.sh -e $fb -s configs/sanitize-tiled.json -t "memcheck synccheck" $R/san-tiled.json
TAILN=2 step tf32pair 20 env FB_SM90_FP32_BWD_PROBE=tf32pair $B/tests/flashbench_gpu_tests "[sm90tf32]"
TAILN=2 step fp16pair128 20 env FB_SM90_FP32_BWD_PROBE=fp16pair128 $B/tests/flashbench_gpu_tests "[sm90tf32]"
TAILN=3 step gputests 110 $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
tar czf $OUT/F21.tgz -C $OUT F21 && rm -rf $R; echo "done t=$((SECONDS-t0))"
