#!/usr/bin/env bash
# Session 15 call B (one H200, no device build): main + the engineers' round-2 probes (defaults PTX-identical to
# main) built for sm_90a on the CPU machine in this tree's path and carried (USEBIN=out/binB.txz, B=build-loc: the
# GPU tests' plug-in and fault-fixture paths are compiled in), every GPU test, then each round-2 job
# (results/h200/s15/calls/job2-NAME.sh).
R=$OUT/B; mkdir -p $R; export DEADLINE=${DEADLINE:-580}
export B=${B:-build-loc} USEBIN=${USEBIN:-out/binB.txz}
source out/common15.sh
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu --format=csv > $R/smi-start.txt
fb=$B/flashbench
pack() { (cd $OUT && rm -f B-*.tgz && tar czf B-$1.tgz --exclude="*.ncu-rep" B) ; }
TAILN=6 step gputests ${GT:-120} $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -5
pack 1
for j in ${JOBS:-sm90fwd sm90bwd flashfwd}; do
  f=results/h200/s15/calls/job2-$j.sh
  [ -f $f ] || { echo "no round-2 job for $j"; continue; }
  TN=30 JT=${JT:-55} runjob r2-$j $f; pack 2
done
find $R -name "*.ncu-rep" -delete; rm -f $OUT/B-*.tgz; tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; ls -la $OUT; echo "done t=$((SECONDS-t0))"
