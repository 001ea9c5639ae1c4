#!/usr/bin/env bash
# Session 9 final, part 2 (one H200, the same build when the machine is still warm): GQA/MQA and fp32 beside
# their peers, shapes no config names, compute-sanitizer on the tiled kernels and the head split.
R=$OUT/F9b; mkdir -p $R; export DEADLINE=${DEADLINE:-575}
source out/common9.sh
nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 > $R/smi.csv 2>&1 &
smi=$!
fb=$B/flashbench
TAILN=2 step gqa 95 $fb run configs/gqa-h200.json --kernels flash,flash-sm90,cudnn -q -o $R/gqa-h200.json
TAILN=2 step peersgqa 60 python3 scripts/peers.py configs/gqa-h200.json --backends flash,cudnn -o $R/peers-gqa-h200.json
TAILN=2 step fp32 50 $fb run configs/fp32-h200.json -q -o $R/fp32-h200.json
TAILN=2 step peersfp32 40 python3 scripts/peers.py configs/fp32-h200.json --backends efficient,math -o $R/peers-fp32-h200.json
TAILN=12 step oddshapes 60 bash out/oddshapes9.sh $R
TAILN=8 step san-tiled 120 bash scripts/sanitize.sh -e $fb -s configs/sanitize-tiled.json -t "memcheck racecheck synccheck" $R/san-tiled.json
TAILN=8 step san-split 60 env FB_FLASH_BWD_SPLIT=2 FB_SM90_BWD_SPLIT=2 bash scripts/sanitize.sh -e $fb -s configs/sanitize-split.json -t "memcheck racecheck synccheck" $R/san-split.json
for j in ${J:-}; do runjob $j; done
kill $smi
python3 scripts/ratios.py $R/gqa-h200.json $R/peers-gqa-h200.json --pair flash-sm90:torch-cudnn --pair flash:torch-flash > $R/sum-gqa.txt 2>&1; grep -A8 "^summary" $R/sum-gqa.txt
python3 scripts/ratios.py $R/fp32-h200.json --pair flash-sm90:naive --pair flash:naive > $R/sum-fp32.txt 2>&1; grep -A8 "^summary" $R/sum-fp32.txt
tar czf $OUT/F9b.tgz -C $OUT F9b && rm -rf $R; echo "done t=$((SECONDS-t0))"
