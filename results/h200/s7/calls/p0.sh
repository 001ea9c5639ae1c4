#!/usr/bin/env bash
# Session 7 call P0: Nsight Compute profiles of main (43640ef) for the helpers: per-kernel sections + stall sampling.
R=$OUT/P0; mkdir -p $R; DEADLINE=300 source out/common6.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $R/smi-start.txt
SECS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy --section SourceCounters --section InstructionStats"
FB="$B/flashbench run --no-ceilings --warmup 0 --reps 1 --warmup-time 0 -q"
for c in fwd128 fwd64 bwd128 mqabwd fp8 fp32 flashbwd128; do
  TAILN=0 step ncu-$c 60 ncu $SECS -c 14 $FB out/prof/$c.json -o /tmp/$c.json
done
cat > /tmp/mqa.json <<'J'
{"name":"mqa-times","seq":[1024,4096,16384],"tokens":16384,"heads":[8,32],"kv_heads":[1,8],"head_dim":[128],"dtype":["bf16"],"causal":[true,false],"pass":["bwd"],"kernels":["flash-sm90","cudnn"],"warmup":0,"reps":1,"seed":42,"verify":false}
J
TAILN=0 step mqa-times 60 ncu --csv --metrics gpu__time_duration.sum $FB /tmp/mqa.json -o /tmp/mqa-out.json
TAILN=3 step mqa-bench 60 $B/flashbench run --no-ceilings /tmp/mqa.json --warmup 3 --reps 10 -o $R/mqa-bench.json
grep -h "Duration\|^  [a-z_].*(" $R/ncu-*.log | head -0
for f in $R/ncu-*.log; do echo "$f: $(grep -c 'Section: GPU Speed Of Light' $f) kernels"; done
tar czf $OUT/P0.tgz -C $OUT P0 && rm -rf $R; echo "done t=$((SECONDS-t0))"
