#!/usr/bin/env bash
# Session 18 final (one H200, no build: the lead's build of main 7f48c15 for sm_90a, carried as USEBIN=out/binM18b.txz):
# the issue-13 grids (bf16, fp16), GQA/MQA at d = 128 and d = 64, fp32, each beside its PyTorch peers, shapes no
# config names, memcheck/synccheck of the tiled set, the L2 request coalescer counters (job-lrc17.sh), then every GPU
# test with the time left.
R=$OUT/F18; mkdir -p $R; export DEADLINE=${DEADLINE:-585}
export USEBIN=${USEBIN:-out/binM18b.txz}
source out/common15.sh
echo "main 7f48c15 (built on the CPU machine, carried)" > $R/commit.txt
nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 > $R/smi.csv 2>&1 &
smi=$!
fb=$B/flashbench
pack() { (cd $OUT && rm -f F18-*.tgz && tar czf F18-$1.tgz F18) ; }
TAILN=2 step issue13 100 $fb run configs/issue13-h200.json -q -o $R/issue13-h200.json
TAILN=2 step peers13 90 python3 scripts/peers.py configs/issue13-h200.json --backends flash,cudnn -o $R/peers-issue13-h200.json
pack 1
TAILN=2 step issue13fp16 100 $fb run configs/issue13-fp16-h200.json -q -o $R/issue13-fp16-h200.json
TAILN=2 step peers13fp16 90 python3 scripts/peers.py configs/issue13-fp16-h200.json --backends flash,cudnn -o $R/peers-issue13-fp16-h200.json
pack 2
TAILN=2 step gqa 95 $fb run configs/gqa-h200.json --kernels flash,flash-sm90,cudnn -q -o $R/gqa-h200.json
TAILN=2 step peersgqa 60 python3 scripts/peers.py configs/gqa-h200.json --backends flash,cudnn -o $R/peers-gqa-h200.json
pack 3
TAILN=2 step gqa64 80 $fb run configs/gqa-d64-h200.json --kernels flash,flash-sm90,cudnn -q -o $R/gqa-d64-h200.json
TAILN=2 step peersgqa64 60 python3 scripts/peers.py configs/gqa-d64-h200.json --backends flash,cudnn -o $R/peers-gqa-d64-h200.json
pack 4
TAILN=2 step fp32 50 $fb run configs/fp32-h200.json -q -o $R/fp32-h200.json
TAILN=2 step peersfp32 40 python3 scripts/peers.py configs/fp32-h200.json --backends efficient,math -o $R/peers-fp32-h200.json
pack 5
TAILN=12 step oddshapes 70 bash results/h200/s18/calls/oddshapes18.sh $R
TAILN=8 step san-tiled 90 bash scripts/sanitize.sh -e $fb -s configs/sanitize-tiled.json -t "memcheck synccheck" $R/san-tiled.json
kill $smi
TN=20 JT=90 runjob lrc17 results/h200/s17/calls/job-lrc17.sh
for f in issue13-h200 issue13-fp16-h200 gqa-h200 gqa-d64-h200; do python3 scripts/ratios.py $R/$f.json $R/peers-$f.json --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash > $R/sum-$f.txt 2>&1; grep -A12 "^summary" $R/sum-$f.txt; done
python3 scripts/ratios.py $R/fp32-h200.json --pair flash-sm90:naive --pair flash:naive > $R/sum-fp32.txt 2>&1; grep -A8 "^summary" $R/sum-fp32.txt
TAILN=6 step gputests 120 $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
rm -f $OUT/F18-*.tgz; tar czf $OUT/F18.tgz -C $OUT F18 && rm -rf $R; echo "done t=$((SECONDS-t0))"
