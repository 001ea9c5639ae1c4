#!/usr/bin/env bash
# Session 16 call C — PREPARED, NOT RUN (the device was no longer lent after call B); session 17 can run it on a build
# of main (which has these probes merged) as is, or fold its jobs into its call A. (one H200, no build): int16c (main 7095496 + sm90fwds16 9616c02 + sm90c64s16 2355298) built here
# for sm_90a and carried; the round-3 jobs (lazyres2 against the new d = 64 default; halfdiag / halfgemm on d = 64
# causal launches), then the lead's clock/power + ncu L2 job.
R=$OUT/C; mkdir -p $R; export DEADLINE=${DEADLINE:-560}
export B=${B:-build-loc} USEBIN=${USEBIN:-out/binC16.txz}
source out/common15.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi.csv 2>&1
for j in ${JOBS:-sm90fwd sm90c64}; do
  f=results/h200/s16/calls/job3-$j.sh; [ -f $f ] || { echo "no $f"; continue; }
  TN=30 JT=85 runjob r3-$j $f
done
TN=40 JT=200 runjob clock16 results/h200/s16/calls/job-clock16.sh
tar czf $OUT/C.tgz -C $OUT C && rm -rf $R; echo "done t=$((SECONDS-t0))"
