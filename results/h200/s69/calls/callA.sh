#!/usr/bin/env bash
# Session 69, call A (one Hopper GPU; issue 13): the whole GPU suite at the packed build (6bb2392: session 68's
# guarded LSE stores in flash-sm90's forwards, tail split and fp8 included; call L ran only [nolse] on it), `verify`
# over every pass, and compute-sanitizer memcheck on the sm90 forward's tests. No timing, no rule.
set -uo pipefail
export DEADLINE=${DEADLINE:-400}
source scripts/call_step.sh
call_begin $OUT/A
step gpu-all 220 $gt
tail -2 $R/gpu-all.log
step verify 90 $fb verify --seq 1000 --pass all -q --backend cuda
tail -2 $R/verify.log
step memcheck-sm90fwd 120 compute-sanitizer --tool memcheck --error-exitcode 9 $gt "[sm90fwd]"
grep -E "ERROR SUMMARY|test cases" $R/memcheck-sm90fwd.log | tail -2
call_end A
