#!/usr/bin/env bash
# Session 45, call K (one H200; issue 13), prepared in session 45 for a later call: the portable flash forward's pieces
# over the keys on non-causal d = 128 grids of less than one wave (the probe FB_FLASH_FWD_PROBE=kvsubwave; the rule in
# docs/perf-notes.md, "Session 45", written before the call). The binaries of commit.txt.
# 1. [flashfwd] as built (the new sub-wave case: no workspace, one block a tile) and under kvsubwave (every forward
#    case of the probed kernels, sub-wave grids of 1 to 128 blocks in pieces); memcheck of a kvsubwave forward.
# 2. Three interleaved rounds of the default and kvsubwave (the order reversed in round 2), flash alone in each
#    process, on kvsub45-* (eight drawn grids of 72-120 blocks, a control of 2048 blocks) and hold44-small's forward
#    (batch 1, 16 q / 4 kv heads, N 512 / 1024: non-causal 64 / 128 blocks; causal, which the probe does not touch, as
#    controls); torch-flash once per spec (peers.py with its launch hold).
set -uo pipefail
export DEADLINE=${DEADLINE:-540}
source scripts/call_step.sh  # call_begin, step, smi_*, ab_rounds, peers_once, spec_for, list_beside, call_end
call_begin $OUT/K; mkdir -p $R/ab $R/specs
cp results/h200/s45/calls/kvsub45*.json $R/specs/
spec_for results/h200/s44/calls/hold44-small.json $R/specs/hold44-small-fwd.json flash fwd
python3 - $R/specs/hold44-small-fwd.json $R/specs/hold44ctl-small-fwd.json <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
a, c = dict(s), dict(s)
a["causal"], c["causal"] = [False], [True]
c["name"] = s["name"].replace("small", "ctl-small")
json.dump(a, open(sys.argv[1], "w"), indent=2)
json.dump(c, open(sys.argv[2], "w"), indent=2)
PY
step tests-built 90 $gt "[flashfwd]"
step tests-kvsubwave 90 env FB_FLASH_FWD_PROBE=kvsubwave $gt "[flashfwd]"
for t in built kvsubwave; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
step memcheck 60 env FB_FLASH_FWD_PROBE=kvsubwave compute-sanitizer --tool memcheck --error-exitcode 9 $fb run \
  $R/specs/kvsub45-b1-h8-kv1-n1211.json --warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/memcheck.json
tail -3 $R/memcheck.log
specs=$(cd $R/specs && ls *.json | sed 's/\.json$//' | tr '\n' ' ')
# Which rows run in pieces: each spec's --list (memory a kernel needs, its workspace included), built / kvsubwave
list_beside $R/specs "$specs" kvsubwave FB_FLASH_FWD_PROBE=kvsubwave $R/pieces.txt
cut -c1-160 $R/pieces.txt
smi_start
ab_rounds $R/ab $R/specs 3 "$specs" def=X=1 kvsubwave=FB_FLASH_FWD_PROBE=kvsubwave
peers_once $R/ab $R/specs "$specs" flash
smi_stop
# BASE = def: default time / kvsubwave time, above 1: kvsubwave faster
python3 results/h200/s29/calls/ab_table.py $R/ab flash torch-flash def kvsubwave > $R/table.txt 2>&1
cut -c1-200 $R/table.txt
# The rule, written before the call (docs/perf-notes.md, "Session 45"): kvsubwave becomes the default if the ten
# sub-wave rows' geomean is >= 1.03 with none under 0.99 and the controls read 0.99-1.01, every row verified
python3 scripts/ab_rule.py $R/ab --spec-dir $R/specs --kernel flash --base def --variant kvsubwave --rounds 3 \
  --rows 'kvsub45-*' --rows hold44-small-fwd --controls 'kvsub45ctl-*' --controls hold44ctl-small-fwd \
  --min-geomean 1.03 --min-row 0.99 --control-band 0.99:1.01 --json $R/rule.json > $R/rule.txt 2>&1
echo "rule rc=$?"; tail -6 $R/rule.txt | cut -c1-150
call_end K
