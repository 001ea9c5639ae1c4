#!/usr/bin/env bash
# Session 10 call A: one H200; the build on the device, then each helper's command (out/job-NAME.sh) in turn.
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-540}
source out/common10.sh
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu --format=csv > $R/smi-start.txt
for j in ${JOBS:-sm90fwd sm90bwd flashbwd flashfwd fp32}; do JT=${JT:-68} runjob $j > $R/$j.out 2>&1; cat $R/$j.out; done
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
