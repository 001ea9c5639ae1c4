#!/usr/bin/env bash
# Session 14 call C (one H200, no build: main's code built here for sm_90a, carried as USEBIN=out/binC.txz):
# after call B's two flips (flash-sm90 backward: the head split's key-tail order with the most subsets; flash
# forward: the lean prologue/epilogue on causal d = 128 launches), the grids whose rows they change, beside their
# PyTorch peers, and the GPU tests of the two kernels.
R=$OUT/C; mkdir -p $R; export DEADLINE=${DEADLINE:-300}
export USEBIN=${USEBIN:-out/binC.txz}
source out/common14.sh
fb=$B/flashbench
pack() { (cd $OUT && rm -f C-*.tgz && tar czf C-$1.tgz C) ; }
TAILN=6 step gputests 40 $B/tests/flashbench_gpu_tests "[bwd128],[bwd_gqa],[flashfwd],[flash_split]"
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
TAILN=2 step gqa 80 $fb run configs/gqa-h200.json --kernels flash,flash-sm90,cudnn -q -o $R/gqa-h200.json
TAILN=2 step peersgqa 45 python3 scripts/peers.py configs/gqa-h200.json --backends flash,cudnn -o $R/peers-gqa-h200.json
pack 1
TAILN=2 step issue13 70 $fb run configs/issue13-h200.json -q -o $R/issue13-h200.json
TAILN=2 step peers13 60 python3 scripts/peers.py configs/issue13-h200.json --backends flash,cudnn -o $R/peers-issue13-h200.json
for f in gqa-h200 issue13-h200; do [ -f $R/$f.json ] && [ -f $R/peers-$f.json ] && python3 scripts/ratios.py $R/$f.json $R/peers-$f.json --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash > $R/sum-$f.txt 2>&1; grep -A12 "^summary" $R/sum-$f.txt; done
rm -f $OUT/C-*.tgz; tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
