#!/usr/bin/env bash
# Session 19 call C (one H200): main's final code (pmajor64 the d = 64 default, desc2 up to 4096 keys, the helpers'
# probes removed) built on the device for sm_90a. The fp32 helper's study job (job1-fp32.sh: fp16 pairs against TF32
# pairs on the tensor cores, torch), the portable backward's d = 128 non-causal rows at N = 8k / 16k beside
# FlashAttention-2 (the rows the desc2 limit changes), memcheck/synccheck of the tiled set, then every GPU test.
R=$OUT/C; mkdir -p $R; export DEADLINE=${DEADLINE:-450}
export B=${B:-build-dev}
source out/common15.sh
cat out/commit.txt > $R/commit.txt 2>/dev/null
fb=$B/flashbench; S=results/h200/s19/calls
[ -f $S/job1-fp32.sh ] && TN=40 JT=45 runjob fp32 $S/job1-fp32.sh
TAILN=1 step flashbwdlong 40 $fb run $S/c19-flashbwd-long.json -q -o $R/c19-flashbwd-long.json
TAILN=1 step peerslong 50 python3 scripts/peers.py $S/c19-flashbwd-long.json --backends flash,cudnn -o $R/peers-c19-flashbwd-long.json
python3 scripts/ratios.py $R/c19-flashbwd-long.json $R/peers-c19-flashbwd-long.json --pair flash:torch-flash --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn > $R/sum-c19-flashbwd-long.txt 2>&1
cat $R/sum-c19-flashbwd-long.txt
TAILN=8 step san-tiled 70 bash scripts/sanitize.sh -e $fb -s configs/sanitize-tiled.json -t "memcheck synccheck" $R/san-tiled.json
TAILN=6 step gputests 170 $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
