#!/usr/bin/env bash
# Session 12 call P0 (no build: session 11's final binaries of main 0a06209, USEBIN=out/bin11.txz):
# the portable forward's GQA rows under band0/nopf beside FA2, and three ncu source-level profiles.
R=$OUT/P0; mkdir -p $R; export DEADLINE=${DEADLINE:-230}
export USEBIN=out/bin11.txz
source out/common11.sh
fb=$B/flashbench
python3 - configs/gqa-h200.json $R/gqafwd.json <<'PY'
import json,sys
s=json.load(open(sys.argv[1])); s.update(name='gqafwd-s12p0', seq=[1024,4096], kernels=['flash'])
s['pass']=['fwd']; json.dump(s,open(sys.argv[2],'w'),indent=1)
PY
for v in ship band0 nopf ship2; do
  p=$v; [ "${v#ship}" != "$v" ] && p=
  TAILN=1 step gqa-$v 40 env FB_FLASH_FWD_PROBE=$p $fb run $R/gqafwd.json -q -o $R/gqa-$v.json
done
TAILN=1 step peers 40 python3 scripts/peers.py $R/gqafwd.json --backends flash -o $R/peers-gqa.json
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
prof() { # name spec filter kernel-regex
  local n=$1; mkdir -p $R/$n
  TAILN=2 step ncu-$n 40 $ncu -f --clock-control none -o $R/$n/rep -k regex:$4 --launch-count 1 --section WarpStateStats --section SourceCounters \
    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section SchedulerStats --section SpeedOfLight \
    --section Occupancy --section LaunchStats \
    $fb run $2 --kernels ${5:-flash-sm90} --filter "$3" --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q
  if [ -f $R/$n/rep.ncu-rep ]; then
    $ncu -i $R/$n/rep.ncu-rep --page details > $R/$n/details.txt 2>&1
    $ncu -i $R/$n/rep.ncu-rep --page source --csv --print-source sass > $R/$n/source-sass.csv 2>&1
    rm -f $R/$n/rep.ncu-rep
  fi
}
prof sm90fwd-d64-n1024 configs/issue13-h200.json 'n1024-d64-bf16-full-fwd' flash_sm90_fwd_kernel
prof fp32bwd-d64-n4096 configs/fp32-h200.json 'n4096-d64-fp32-full-bwd' flash_sm90_tf32_bwd_kernel
prof sm90bwd-d128c-n4096 configs/issue13-h200.json 'n4096-d128-bf16-causal-bwd' flash_sm90_bwd_kernel
python3 scripts/ratios.py $R/gqa-ship.json $R/peers-gqa.json --pair flash:torch-flash > $R/sum-ship.txt 2>&1
for v in band0 nopf ship2; do python3 scripts/ratios.py $R/gqa-$v.json $R/peers-gqa.json --pair flash:torch-flash > $R/sum-$v.txt 2>&1; done
for v in ship band0 nopf ship2; do echo "== $v"; grep -E "^  b" $R/sum-$v.txt | head -8; done
tar czf $OUT/P0.tgz -C $OUT P0 && rm -rf $R; echo "done t=$((SECONDS-t0))"
