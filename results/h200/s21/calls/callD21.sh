#!/usr/bin/env bash
# Session 21 call D (one H200): racecheck, synccheck and initcheck of flash-sm90's fp32 backward as shipped
# (configs/sanitize-fp32-bwd-race.json: N = 130, GQA 2 / 1, non-causal, d = 64 = session 20's fp16pair and d = 128 =
# session 21's fp16pair128w2a, both on fp16 pairs with shared-memory hand-offs, never raced-checked before), main's
# final code (F21's binaries, carried as in calls B, C and F21).
R=$OUT/D; mkdir -p $R
set -uo pipefail
t0=$SECONDS
tar xJf out/b.txz && echo "unpacked binaries (t=$((SECONDS-t0)))"
src=$(cat out/srcdir.txt)  # the source folder the carried binaries were built in (their tests hold its paths)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
B=$src/build-dev
cat out/commit.txt > $R/commit.txt 2>/dev/null
timeout -k 3 150 bash scripts/sanitize.sh -e $B/flashbench -s configs/sanitize-fp32-bwd-race.json \
  -t "racecheck synccheck initcheck" $R/race-fp32-bwd.json > $R/race.log 2>&1
echo "== sanitize rc=$? $((SECONDS-t0))s"; tail -n 8 $R/race.log
for f in $R/*racecheck*.log; do [ -f "$f" ] && { echo "-- $f"; grep -m3 -E "RACECHECK SUMMARY|ERROR SUMMARY|hazard" "$f"; gzip -f "$f"; }; done
tar czf $OUT/D.tgz -C $OUT D && rm -rf $R; echo "done t=$((SECONDS-t0))"
