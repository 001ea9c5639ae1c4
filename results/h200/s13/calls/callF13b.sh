#!/usr/bin/env bash
# Session 13 final, part 2 (one H200, part 1's binaries carried: USEBIN=out/bin13.txz (split in 15 MB parts)): GQA/MQA and fp32 beside
# their peers, shapes no config names, compute-sanitizer on the tiled kernels, racecheck with every hazard printed,
# then the engineers' round-2 probe jobs (results/h200/s13/calls/job2-NAME.sh, data for the next session: no default changes after this).
R=$OUT/F13b; mkdir -p $R; export DEADLINE=${DEADLINE:-560}
source out/common13.sh
nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 > $R/smi.csv 2>&1 &
smi=$!
fb=$B/flashbench
pack() { (cd $OUT && rm -f F13b-*.tgz && tar czf F13b-$1.tgz F13b) ; }
TAILN=2 step gqa 95 $fb run configs/gqa-h200.json --kernels flash,flash-sm90,cudnn -q -o $R/gqa-h200.json
TAILN=2 step peersgqa 60 python3 scripts/peers.py configs/gqa-h200.json --backends flash,cudnn -o $R/peers-gqa-h200.json
TAILN=2 step fp32 50 $fb run configs/fp32-h200.json -q -o $R/fp32-h200.json
TAILN=2 step peersfp32 40 python3 scripts/peers.py configs/fp32-h200.json --backends efficient,math -o $R/peers-fp32-h200.json
pack 1
TAILN=8 step fp32race 62 env BUILD=$B OUTDIR=$R/fp32race bash results/h200/s13/calls/job-fp32race.sh
TAILN=12 step oddshapes 70 bash out/oddshapes13.sh $R
pack 2
TAILN=8 step san-tiled 90 bash scripts/sanitize.sh -e $fb -s configs/sanitize-tiled.json -t "memcheck synccheck" $R/san-tiled.json
pack 3
TAILN=3 step race 150 compute-sanitizer --tool racecheck --racecheck-report all --print-limit 1000000 --show-backtrace device --error-exitcode 86 $fb run configs/sanitize-tiled.json --backend cuda -q --no-ceilings -o $R/race.json
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
gzip -f $R/race.log; cut -c1-300 $R/race-summary.txt | tail -12
for j in ${JOBS2:-sm90fwd sm90bwd flashbwd flashfwd fp32}; do
  [ -f results/h200/s13/calls/job2-$j.sh ] || continue
  TN=30 JT=${JT2:-40} runjob r2-$j results/h200/s13/calls/job2-$j.sh; pack 4
done
kill $smi
python3 scripts/ratios.py $R/gqa-h200.json $R/peers-gqa-h200.json --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash > $R/sum-gqa.txt 2>&1; grep -A8 "^summary" $R/sum-gqa.txt
python3 scripts/ratios.py $R/fp32-h200.json --pair flash-sm90:naive --pair flash:naive > $R/sum-fp32.txt 2>&1; grep -A8 "^summary" $R/sum-fp32.txt
rm -f $OUT/F13b-*.tgz; tar czf $OUT/F13b.tgz -C $OUT F13b && rm -rf $R; echo "done t=$((SECONDS-t0))"
