#!/usr/bin/env bash
# Session 7 call B: the helpers' last A/B rounds on one local build of int7b, in two lanes (one GPU each when the
# machine has two; one after the other otherwise), plus every GPU test.
R=$OUT/B; mkdir -p $R; export DEADLINE=${DEADLINE:-540}; source out/common6.sh
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu --format=csv > $R/smi-start.txt
ngpu=$(nvidia-smi -L | wc -l)
cat out/commit.txt > $R/commit.txt
export OUTDIR
runjob() {
  local job=$1; OUTDIR=$R/$job; mkdir -p $OUTDIR
  case $job in
    decode)   TAILN=30 step decode 75 env BUILD=$B bash scripts/decode_ab_h200.sh $OUTDIR/decode ;;
    fp32)     TAILN=40 step fp32 75 bash scripts/fp32s7_h200.sh $OUTDIR $B ;;
    fp8speed) TAILN=30 step fp8speed 75 env BUILD=$B bash scripts/fp8speed_h200.sh $OUTDIR ;;
    mqabwd)   TAILN=40 step mqabwd 75 env BUILD=$B bash scripts/mqabwd_h200.sh $OUTDIR/mqabwd ;;
    sm90fwd)  TAILN=35 step sm90fwd 75 env BUILD=$B bash scripts/sm90fwd_h200.sh $OUTDIR/sm90fwd ;;
    gputests) TAILN=6 step gputests 200 $B/tests/flashbench_gpu_tests ;;
    *)        [ -f out/job-$job.sh ] && TAILN=30 step $job 75 env BUILD=$B bash out/job-$job.sh ;;
  esac
}
lane() { local dev=$1; shift; for j in "$@"; do CUDA_VISIBLE_DEVICES=$dev runjob $j; done; }
L0=${L0:-mqabwd sm90fwd fp8speed fp8verify cudnnfp8}
L1=${L1:-gputests flashbwd decode fp32}
if [ "$ngpu" -ge 2 ]; then
  lane 0 $L0 > $R/lane0.out 2>&1 & p0=$!
  lane 1 $L1 > $R/lane1.out 2>&1 & p1=$!
  wait $p0 $p1
else
  lane 0 $L0 $L1 > $R/lane0.out 2>&1
fi
cat $R/lane*.out
tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0)) gpus=$ngpu"
