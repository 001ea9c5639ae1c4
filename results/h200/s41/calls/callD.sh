#!/usr/bin/env bash
# Session 42, call D (one H200; issue 13), prepared in session 41, an exploration (no rule rides on it): where the
# causal d = 128 backward of a group of 8 query heads at long N loses its ~1% to torch-cudnn (session 40's call C, as
# built: 2 x 48 q / 6 kv N = 6800 fp16 0.985x, 8 x 8 / 1 N = 8500 bf16 0.991x, 4 x 8 / 1 N = 7900 fp16 0.993x; the
# model splits each in 4 subsets of 2-head units, one-head units did not help). flash-sm90 alone in each process,
# three interleaved rounds (the order reversed in round 2), on those three rows (s40/calls/u1long-*.json) under the
# default and six knobs of the split path: the split forced to 1 / 2 / 8 subsets (FB_SM90_BWD_SPLIT), 64-query steps
# (FB_SM90_BWD128=q64; the default takes 80 there), no key tiles grouped before the key tail (FB_SM90_BWD_GROUPED=0)
# and session 12's plane groups over every key tile (FB_SM90_BWD128=kgroup); torch-cudnn once per row. A knob that
# gains >= 2% on all three would get a rule and drawn shapes in a later call. (The SASS of the spilling defaults that
# this call was to dump was read on the CPU in session 42: results/sass/s42/.)
export DEADLINE=${DEADLINE:-360}
set -uo pipefail
source scripts/call_step.sh  # call_begin, step, smi_start/stop, ab_rounds, peers_once, call_end
call_begin $OUT/D; mkdir -p $R/ab
c=results/h200/s40/calls
specs="u1long-b2-h48-kv6-n6800 u1long-b8-h8-kv1-n8500 u1long-b4-h8-kv1-n7900"
smi_start
ab_rounds $R/ab $c 3 "$specs" def=X=1 s1=FB_SM90_BWD_SPLIT=1 s2=FB_SM90_BWD_SPLIT=2 s8=FB_SM90_BWD_SPLIT=8 \
  q64=FB_SM90_BWD128=q64 g0=FB_SM90_BWD_GROUPED=0 kgroup=FB_SM90_BWD128=kgroup
peers_once $R/ab $c "$specs" cudnn
smi_stop
# BASE = def: default time / variant time, above 1 the knob is faster; pr/ columns: torch-cudnn time / time
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn def s1 s2 s8 q64 g0 kgroup > $R/table.txt 2>&1
grep -v "^rule\|^  [a-z0-9]* *\(non-\)\?causal *rows" $R/table.txt | cut -c1-200
call_end D
