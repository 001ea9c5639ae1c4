#!/usr/bin/env bash
# Session 15 call D (one H200, no device build): main 2181f6a + sm90bwd's round-3 probe (sm90bwds15c 7da7bfc) built
# on the CPU machine and carried; job3-sm90bwd.sh; then ncu's launch facts of torch's cuDNN SDPA kernel and of the
# in-binary cudnn at d = 64 causal N = 512 (torch's cuDNN path is 18% faster than the in-binary one there in F15).
R=$OUT/D; mkdir -p $R; export DEADLINE=${DEADLINE:-200}
export B=${B:-build-loc} USEBIN=${USEBIN:-out/binD.txz}
source out/common15.sh
fb=$B/flashbench
for j in ${JOBS:-sm90bwd}; do
  f=results/h200/s15/calls/job3-$j.sh
  [ -f $f ] || { echo "no round-3 job for $j"; continue; }
  TN=40 JT=${JT:-55} runjob r3-$j $f
done
M=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static
TAILN=3 step ncu-torch 50 ncu --csv --metrics $M -k regex:"sdpa|flash|fmha" -c 6 python3 out/torch_cudnn_probe.py 32 32 512 64 causal
TAILN=3 step ncu-ours 60 ncu --csv --metrics $M -k regex:"sdpa|flash|fmha" -c 8 $fb run configs/issue13-h200.json --kernels cudnn,flash-sm90 --no-ceilings --warmup 1 --reps 2 --warmup-time 0 --filter "b32-h32-kv32-n512-d64-bf16-causal-fwd" -q
for s in ncu-torch ncu-ours; do grep -E '^"' $R/$s.log | python3 -c "
import csv,sys,collections
rows=list(csv.DictReader(sys.stdin)); agg=collections.OrderedDict()
for r in rows:
  k=(r['Kernel Name'][:90]); agg.setdefault(k,{})[r['Metric Name']]=r['Metric Value']
print('== $s'); [print(k, v) for k,v in agg.items()]" 2>&1 | head -30; done
tar czf $OUT/D.tgz -C $OUT D && rm -rf $R; echo "done t=$((SECONDS-t0))"
