#!/usr/bin/env bash
# Session 10 final, part 2 (one H200, part 1's binaries carried: USEBIN=out/bin10.txz): GQA/MQA and fp32 beside
# their peers, shapes no config names, compute-sanitizer on the tiled kernels, the split backward and fp32.
R=$OUT/F10b; mkdir -p $R; export DEADLINE=${DEADLINE:-530}
source out/common10.sh
nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 > $R/smi.csv 2>&1 &
smi=$!
fb=$B/flashbench
pack() { (cd $OUT && tar czf F10b-$1.tgz F10b) ; }
TAILN=2 step gqa 95 $fb run configs/gqa-h200.json --kernels flash,flash-sm90,cudnn -q -o $R/gqa-h200.json
TAILN=2 step peersgqa 60 python3 scripts/peers.py configs/gqa-h200.json --backends flash,cudnn -o $R/peers-gqa-h200.json
TAILN=2 step fp32 50 $fb run configs/fp32-h200.json -q -o $R/fp32-h200.json
TAILN=2 step peersfp32 40 python3 scripts/peers.py configs/fp32-h200.json --backends efficient,math -o $R/peers-fp32-h200.json
pack 1
TAILN=8 step fp32race 40 bash scripts/fp32s8_race_h200.sh $R/fp32race $B
TAILN=12 step oddshapes 70 bash out/oddshapes10.sh $R
pack 2
TAILN=8 step san-tiled 120 bash scripts/sanitize.sh -e $fb -s configs/sanitize-tiled.json -t "memcheck racecheck synccheck" $R/san-tiled.json
pack 3
for j in flashbwd2 flashfwd2; do TN=40 JT=55 runjob $j; done
pack 4
TAILN=8 step san-split 60 env FB_FLASH_BWD_SPLIT=2 FB_SM90_BWD_SPLIT=2 bash scripts/sanitize.sh -e $fb -s configs/sanitize-split.json -t "memcheck racecheck synccheck" $R/san-split.json
kill $smi
python3 scripts/ratios.py $R/gqa-h200.json $R/peers-gqa-h200.json --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash > $R/sum-gqa.txt 2>&1; grep -A8 "^summary" $R/sum-gqa.txt
python3 scripts/ratios.py $R/fp32-h200.json --pair flash-sm90:naive --pair flash:naive > $R/sum-fp32.txt 2>&1; grep -A8 "^summary" $R/sum-fp32.txt
rm -f $OUT/F10b-*.tgz; tar czf $OUT/F10b.tgz -C $OUT F10b && rm -rf $R; echo "done t=$((SECONDS-t0))"
