#!/usr/bin/env bash
# Session 14 call A: one H200; the build on the device (binaries go back as binA14.txz.*), then each engineer's
# job (results/h200/s14/calls/job-NAME.sh) in turn, each cut at JT seconds.
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-575}
source out/common14.sh
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu --format=csv > $R/smi-start.txt
(cd $B && tar cJf - flashbench tests/flashbench_gpu_tests | split -b 15M - $OUT/binA14.txz.) &
tarpid=$!
for j in ${JOBS:-sm90fwd sm90bwd flashbwd flashfwd fp32}; do
  f=results/h200/s14/calls/job-$j.sh
  [ -f $f ] || { echo "no job $j"; continue; }
  JT=${JT:-66} runjob $j $f > $R/$j.out 2>&1; cat $R/$j.out
  (cd $OUT && tar czf A-part.tgz A)
done
wait $tarpid
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R $OUT/A-part.tgz; ls -la $OUT; echo "done t=$((SECONDS-t0))"
