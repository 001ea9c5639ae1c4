#!/usr/bin/env bash
# Session 13 final, part 1 (one H200): build, the issue-13 grids (bf16, fp16) each beside its PyTorch peers,
# every GPU test; the binaries go back (bin.txz) for part 2.
R=$OUT/F13a; mkdir -p $R; export DEADLINE=${DEADLINE:-560}
source out/common13.sh
(cd $B && tar cJf - flashbench tests/flashbench_gpu_tests | split -b 15M - $OUT/bin13.txz.) &
tarpid=$!
nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 > $R/smi.csv 2>&1 &
smi=$!
fb=$B/flashbench
TAILN=2 step issue13 100 $fb run configs/issue13-h200.json -q -o $R/issue13-h200.json
TAILN=2 step peers13 90 python3 scripts/peers.py configs/issue13-h200.json --backends flash,cudnn -o $R/peers-issue13-h200.json
TAILN=2 step issue13fp16 100 $fb run configs/issue13-fp16-h200.json -q -o $R/issue13-fp16-h200.json
TAILN=2 step peers13fp16 90 python3 scripts/peers.py configs/issue13-fp16-h200.json --backends flash,cudnn -o $R/peers-issue13-fp16-h200.json
TAILN=6 step gputests ${GT:-100} $B/tests/flashbench_gpu_tests
kill $smi; wait $tarpid
for f in issue13-h200 issue13-fp16-h200; do python3 scripts/ratios.py $R/$f.json $R/peers-$f.json --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash > $R/sum-$f.txt 2>&1; grep -A12 "^summary" $R/sum-$f.txt; done
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -5
ls -la $OUT/bin13.txz.*
tar czf $OUT/F13a.tgz -C $OUT F13a && rm -rf $R; echo "done t=$((SECONDS-t0))"
