#!/usr/bin/env bash
# Session 51, call E (one Hopper GPU, an H200 asked for; issue 13): the new default (call D met its rule on an H100:
# short causal d = 64 GQA passes in the dynamic tile order, in causal_group()'s plane group) on the binaries of
# commit.txt: every GPU test as built, [sm90_dyn] under dynmha (the default before), compute-sanitizer memcheck of a
# default short GQA pass no config names; then call D's fourteen rows and three controls def / dynmha, two interleaved
# rounds (no rule: whether the H100's gain holds on this GPU, its 60 MiB L2 giving other L2 groups), and torch-cudnn
# once on the fourteen rows beside both. ROUNDS (default 2) and PEERS=0 (no torch-cudnn) shorten it where the device
# time left is short or the GPU is an H100 (call D's rows were measured there).
set -uo pipefail
export DEADLINE=${DEADLINE:-300}
source scripts/call_step.sh
call_begin $OUT/E; mkdir -p $R/ab $R/specs
step tests-all 200 $gt
step tests-dynmha 30 env FB_SM90_BWD_PERSIST=dynmha $gt "[sm90_dyn]"
for t in all dynmha; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
for row in 4,16,8,1536,bf16 8,12,4,1024,fp16 16,8,4,700,bf16 6,20,10,1300,fp16 2,24,8,1200,bf16 12,16,4,512,bf16 \
           5,12,6,1800,bf16 1,32,16,1900,fp16 8,30,6,413,bf16 16,24,8,1150,fp16 15,40,8,620,bf16 \
           12,40,10,768,fp16 12,40,10,485,bf16 6,20,10,362,fp16; do
  IFS=, read -r b h kv n dt <<< "$row"
  ab_spec $R/specs dyn51e-b$b-h$h-kv$kv-n$n-$dt $b $h $kv $n 64 $dt true
done
ab_spec $R/specs dyn51ectl-mha-b4-h16-n1536 4 16 16 1536 64 bf16 true
ab_spec $R/specs dyn51ectl-long-b2-h32-kv8-n2048 2 32 8 2048 64 bf16 true
ab_spec $R/specs dyn51ectl-full-b2-h32-kv8-n2048 2 32 8 2048 64 bf16 false
ab_spec $R memcheck-spec 5 18 6 777 64 bf16 true
step memcheck 40 compute-sanitizer --tool memcheck --error-exitcode 9 $fb run $R/memcheck-spec.json --warmup 1 --reps 1 \
  --warmup-time 0 --no-ceilings -q -o $R/memcheck.json
tail -1 $R/memcheck.log
specs=$(cd $R/specs && ls *.json | sed 's/\.json$//' | tr '\n' ' ')
smi_start
ab_rounds $R/ab $R/specs "${ROUNDS:-2}" "$specs" def=X=1 dynmha=FB_SM90_BWD_PERSIST=dynmha
smi_stop
[ "${PEERS:-1}" = 0 ] || peers_once $R/ab $R/specs "$(cd $R/specs && ls dyn51e-*.json | sed 's/\.json$//' | tr '\n' ' ')" cudnn
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn dynmha def > $R/table.txt 2>&1
cut -c1-150 $R/table.txt | head -22
call_end E
