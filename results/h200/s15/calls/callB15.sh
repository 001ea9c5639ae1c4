#!/usr/bin/env bash
# Session 15 call B (one H200): build main + the engineers' round-2 probes (defaults PTX-identical to main),
# every GPU test, each round-2 job (results/h200/s15/calls/job2-NAME.sh), binaries back as binB15.txz.*.
R=$OUT/B; mkdir -p $R; export DEADLINE=${DEADLINE:-580}
source out/common15.sh
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu --format=csv > $R/smi-start.txt
(cd $B && tar cJf - flashbench tests/flashbench_gpu_tests | split -b 15M - $OUT/binB15.txz.) &
tarpid=$!
fb=$B/flashbench
pack() { (cd $OUT && rm -f B-*.tgz && tar czf B-$1.tgz --exclude="*.ncu-rep" B) ; }
TAILN=6 step gputests ${GT:-100} $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -5
pack 1
for j in ${JOBS:-sm90bwd flashfwd sm90fwd fp32}; do
  f=results/h200/s15/calls/job2-$j.sh
  [ -f $f ] || { echo "no round-2 job for $j"; continue; }
  TN=30 JT=${JT:-55} runjob r2-$j $f; pack 2
done
wait $tarpid
find $R -name "*.ncu-rep" -delete; rm -f $OUT/B-*.tgz; tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; ls -la $OUT; echo "done t=$((SECONDS-t0))"
