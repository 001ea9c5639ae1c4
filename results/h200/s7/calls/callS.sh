#!/usr/bin/env bash
# Session 7 call S: compute-sanitizer on the kernels changed this session (lane 0) and the engineers' scripts
# re-timing the shipped defaults against session 6's kernels in one call (lane 1), on main's binaries.
R=$OUT/S; mkdir -p $R; export DEADLINE=${DEADLINE:-420}; source out/common6.sh
git log --oneline -1 > $R/commit.txt 2>&1; cat out/commit.txt >> $R/commit.txt
ngpu=$(nvidia-smi -L | wc -l)
fb=$B/flashbench
lane0() {
  TAILN=8 step san-tiled 200 bash scripts/sanitize.sh -e $fb -s configs/sanitize-tiled.json -t "memcheck racecheck synccheck" $R/san-tiled.json
  TAILN=8 step san-decode 90 bash scripts/sanitize.sh -e $fb -s configs/sanitize-decode.json -t "memcheck racecheck synccheck" $R/san-decode.json
  TAILN=6 step san-fp8 40 bash scripts/sanitize.sh -e $fb -s configs/sanitize-fp8.json -t "memcheck" $R/san-fp8.json
  TAILN=6 step san-fp8race 60 bash scripts/sanitize.sh -e $fb -s configs/sanitize-fp8-race.json -t "racecheck synccheck" $R/san-fp8race.json
}
lane1() {
  TAILN=16 step sm90fwd 70 env BUILD=$B bash scripts/sm90fwd_h200.sh $R/sm90fwd nodesc
  TAILN=30 step fp32 70 bash scripts/fp32s7_h200.sh $R/fp32 $B
  TAILN=22 step flashbwd 60 env BUILD=$B bash scripts/flashbwd_h200.sh $R/flashbwd
  TAILN=30 step mqabwd 75 env BUILD=$B bash scripts/mqabwd_h200.sh $R/mqabwd
}
if [ "$ngpu" -ge 2 ]; then
  CUDA_VISIBLE_DEVICES=0 lane0 > $R/lane0.out 2>&1 & p0=$!
  CUDA_VISIBLE_DEVICES=1 lane1 > $R/lane1.out 2>&1 & p1=$!
  wait $p0 $p1
else
  lane0 > $R/lane0.out 2>&1; lane1 > $R/lane1.out 2>&1
fi
cat $R/lane0.out $R/lane1.out | tail -c 9000
tar czf $OUT/S.tgz -C $OUT S && rm -rf $R; echo "done t=$((SECONDS-t0)) gpus=$ngpu"
