#!/usr/bin/env bash
# Session 41, call B (one H200; issue 13), prepared in session 40: the binaries of commit.txt. [sm90_subq] as built and
# under FB_SM90_BWD_SPLIT=subq; three interleaved rounds of the default and subq (flash-sm90 alone in each process) on
# eight drawn shapes (sqr-*.json, seed 4400) and two controls (sqctl-*); torch-cudnn once per spec. The rule is in
# docs/perf-notes.md ("Session 40: big8 on the device, ...", "Prepared for session 41"), written in session 40.
set -uo pipefail
export DEADLINE=${DEADLINE:-400}
source scripts/call_step.sh  # call_begin, step, smi_start/stop, ab_rounds, peers_once, call_end
call_begin $OUT/B; mkdir -p $R/ab
c=results/h200/s41/calls
step tests-subq-built 40 $gt "[sm90_subq]"
step tests-subq 40 env FB_SM90_BWD_SPLIT=subq $gt "[sm90_subq]"
for t in subq-built subq; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
specs=$(cd $c && ls sqr-*.json sqctl-*.json | sed 's/\.json$//')
smi_start
ab_rounds $R/ab $c 3 "$specs" def=X=1 new=FB_SM90_BWD_SPLIT=subq  # def new, new def, def new
peers_once $R/ab $c "$specs" cudnn
smi_stop
# BASE = def, VARIANT = new (subq): default time / subq time, above 1 the probe is faster
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn def new > $R/table.txt 2>&1
cut -c1-150 $R/table.txt
# The rule, written in session 40 (docs/perf-notes.md): subq becomes the default if the rows' geomean is >= 1.03, none
# is under 0.98, the controls read 0.98-1.02, and every row verifies (scripts/ab_rule.py judges it: exit 0 met)
python3 scripts/ab_rule.py $R/ab --spec-dir $c --kernel flash-sm90 --base def --variant new --rounds 3 \
  --rows 'sqr-*' --controls 'sqctl-*' --min-geomean 1.03 --min-row 0.98 --control-band 0.98:1.02 \
  --json $R/rule.json > $R/rule.txt 2>&1; echo "rule rc=$?"; tail -8 $R/rule.txt | cut -c1-150
call_end B
