#!/usr/bin/env bash
# Session 16 call A (one H200, no build): int16a (main + the helpers' sm90fwds16, sm90f128s16, sm90bwds16) built
# here for sm_90a and carried; each helper's round-1 job (default vs probe beside the in-binary cudnn, its GPU tests
# under the probe), then the lead's job-cudnn919.sh (the cudnn peer under the system cuDNN and PyTorch's).
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-560}
export B=${B:-build-loc} USEBIN=${USEBIN:-out/binA16.txz}
source out/common15.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi.csv 2>&1
for j in ${JOBS:-sm90fwd sm90f128 sm90bwd}; do
  f=results/h200/s16/calls/job1-$j.sh; [ -f $f ] || { echo "no $f"; continue; }
  TN=30 JT=80 runjob r1-$j $f
done
TN=45 JT=170 BUDGET=150 runjob cudnn919 results/h200/s16/calls/job-cudnn919.sh
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
