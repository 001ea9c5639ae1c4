#!/usr/bin/env bash
# Session 45, call J (one H200; issue 13), prepared in session 45 for a later call: flash-sm90's backward launches as
# programmatic dependents (the probe FB_SM90_BWD_LAUNCHES=pdl; the rule in docs/perf-notes.md, "Session 45", written
# before the call). The binaries of commit.txt.
# 1. The backward's GPU tests under pdl ([bwd128], [bwd64], [bwd_gqa], [hdim256]: every 16-bit backward kernel and
#    convert, head splits, query tails, the shared tail, repeated runs on one workspace), [bwd_gqa] under fused,pdl;
#    memcheck of a pdl head-split backward (flashbench under compute-sanitizer, one warm-up and one rep).
# 2. Three interleaved rounds of the default, pdl and fused,pdl (the order reversed in round 2), flash-sm90 alone in
#    each process, on pdl45-* (eight drawn short backwards, a control spec of two long rows), hold44-small's backward,
#    session 40's 2 x 16 / 4 N = 1300 d = 128 fp16 backward and the papers' 16k-token grid at N 512 / 1024 (backward);
#    torch-cudnn once on the last three (peers.py with its launch hold).
set -uo pipefail
export DEADLINE=${DEADLINE:-540}
source scripts/call_step.sh  # call_begin, step, smi_start/stop, ab_rounds, peers_once, spec_for, call_end
call_begin $OUT/J; mkdir -p $R/ab $R/specs
cp results/h200/s45/calls/pdl45*.json $R/specs/
for s in hold44-small hold44-grid; do
  spec_for results/h200/s44/calls/$s.json $R/specs/$s-bwd.json flash-sm90 bwd
done
held=held40g-b2-h16-kv4-n1300-d128
spec_for results/h200/s40/calls/$held.json $R/specs/$held.json flash-sm90
step tests-pdl 150 env FB_SM90_BWD_LAUNCHES=pdl $gt "[bwd128],[bwd64],[bwd_gqa],[hdim256]"
step tests-fusedpdl 40 env FB_SM90_BWD_LAUNCHES=fused,pdl $gt "[bwd_gqa]"
for t in pdl fusedpdl; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
step memcheck 60 env FB_SM90_BWD_LAUNCHES=pdl compute-sanitizer --tool memcheck --error-exitcode 9 $fb run \
  $R/specs/pdl45-b1-h12-kv2-n1889-d128.json --warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/memcheck.json
tail -3 $R/memcheck.log
specs=$(cd $R/specs && ls *.json | sed 's/\.json$//' | tr '\n' ' ')
smi_start
ab_rounds $R/ab $R/specs 3 "$specs" def=X=1 pdl=FB_SM90_BWD_LAUNCHES=pdl fusedpdl=FB_SM90_BWD_LAUNCHES=fused,pdl
peers_once $R/ab $R/specs "hold44-small-bwd held40g-b2-h16-kv4-n1300-d128 hold44-grid-bwd" cudnn
smi_stop
# BASE = def: default time / variant time, above 1: the variant faster
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn def pdl fusedpdl > $R/table.txt 2>&1
cut -c1-200 $R/table.txt
# The rule, written before the call (docs/perf-notes.md, "Session 45"): pdl becomes the default if the 14 short rows'
# geomean is >= 1.01 with none under 0.99 and the controls read 0.99-1.01 (rule.txt), the papers' grid rows none under
# 0.99 (rule-grid.txt), every row verified (scripts/ab_rule.py judges each: exit 0 met)
python3 scripts/ab_rule.py $R/ab --spec-dir $R/specs --kernel flash-sm90 --base def --variant pdl --rounds 3 \
  --rows 'pdl45-b*' --rows hold44-small-bwd --rows 'held40g-*' --controls 'pdl45ctl-*' --min-geomean 1.01 \
  --min-row 0.99 --control-band 0.99:1.01 --json $R/rule.json > $R/rule.txt 2>&1; echo "rule rc=$?"
tail -6 $R/rule.txt | cut -c1-150
python3 scripts/ab_rule.py $R/ab --spec-dir $R/specs --kernel flash-sm90 --base def --variant pdl --rounds 3 \
  --rows hold44-grid-bwd --min-geomean 0.99 --min-row 0.99 --json $R/rule-grid.json > $R/rule-grid.txt 2>&1
echo "rule-grid rc=$?"; tail -4 $R/rule-grid.txt | cut -c1-150
# Where call H's rule (fused) and this one are both met: the default takes both if fused,pdl is no slower than pdl
# over the 14 short rows (geomean >= 1.0, none under 0.98: rule-both.txt)
python3 scripts/ab_rule.py $R/ab --spec-dir $R/specs --kernel flash-sm90 --base pdl --variant fusedpdl --rounds 3 \
  --rows 'pdl45-b*' --rows hold44-small-bwd --rows 'held40g-*' --min-geomean 1.0 --min-row 0.98 \
  --json $R/rule-both.json > $R/rule-both.txt 2>&1; echo "rule-both rc=$?"; tail -4 $R/rule-both.txt | cut -c1-150
call_end J
