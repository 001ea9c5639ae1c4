#!/usr/bin/env bash
# Session 42, call C (one H200; issue 13), prepared in session 41: the binaries of commit.txt, after calls A and B have
# settled long64 and subq (whatever the build ships). Six shapes no config names (held41-*.json, seed 4500, held41.py)
# through flash, flash-sm90 and the in-binary cudnn beside torch-flash and torch-cudnn, one round; then session 40's
# call D's two rows where flash-sm90 was behind torch-cudnn (2 x 16 / 4 N = 1300 d = 128 fp16, 7 x 16 / 1 N = 5200
# d = 64 bf16; backward, both masks) in three interleaved rounds beside torch-cudnn (scripts/peer_rounds.py).
set -uo pipefail
export DEADLINE=${DEADLINE:-540}
source scripts/call_step.sh  # call_begin, step, smi_start/stop, ab_rounds, peers_once, call_end
call_begin $OUT/C; mkdir -p $R/held
c=results/h200/s41/calls
smi_start
for s in $(cd $c && ls held41-*.json | sed 's/\.json$//'); do
  step fb-$s 45 $fb run $c/$s.json -q -o $R/held/fb-$s.json
  step peers-$s 35 python3 scripts/peers.py $c/$s.json --backends flash,cudnn -o $R/held/peers-$s.json
done
for s in held40g-b2-h16-kv4-n1300-d128 held40g-b7-h16-kv1-n5200-d64; do
  step rounds-$s 120 python3 scripts/peer_rounds.py results/h200/s40/calls/$s.json -o $R/rounds-$s --rounds 3 \
    --backends cudnn --flashbench $fb --run-arg=--kernels=flash-sm90 --run-arg=--no-ceilings --pair flash-sm90:torch-cudnn
done
smi_stop
{
  echo "held-out shapes (seed 4500), one round: peer time / ours (median); a case ours did not verify gets no ratio"
  python3 scripts/ratios.py $R/held/fb-*.json $R/held/peers-*.json \
    --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash
  for s in held40g-b2-h16-kv4-n1300-d128 held40g-b7-h16-kv1-n5200-d64; do
    echo; echo "$s, three interleaved rounds:"; cat $R/rounds-$s/rounds.txt
  done
} > $R/table.txt 2>&1
grep -v "^b[0-9]" $R/table.txt | cut -c1-150
grep -E "^b[0-9].*(0\.9[0-9]{2}|behind)" $R/table.txt | cut -c1-150
call_end C
