#!/usr/bin/env bash
# Session 8 call A: the helpers' variants side by side on one local build of int8a, in two lanes (one GPU each
# when the machine has two; one after the other otherwise). Each job is out/job-NAME.sh (the helper's command).
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-560}; source out/common6.sh
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu --format=csv > $R/smi-start.txt
ngpu=$(nvidia-smi -L | wc -l)
cat out/commit.txt > $R/commit.txt
export OUTDIR
runjob() { local job=$1; OUTDIR=$R/$job; mkdir -p $OUTDIR; TAILN=${TN:-40} step $job ${JT:-100} env BUILD=$B OUTDIR=$OUTDIR bash out/job-$job.sh; }
lane() { local dev=$1; shift; for j in "$@"; do CUDA_VISIBLE_DEVICES=$dev runjob $j; done; }
L0=${L0:-sm90fwd flashfwd debt}
L1=${L1:-fp32 sm90bwd flashmqa}
if [ "$ngpu" -ge 2 ]; then
  lane 0 $L0 > $R/lane0.out 2>&1 & p0=$!
  lane 1 $L1 > $R/lane1.out 2>&1 & p1=$!
  wait $p0 $p1
else
  lane 0 $L0 $L1 > $R/lane0.out 2>&1
fi
cat $R/lane*.out
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0)) gpus=$ngpu"
