#!/usr/bin/env bash
# Session 18 call C (one H200, no build): main's final code (after call B's two flips: flash-sm90 pmajor and flash
# desc2, the d = 128 non-causal backward orders; cpairq removed) built on the CPU machine and carried. Every GPU test,
# memcheck/synccheck of the tiled set, then the rows the flips change, beside their peers: issue 13's d = 128
# non-causal backward (bf16 + fp16) and the GQA grid's d = 128 non-causal backward.
R=$OUT/C; mkdir -p $R; export DEADLINE=${DEADLINE:-420}
export B=${B:-build-loc} USEBIN=${USEBIN:-out/binM18c.txz}
source out/common15.sh
cat out/commit.txt > $R/commit.txt 2>/dev/null
nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 > $R/smi.csv 2>&1 &
smi=$!
fb=$B/flashbench
S=results/h200/s18/calls
TAILN=2 step d128bwd 60 $fb run $S/c18-d128bwd.json -q -o $R/c18-d128bwd.json
TAILN=2 step peersd128 60 python3 scripts/peers.py $S/c18-d128bwd.json --backends flash,cudnn -o $R/peers-c18-d128bwd.json
TAILN=2 step gqabwd 60 $fb run $S/c18-gqabwd.json -q -o $R/c18-gqabwd.json
TAILN=2 step peersgqa 60 python3 scripts/peers.py $S/c18-gqabwd.json --backends flash,cudnn -o $R/peers-c18-gqabwd.json
kill $smi
for f in c18-d128bwd c18-gqabwd; do python3 scripts/ratios.py $R/$f.json $R/peers-$f.json --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash > $R/sum-$f.txt 2>&1; grep -A8 "^summary" $R/sum-$f.txt; done
TAILN=8 step san-tiled 60 bash scripts/sanitize.sh -e $fb -s configs/sanitize-tiled.json -t "memcheck synccheck" $R/san-tiled.json
TAILN=6 step gputests 150 $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
