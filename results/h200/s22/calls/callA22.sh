#!/usr/bin/env bash
# Session 22 call A (one H200): int22 = main 31a8944 + the lead's s22m (fp16pair128w2m, w2r, w2pr) + the helpers'
# fp32s22p (fp16pair128w2p) and fp32s22f (fp16pair128w2f), binaries built on the lead's machine for sm_90a and carried
# (out/b.txz; the build's source folder in out/srcdir.txt: the GPU tests hold its paths). ncu's DRAM bytes of one
# backward kernel at N = 1k under the default and the order words; job1-fp32 (every word against w2a under its
# pre-registered rule); every GPU test with the defaults; then, if a word ships, the fp32 sweep under the best one
# beside PyTorch's fp32 SDPA.
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-420}
set -uo pipefail
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {  # name, limit (s), command...: the limit cut to what is left; skipped under 20 s
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt 20 ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; timeout -k 3 $max "$@" > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"; tail -n ${TAILN:-25} $R/$name.log
}
tar xJf out/b.txz && echo "unpacked binaries (t=$((SECONDS-t0)))"
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
B=$src/build-dev
cat out/commit.txt > $R/commit.txt 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/smi0.csv 2>&1
S=results/h200/s22/calls
TAILN=1 step ncudram 45 bash -c "for w in default fp16pair128w2m fp16pair128w2r fp16pair128w2p; do p=\$w; [ \$w = default ] && p=; echo \"== \$w\"; FB_SM90_FP32_BWD_PROBE=\$p ncu --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum -k regex:w2p?_bwd -c 1 $B/flashbench run configs/fp32-fp16pair128-s21.json --filter '^b16-h16-kv16-n1024-d128-fp32-full-bwd\$' --kernels flash-sm90 --no-ceilings -q --warmup 0 --reps 1 --warmup-time 0 | grep -E 'gpu__|dram__|lts__'; done"
grep -E "^==|gpu__|dram__|lts__" $R/ncudram.log | awk -F'","' '/^==/{print;next}{print $(NF-2), $(NF-1), $NF}'
TAILN=30 step fp32 145 env BUILD=$B OUTDIR=$R/fp32 BUDGET=138 bash $S/job1-fp32.sh
TAILN=4 step gputests 110 $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
w=$(python3 -c "
import json,sys
s=json.load(open(sys.argv[1])); v=s['verdict']
ok=[w for w in s['ships']]
print(max(ok, key=lambda w: v[w]['geomean_over_default']) if ok else '')" $R/fp32/summary.json 2>/dev/null)
if [ -n "$w" ]; then
  echo "fp32: $w ships (the best geomean of those that do): the fp32 sweep under it"
  fb=$B/flashbench
  TAILN=2 step fp32sweep 50 env FB_SM90_FP32_BWD_PROBE=$w $fb run configs/fp32-h200.json -q -o $R/fp32-h200.json
  TAILN=2 step peersfp32 45 python3 scripts/peers.py configs/fp32-h200.json --backends efficient,math -o $R/peers-fp32-h200.json
  python3 scripts/ratios.py $R/fp32-h200.json --pair flash-sm90:naive --pair flash:naive > $R/sum-fp32.txt 2>&1; grep -A8 "^summary" $R/sum-fp32.txt
fi
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
