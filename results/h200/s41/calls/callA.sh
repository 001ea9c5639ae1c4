#!/usr/bin/env bash
# Session 41, call A (one H200; issue 13), prepared in session 40: the binaries of commit.txt. Every GPU test as built;
# [sm90_long64] under FB_SM90_BWD_SPLIT=long64; three interleaved rounds of the default and long64 (flash-sm90 alone in
# each process) on eight drawn shapes (l64r-*.json, seed 4300) and three controls (l64ctl-*); torch-cudnn once per spec.
# The rule is in docs/perf-notes.md ("Session 40: big8 on the device, ...", "Prepared for session 41"), written in
# session 40.
set -uo pipefail
export DEADLINE=${DEADLINE:-540}
source scripts/call_step.sh  # call_begin, step, smi_start/stop, ab_rounds, peers_once, call_end
call_begin $OUT/A; mkdir -p $R/ab
c=results/h200/s41/calls
step tests-all 200 $gt
step tests-long64 40 env FB_SM90_BWD_SPLIT=long64 $gt "[sm90_long64]"
for t in all long64; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
specs=$(cd $c && ls l64r-*.json l64ctl-*.json | sed 's/\.json$//')
smi_start
ab_rounds $R/ab $c 3 "$specs" def=X=1 new=FB_SM90_BWD_SPLIT=long64  # def new, new def, def new
peers_once $R/ab $c "$specs" cudnn
smi_stop
# BASE = def, VARIANT = new (long64): default time / long64 time, above 1 the probe is faster
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn def new > $R/table.txt 2>&1
cut -c1-150 $R/table.txt
# The rule, written in session 40 (docs/perf-notes.md): long64 becomes the default if the rows' geomean is >= 1.03, none
# is under 0.98, the controls read 0.98-1.02, and every row verifies (scripts/ab_rule.py judges it: exit 0 met)
python3 scripts/ab_rule.py $R/ab --spec-dir $c --kernel flash-sm90 --base def --variant new --rounds 3 \
  --rows 'l64r-*' --controls 'l64ctl-*' --min-geomean 1.03 --min-row 0.98 --control-band 0.98:1.02 \
  --json $R/rule.json > $R/rule.txt 2>&1; echo "rule rc=$?"; tail -8 $R/rule.txt | cut -c1-150
call_end A
