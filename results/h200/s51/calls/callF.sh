#!/usr/bin/env bash
# Session 51, call F (prepared for a later session, after call E; one Hopper GPU; issue 13): the probe
# FB_SM90_BWD_PERSIST=dynlong, the default (session 51: causal d = 64 MHA passes and GQA ones under 32 query-tile steps
# a key tile in the dynamic tile order, GQA ones in causal_group()'s plane group) with the long causal GQA passes
# (32 steps or more, launched a block a tile in causal_group()'s group) in the order too, in the same group.
# Why: session 49's call S put every causal GQA pass in the order in the L2 group and the long ones lost 0.777-0.886x;
# their block-a-tile launch takes causal_group()'s wider group, and call D showed the group is what the order needs.
# The model has the order level with a block-a-tile launch in the same group (both greedy in launch order); what is
# left is the persistent kernel's own gain (next tile's loads under the last one's epilogue; MHA's long passes
# 1.019-1.023x in call Q).
# On the binaries of commit.txt: [bwd64] under dynlong, memcheck; `run --list` both ways; three interleaved rounds of
# def / dynlong on eleven causal GQA d = 64 rows of 32 steps or more (call S's five long rows and six shapes no config
# names, drawn with seed 5152 in session 51 before the call: batch 1-8, groups 2-8, N 2000-9000, at most 32k tokens)
# and three controls (MHA causal N = 4096 and a short GQA pass, in the order under both; a non-causal GQA pass);
# torch-cudnn once on the rows.
# Rule (docs/perf-notes.md, "Session 51", written before the call): dynlong's order becomes the default for the long
# causal GQA passes if the eleven rows' geomean >= 1.02 with none below 0.98, each control 0.97-1.03 and their geomean
# 0.99-1.01, every row verified on both sides in every round, and the tests and memcheck pass. A row the model
# head-splits counts as drawn.
set -uo pipefail
export DEADLINE=${DEADLINE:-300}
source scripts/call_step.sh
call_begin $OUT/F; mkdir -p $R/ab $R/specs
for row in 2,32,8,2048,bf16 1,40,8,3300,bf16 2,24,6,4096,bf16 3,10,5,2600,fp16 1,32,8,8192,bf16 \
           4,16,8,7411,bf16 3,2,1,5376,bf16 1,24,8,7542,fp16 1,12,4,8645,fp16 7,12,2,4281,fp16 3,2,1,7239,bf16; do
  IFS=, read -r b h kv n dt <<< "$row"
  ab_spec $R/specs dynlong51-b$b-h$h-kv$kv-n$n-$dt $b $h $kv $n 64 $dt true
done
ab_spec $R/specs dynlong51ctl-mha-b4-h16-n4096 4 16 16 4096 64 bf16 true
ab_spec $R/specs dynlong51ctl-short-b8-h12-kv4-n1024 8 12 4 1024 64 fp16 true
ab_spec $R/specs dynlong51ctl-full-b2-h32-kv8-n2048 2 32 8 2048 64 bf16 false
step tests-dynlong 60 env FB_SM90_BWD_PERSIST=dynlong $gt "[bwd64]"
echo "tests-dynlong: $(grep -E 'passed|failed' $R/tests-dynlong.log | tail -2 | tr '\n' ' ')"
step memcheck 40 env FB_SM90_BWD_PERSIST=dynlong compute-sanitizer --tool memcheck --error-exitcode 9 $fb run \
  $R/specs/dynlong51-b2-h32-kv8-n2048-bf16.json --warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q \
  -o $R/memcheck.json
tail -1 $R/memcheck.log
ab_probe $R/specs 3 dynlong FB_SM90_BWD_PERSIST=dynlong 'dynlong51-*' 'dynlong51ctl-*'
call_end F
