#!/usr/bin/env bash
# Session 13 final, part 1 (one H200, no build: call A's binaries of int13 dbddc44, whose code main 66b8278 is,
# carried as USEBIN=out/binA.txz): the issue-13 grids (bf16, fp16), GQA/MQA and fp32, each beside its PyTorch peers,
# every GPU test, shapes no config names, the fp32 race discrimination, memcheck/synccheck of the tiled set.
R=$OUT/F13a; mkdir -p $R; export DEADLINE=${DEADLINE:-585}
export USEBIN=${USEBIN:-out/binA.txz}
source out/common13.sh
nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 > $R/smi.csv 2>&1 &
smi=$!
fb=$B/flashbench
pack() { (cd $OUT && rm -f F13a-*.tgz && tar czf F13a-$1.tgz F13a) ; }
TAILN=2 step issue13 100 $fb run configs/issue13-h200.json -q -o $R/issue13-h200.json
TAILN=2 step peers13 90 python3 scripts/peers.py configs/issue13-h200.json --backends flash,cudnn -o $R/peers-issue13-h200.json
pack 1
TAILN=2 step issue13fp16 100 $fb run configs/issue13-fp16-h200.json -q -o $R/issue13-fp16-h200.json
TAILN=2 step peers13fp16 90 python3 scripts/peers.py configs/issue13-fp16-h200.json --backends flash,cudnn -o $R/peers-issue13-fp16-h200.json
pack 2
TAILN=2 step gqa 95 $fb run configs/gqa-h200.json --kernels flash,flash-sm90,cudnn -q -o $R/gqa-h200.json
TAILN=2 step peersgqa 60 python3 scripts/peers.py configs/gqa-h200.json --backends flash,cudnn -o $R/peers-gqa-h200.json
pack 3
TAILN=6 step gputests ${GT:-100} $B/tests/flashbench_gpu_tests
TAILN=2 step fp32 50 $fb run configs/fp32-h200.json -q -o $R/fp32-h200.json
TAILN=2 step peersfp32 40 python3 scripts/peers.py configs/fp32-h200.json --backends efficient,math -o $R/peers-fp32-h200.json
pack 4
TAILN=12 step oddshapes 70 bash out/oddshapes13.sh $R
TAILN=8 step fp32race 62 env BUILD=$B OUTDIR=$R/fp32race bash results/h200/s13/calls/job-fp32race.sh
pack 5
TAILN=8 step san-tiled 90 bash scripts/sanitize.sh -e $fb -s configs/sanitize-tiled.json -t "memcheck synccheck" $R/san-tiled.json
kill $smi
for f in issue13-h200 issue13-fp16-h200 gqa-h200; do python3 scripts/ratios.py $R/$f.json $R/peers-$f.json --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash > $R/sum-$f.txt 2>&1; grep -A12 "^summary" $R/sum-$f.txt; done
python3 scripts/ratios.py $R/fp32-h200.json --pair flash-sm90:naive --pair flash:naive > $R/sum-fp32.txt 2>&1; grep -A8 "^summary" $R/sum-fp32.txt
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -5
rm -f $OUT/F13a-*.tgz; tar czf $OUT/F13a.tgz -C $OUT F13a && rm -rf $R; echo "done t=$((SECONDS-t0))"
