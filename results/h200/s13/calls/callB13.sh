#!/usr/bin/env bash
# Session 13 call B (one H200): build main + the engineers' round-2 probes (defaults PTX-identical to main), every
# GPU test, each round-2 job (results/h200/s13/calls/job2-NAME.sh or next-NAME.sh; data for session 14: no default
# changes after this call), then racecheck of the tiled set with every hazard printed, while time is left.
R=$OUT/B; mkdir -p $R; export DEADLINE=${DEADLINE:-575}
source out/common13.sh
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu --format=csv > $R/smi-start.txt
fb=$B/flashbench
pack() { (cd $OUT && rm -f B-*.tgz && tar czf B-$1.tgz --exclude="*.ncu-rep" B) ; }
TAILN=6 step gputests ${GT:-100} $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -5
pack 1
for j in ${JOBS:-sm90bwd flashbwd fp32 flashfwd sm90fwd}; do
  f=results/h200/s13/calls/job2-$j.sh; [ -f $f ] || f=results/h200/s13/calls/next-$j.sh
  [ -f $f ] || { echo "no round-2 job for $j"; continue; }
  TN=30 JT=${JT:-42} runjob r2-$j $f; pack 2
done
TAILN=3 step race 150 compute-sanitizer --tool racecheck --racecheck-report all --print-limit 1000000 --show-backtrace device --error-exitcode 86 $fb run configs/sanitize-tiled.json --backend cuda -q --no-ceilings -o $R/race.json
if [ -f $R/race.log ]; then
python3 - $R/race.log > $R/race-summary.txt <<'PY'
import re,sys,collections
c=collections.Counter(); cur=None
for line in open(sys.argv[1],errors='replace'):
    m=re.search(r'Potential (\w+) hazard',line)
    if m: cur=[m.group(1)]; continue
    m=re.search(r'(Write|Read) Thread \(\d+,\d+,\d+\) at (.*?) in',line)
    if m and cur is not None:
        cur.append(m.group(1)+':'+m.group(2))
        if len(cur)==3: c[tuple(cur)]+=1; cur=None
for k,v in c.most_common(): print(v,k)
print('total',sum(c.values()))
PY
gzip -f $R/race.log; tail -3 $R/race-summary.txt; fi
find $R -name "*.ncu-rep" -delete; rm -f $OUT/B-*.tgz; tar czf $OUT/B.tgz -C $OUT B && rm -rf $R; echo "done t=$((SECONDS-t0))"
