#!/usr/bin/env bash
# Session 8 call S: compute-sanitizer gaps on main's kernels (int8c binaries): flash-decode's racecheck (session 7's
# hit its step limit) in lane 0; initcheck on the tiled kernels and the head split in lane 1.
R=$OUT/S8; mkdir -p $R; export DEADLINE=${DEADLINE:-450}; source out/common6.sh
cat out/commit.txt > $R/commit.txt
ngpu=$(nvidia-smi -L | wc -l)
fb=$B/flashbench
lane0() { TAILN=8 step san-decode-race 420 bash scripts/sanitize.sh -e $fb -s configs/sanitize-decode.json -t "racecheck synccheck" $R/san-decode.json; }
lane1() {
  TAILN=8 step san-tiled-init 200 bash scripts/sanitize.sh -e $fb -s configs/sanitize-tiled.json -t "initcheck" $R/san-tiled-init.json
  TAILN=8 step san-split-init 100 env FB_FLASH_BWD_SPLIT=2 FB_SM90_BWD_SPLIT=2 bash scripts/sanitize.sh -e $fb -s configs/sanitize-split.json -t "initcheck" $R/san-split-init.json
}
if [ "$ngpu" -ge 2 ]; then
  CUDA_VISIBLE_DEVICES=0 lane0 > $R/lane0.out 2>&1 & p0=$!
  CUDA_VISIBLE_DEVICES=1 lane1 > $R/lane1.out 2>&1 & p1=$!
  wait $p0 $p1
else
  lane1 > $R/lane1.out 2>&1; lane0 > $R/lane0.out 2>&1
fi
cat $R/lane0.out $R/lane1.out | tail -c 6000
tar czf $OUT/S8.tgz -C $OUT S8 && rm -rf $R; echo "done t=$((SECONDS-t0)) gpus=$ngpu"
