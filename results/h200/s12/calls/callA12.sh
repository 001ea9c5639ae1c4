#!/usr/bin/env bash
# Session 12 call A: one H200; the build on the device, then each engineer's command (out/job-NAME.sh) in turn.
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-575}
source out/common12.sh
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu --format=csv > $R/smi-start.txt
(cd $B && tar cJf $OUT/binA.txz flashbench tests/flashbench_gpu_tests) &
for j in ${JOBS:-sm90fwd sm90bwd flashbwd flashfwd fp32}; do
  [ -f out/job-$j.sh ] || { echo "no job $j"; continue; }
  JT=${JT:-62} runjob $j > $R/$j.out 2>&1; cat $R/$j.out
  (cd $OUT && tar czf A-part.tgz A)
done
wait
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R $OUT/A-part.tgz; echo "done t=$((SECONDS-t0))"
