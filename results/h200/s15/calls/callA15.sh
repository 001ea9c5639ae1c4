#!/usr/bin/env bash
# Session 15 call A (prepared in session 14): one H200, NO device build: int15's binaries built on the CPU machine
# (copy the binaries into out/; USEBIN=out/binI15.txz; carry ["out"]), then each engineer's job
# (results/h200/s15/calls/job-NAME.sh) in turn, each cut at JT seconds. Tree = branch int15 (main + the NAME15 probes).
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-575}
export USEBIN=${USEBIN:-out/binI15.txz}
source out/common15.sh
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu --format=csv > $R/smi-start.txt
for j in ${JOBS:-sm90fwd sm90bwd flashfwd fp32}; do
  f=results/h200/s15/calls/job-$j.sh
  [ -f $f ] || { echo "no job $j"; continue; }
  JT=${JT:-68} runjob $j $f > $R/$j.out 2>&1; cat $R/$j.out
  (cd $OUT && tar czf A-part.tgz --exclude="*.ncu-rep" A)
done
find $R -name "*.ncu-rep" -delete; tar czf $OUT/A.tgz -C $OUT A && rm -rf $R $OUT/A-part.tgz; ls -la $OUT; echo "done t=$((SECONDS-t0))"
