#!/usr/bin/env bash
# Session 15 call C (one H200, no device build): main a480d51's code (after call B's flips: kpipe on every non-causal
# d = 128 portable forward launch, the GQA head split's unit rule, the tail split) built on the CPU machine and
# carried. The GPU tests of the three changed kernels, then the rows the post-F15 flips change, beside their peers:
# issue 13's d = 128 non-causal forward (bf16 + fp16) and the GQA d = 128 grid.
R=$OUT/C; mkdir -p $R; export DEADLINE=${DEADLINE:-400}
export B=${B:-build-loc} USEBIN=${USEBIN:-out/binC.txz}
source out/common15.sh
fb=$B/flashbench
[ -n "${NOTESTS:-}" ] || TAILN=4 step gputests 90 $B/tests/flashbench_gpu_tests "[bwd128],[bwd_gqa],[flashfwd],[sm90fwd]"
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
TAILN=2 step d128fwd 60 $fb run out/c15-d128fwd.json -q -o $R/c15-d128fwd.json
TAILN=2 step peersd128 60 python3 scripts/peers.py out/c15-d128fwd.json --backends flash,cudnn -o $R/peers-c15-d128fwd.json
[ -n "${NOGQA:-}" ] || TAILN=2 step gqa 95 $fb run configs/gqa-h200.json --kernels flash,flash-sm90,cudnn -q -o $R/gqa-h200.json
[ -n "${NOGQA:-}" ] || TAILN=2 step peersgqa 60 python3 scripts/peers.py configs/gqa-h200.json --backends flash,cudnn -o $R/peers-gqa-h200.json
cp out/c15-d128fwd.json $R/spec-c15-d128fwd.json
for f in c15-d128fwd gqa-h200; do python3 scripts/ratios.py $R/$f.json $R/peers-$f.json --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash > $R/sum-$f.txt 2>&1; grep -A12 "^summary" $R/sum-$f.txt; done
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
