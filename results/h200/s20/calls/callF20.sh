#!/usr/bin/env bash
# Session 20 final sweep F20 (one H200): main's final code built on the device for sm_90a: the issue-13 grids (bf16,
# fp16), GQA/MQA at d = 128 and d = 64, fp32, each beside its PyTorch peers in the same call, shapes no config names,
# memcheck/synccheck of the tiled set, then the GPU tests with the time left (call B ran them all with the words that
# are the defaults now named).
R=$OUT/F20; mkdir -p $R; export DEADLINE=${DEADLINE:-555}
export PATH=$PATH:/usr/local/cuda/bin B=${B:-build-dev}
set -uo pipefail
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt 20 ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; timeout $max "$@" > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"; tail -n ${TAILN:-25} $R/$name.log
}
cat out/commit.txt > $R/commit.txt 2>/dev/null
s=$SECONDS
cmake -S . -B $B -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_BUILD_TYPE=Release > $R/build.log 2>&1 &&
  cmake --build $B -j16 --target flashbench flashbench_gpu_tests >> $R/build.log 2>&1
echo "== build rc=$? $((SECONDS-s))s"; tail -n 2 $R/build.log
export BUILD=$B
nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 > $R/smi.csv 2>&1 &
smi=$!
fb=$B/flashbench
pack() { (cd $OUT && rm -f F20-*.tgz && tar czf F20-$1.tgz F20) ; }
TAILN=2 step issue13 100 $fb run configs/issue13-h200.json -q -o $R/issue13-h200.json
TAILN=2 step peers13 90 python3 scripts/peers.py configs/issue13-h200.json --backends flash,cudnn -o $R/peers-issue13-h200.json
pack 1
TAILN=2 step issue13fp16 100 $fb run configs/issue13-fp16-h200.json -q -o $R/issue13-fp16-h200.json
TAILN=2 step peers13fp16 90 python3 scripts/peers.py configs/issue13-fp16-h200.json --backends flash,cudnn -o $R/peers-issue13-fp16-h200.json
pack 2
TAILN=2 step gqa 95 $fb run configs/gqa-h200.json --kernels flash,flash-sm90,cudnn -q -o $R/gqa-h200.json
TAILN=2 step peersgqa 60 python3 scripts/peers.py configs/gqa-h200.json --backends flash,cudnn -o $R/peers-gqa-h200.json
pack 3
TAILN=2 step gqa64 80 $fb run configs/gqa-d64-h200.json --kernels flash,flash-sm90,cudnn -q -o $R/gqa-d64-h200.json
TAILN=2 step peersgqa64 60 python3 scripts/peers.py configs/gqa-d64-h200.json --backends flash,cudnn -o $R/peers-gqa-d64-h200.json
pack 4
TAILN=2 step fp32 50 $fb run configs/fp32-h200.json -q -o $R/fp32-h200.json
TAILN=2 step peersfp32 40 python3 scripts/peers.py configs/fp32-h200.json --backends efficient,math -o $R/peers-fp32-h200.json
pack 5
TAILN=12 step oddshapes 70 bash results/h200/s20/calls/oddshapes20.sh $R
TAILN=8 step san-tiled 90 bash scripts/sanitize.sh -e $fb -s configs/sanitize-tiled.json -t "memcheck synccheck" $R/san-tiled.json
kill $smi
for f in issue13-h200 issue13-fp16-h200 gqa-h200 gqa-d64-h200; do python3 scripts/ratios.py $R/$f.json $R/peers-$f.json --pair flash-sm90:torch-cudnn --pair flash-sm90:cudnn --pair flash:torch-flash > $R/sum-$f.txt 2>&1; grep -A12 "^summary" $R/sum-$f.txt; done
python3 scripts/ratios.py $R/fp32-h200.json --pair flash-sm90:naive --pair flash:naive > $R/sum-fp32.txt 2>&1; grep -A8 "^summary" $R/sum-fp32.txt
pack 6
TAILN=6 step gputests 150 $B/tests/flashbench_gpu_tests
grep -E "test cases|assertions|FAILED" $R/gputests.log | tail -3
rm -f $OUT/F20-*.tgz; tar czf $OUT/F20.tgz -C $OUT F20 && rm -rf $R; echo "done t=$((SECONDS-t0))"
