#!/usr/bin/env bash
# Session 7 call A: the helpers' first A/B rounds on one local build of int7a (binaries carried in out/bin.tgz).
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-560}; source out/common6.sh
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 > $R/smi.csv 2>&1 &
smi=$!
cat out/commit.txt > $R/commit.txt
export OUTDIR
for job in ${JOBS:-mqabwd sm90fwd fp8speed fp8verify cudnnfp8 flashbwd decode fp32}; do
  OUTDIR=$R/$job; mkdir -p $OUTDIR
  case $job in
    decode)   TAILN=30 step decode 75 env BUILD=$B bash scripts/decode_ab_h200.sh $OUTDIR/decode ;;
    fp32)     TAILN=40 step fp32 75 bash scripts/fp32s7_h200.sh $OUTDIR $B ;;
    fp8speed) TAILN=30 step fp8speed 70 env BUILD=$B bash scripts/fp8speed_h200.sh $OUTDIR ;;
    mqabwd)   TAILN=40 step mqabwd 75 env BUILD=$B bash scripts/mqabwd_h200.sh $OUTDIR/mqabwd ;;
    sm90fwd)  TAILN=35 step sm90fwd 75 env BUILD=$B bash scripts/sm90fwd_h200.sh $OUTDIR/sm90fwd ;;
    *)        [ -f out/job-$job.sh ] && TAILN=30 step $job 75 env BUILD=$B bash out/job-$job.sh ;;
  esac
done
kill $smi
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
