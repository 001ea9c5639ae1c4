#!/usr/bin/env bash
# Session 54, call C (one Hopper GPU; its rule in docs/perf-notes.md, "Session 54", written before the call): the L2
# flush's clean mode (FB_L2_FLUSH=clean: the write, then a read of a second buffer as large, so that the timed window
# opens on clean lines) against the write alone, the default. Calls R-R3 found one short kernel in two modes 5-10% apart
# between processes under the write, nearly level with the read after it. Here: the GPU test of the mode, then four
# flashbench processes a mode on each of two short rows (d = 128 bf16 forward, 32 x 8 heads N = 1024 and 32 x 16 N =
# 512) and a long control (1 x 16 heads N = 16384), flash-sm90 and the in-binary cudnn, the modes interleaved; three
# peers.py processes a mode on the N = 1024 row (torch-cudnn). clean_rule.py reads them.
set -uo pipefail
export DEADLINE=${DEADLINE:-170}
source scripts/call_step.sh
call_begin $OUT/C
mkdir -p $R/specs
for row in 32,8,1024 32,16,512 1,16,16384; do
  IFS=, read -r b h n <<< "$row"
  echo "{\"name\": \"c-b$b-h$h-n$n\", \"seq\": [$n], \"batch\": [$b], \"heads\": [$h], \"head_dim\": [128],
    \"dtype\": [\"bf16\"], \"causal\": [false], \"pass\": [\"fwd\"], \"kernels\": [\"flash-sm90\", \"cudnn\"],
    \"warmup\": 5, \"reps\": 20, \"seed\": 42, \"verify\": true}" > $R/specs/c-b$b-h$h-n$n.json
done
step test 40 $gt "the L2 flush*"
echo "test: $(grep -E 'passed|failed' $R/test.log | tail -1)"
for i in 1 2 3 4; do
  for m in write clean; do
    for s in c-b32-h8-n1024 c-b32-h16-n512 c-b1-h16-n16384; do
      step fb-$m-$s-$i 20 env FB_L2_FLUSH=$m $fb run $R/specs/$s.json --no-ceilings -q -o $R/fb-$m-$s-$i.json
    done
    [ $i -le 3 ] && step peers-$m-$i 20 env FB_L2_FLUSH=$m python3 scripts/peers.py $R/specs/c-b32-h8-n1024.json \
      --backends cudnn -o $R/peers-$m-$i.json
  done
done
python3 results/h200/s54/calls/clean_rule.py $R | tee $R/rule.txt
call_end C
