#!/usr/bin/env bash
# Session 11: racecheck of the tiled set again, every hazard printed, attributed per kernel and pc pair.
R=$OUT/R11; mkdir -p $R; export DEADLINE=${DEADLINE:-150}
source out/common11.sh
fb=$B/flashbench
step race 120 compute-sanitizer --tool racecheck --racecheck-report all --print-limit 1000000 --show-backtrace device --error-exitcode 86 $fb run configs/sanitize-tiled.json --backend cuda -q --no-ceilings -o $R/race.json
python3 - $R/race.log > $R/race-summary.txt <<'PY'
import re,sys,collections
c=collections.Counter(); f=collections.Counter(); cur=None
for line in open(sys.argv[1],errors='replace'):
    m=re.search(r'Potential (\w+) hazard',line)
    if m: cur=[m.group(1)]; continue
    m=re.search(r'(Write|Read) Thread \(\d+,\d+,\d+\) at (.*?) in',line)
    if m and cur is not None:
        cur.append(m.group(1)+':'+m.group(2))
        if len(cur)==3: c[tuple(cur)]+=1; cur=None
        continue
    m=re.search(r'Device Frame:\s*(.*?)(\+0x[0-9a-f]+)? in ',line)
    if m: f[m.group(1)[:200]]+=1
for k,v in c.most_common(): print(v,k)
print('total',sum(c.values()))
for k,v in f.most_common(8): print('frame',v,k)
PY
tail -n 3 $R/race.log; cat $R/race-summary.txt | cut -c1-400 | tail -20
gzip -f $R/race.log; tar czf $OUT/R11.tgz -C $OUT R11; echo "done t=$((SECONDS-t0))"
