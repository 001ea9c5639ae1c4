#!/usr/bin/env bash
# Session 44, call F (one H200; issue 13), prepared in session 43: the binaries of commit.txt (long64 the default).
# Every GPU test as built (the first device run of session 43's edited tests: [sm90_long64] expecting long64's splits
# as built, [sm90_subq] removed); [sm90_long64] under FB_SM90_BWD_SPLIT=nolong64 (the rows run whole); then session
# 41's call D, never run for want of device time: the exploration of the group-8 causal d = 128 backward at long N
# (three interleaved rounds of the default and six knobs on three rows, torch-cudnn once per row; no rule rides on it).
set -uo pipefail
export DEADLINE=${DEADLINE:-540}
source scripts/call_step.sh  # call_begin, step, smi_start/stop, ab_rounds, peers_once, call_end
call_begin $OUT/F
step tests-all 200 $gt
step tests-nolong64 40 env FB_SM90_BWD_SPLIT=nolong64 $gt "[sm90_long64]"
for t in all nolong64; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
call_end F
DEADLINE=$(( DEADLINE - SECONDS - 10 )) bash results/h200/s41/calls/callD.sh
