#!/usr/bin/env bash
# Session 8 final call: two lanes, one GPU each (same host): every sweep with its PyTorch peers on the same GPU.
# Lane 0: issue 13 bf16 grid + peers, fp32 + peers, GPU tests. Lane 1: issue 13 fp16 grid + peers, GQA/MQA + peers,
# compute-sanitizer on the kernels changed this session, shapes no config names (verify).
R=$OUT/F8${TAG:-}; mkdir -p $R; export DEADLINE=${DEADLINE:-560}; source out/common6.sh
nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 > $R/smi.csv 2>&1 &
smi=$!
git log --oneline -1 > $R/commit.txt 2>&1; cat out/commit.txt >> $R/commit.txt
ngpu=$(nvidia-smi -L | wc -l)
fb=$B/flashbench
export OUTDIR
runjob() { local job=$1; OUTDIR=$R/$job; mkdir -p $OUTDIR; TAILN=${TN:-40} step $job ${JT:-90} env BUILD=$B OUTDIR=$OUTDIR bash out/job-$job.sh; }
lane0() {
  TAILN=2 step issue13 130 $fb run configs/issue13-h200.json -q -o $R/issue13-h200.json
  TAILN=2 step peers13 130 python3 scripts/peers.py configs/issue13-h200.json --backends flash,cudnn -o $R/peers-issue13-h200.json
  TAILN=2 step fp32 60 $fb run configs/fp32-h200.json -q -o $R/fp32-h200.json
  TAILN=2 step peersfp32 50 python3 scripts/peers.py configs/fp32-h200.json --backends efficient,math -o $R/peers-fp32-h200.json
  TAILN=6 step gputests ${GT:-200} $B/tests/flashbench_gpu_tests
  for j in ${J0:-fp32B sm90bwdB flashfwdB}; do runjob $j; done
}
lane1() {
  TAILN=2 step issue13fp16 130 $fb run configs/issue13-fp16-h200.json -q -o $R/issue13-fp16-h200.json
  TAILN=2 step peers13fp16 130 python3 scripts/peers.py configs/issue13-fp16-h200.json --backends flash,cudnn -o $R/peers-issue13-fp16-h200.json
  TAILN=2 step gqa 95 $fb run configs/gqa-h200.json --kernels flash,flash-sm90,cudnn -q -o $R/gqa-h200.json
  TAILN=2 step peersgqa 70 python3 scripts/peers.py configs/gqa-h200.json --backends flash,cudnn -o $R/peers-gqa-h200.json
  TAILN=12 step oddshapes 60 bash out/oddshapes.sh $R
  TAILN=8 step san-tiled 150 bash scripts/sanitize.sh -e $fb -s configs/sanitize-tiled.json -t "memcheck racecheck synccheck" $R/san-tiled.json
  TAILN=8 step san-split 70 env FB_FLASH_BWD_SPLIT=2 FB_SM90_BWD_SPLIT=2 bash scripts/sanitize.sh -e $fb -s configs/sanitize-split.json -t "memcheck racecheck synccheck" $R/san-split.json
  for j in ${J1:-flashmqaB sm90fwdB}; do runjob $j; done
}
if [ "$ngpu" -ge 2 ]; then
  CUDA_VISIBLE_DEVICES=0 lane0 > $R/lane0.out 2>&1 & p0=$!
  CUDA_VISIBLE_DEVICES=1 lane1 > $R/lane1.out 2>&1 & p1=$!
  wait $p0 $p1
else
  lane0 > $R/lane0.out 2>&1; lane1 > $R/lane1.out 2>&1
fi
kill $smi
cat $R/lane0.out $R/lane1.out | tail -c 9000
for f in issue13-h200 issue13-fp16-h200; do echo "== $f"; python3 out/summary13.py $R/$f.json $R/peers-$f.json | tail -7; done
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -5
tar czf $OUT/F8${TAG:-}.tgz -C $OUT F8${TAG:-} && rm -rf $R; echo "done t=$((SECONDS-t0)) gpus=$ngpu"
