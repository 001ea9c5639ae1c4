#!/usr/bin/env bash
# PREPARED in session 28 for session 29, NOT RUN (issue 13, diagnostic). Carry main's binaries (commit.txt = HEAD).
# ncu with source counters (as call A, ../callA/) of the portable forward as shipped since session 28 (kFwdVAfterS)
# beside FlashAttention-2's at d = 128 bf16 non-causal, batch 3 x 12 heads N = 1280 (call A's shape: what is left of
# the KV step's start once V's copies moved, and FA2's HMMAs among its FMUL / FADD against ours in blocks) and batch
# 4 x 16 heads N = 4096 (a long launch, where per-block work weighs least); then sass_hot.py on each, and
# ncu_pairs.py side by side.
R=$OUT/F; mkdir -p $R; export DEADLINE=${DEADLINE:-200}
set -uo pipefail
t0=$SECONDS
left() { echo $(( DEADLINE - (SECONDS - t0) )); }
step() {  # step NAME MAX_SECONDS CMD...: skipped when under MAX/2 is left; the step's process group stopped at MAX
  local name=$1 max=$2; shift 2
  local l=$(left); if [ "$l" -lt $(( max / 2 )) ]; then echo "SKIP $name (no time)"; return; fi
  [ "$max" -gt "$l" ] && max=$l
  local s=$SECONDS; setsid timeout -k 3 $max "$@" < /dev/null > $R/$name.log 2>&1; local rc=$?
  echo "== $name rc=$rc $((SECONDS-s))s (t=$((SECONDS-t0)))"
}
tar xJf out/b.txz
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
fb=$src/build-dev/flashbench
cat out/commit.txt > $R/commit.txt 2>/dev/null
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
sec="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis
  --section SchedulerStats --section WarpStateStats --section InstructionStats --section Occupancy
  --section LaunchStats --section SourceCounters --import-source no"
one="--warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q"
s26=results/h200/s26/calls
c=results/h200/s28/calls
step fa2-1280 60 $ncu --clock-control none --kernel-name regex:flash_fwd --launch-skip 1 --launch-count 1 $sec \
  -f -o $R/fa2-1280 python3 $s26/torch_flash_one.py 3 12 1280 128
step ours-1280 60 $ncu --clock-control none --kernel-name regex:flash_fwd_tc --launch-skip 1 --launch-count 1 $sec \
  -f -o $R/ours-1280 $fb run $c/late-odd.json --filter '^b3-h12-kv12-n1280-d128-bf16-full-fwd$' $one \
  -o $R/ours-1280-run.json
step fa2-4096 60 $ncu --clock-control none --kernel-name regex:flash_fwd --launch-skip 1 --launch-count 1 $sec \
  -f -o $R/fa2-4096 python3 $s26/torch_flash_one.py 4 16 4096 128
step ours-4096 60 $ncu --clock-control none --kernel-name regex:flash_fwd_tc --launch-skip 1 --launch-count 1 $sec \
  -f -o $R/ours-4096 $fb run $c/late-grid.json --filter '^b4-h16-kv16-n4096-d128-bf16-full-fwd$' $one \
  -o $R/ours-4096-run.json
for k in fa2-1280 ours-1280 fa2-4096 ours-4096; do
  [ -f $R/$k.ncu-rep ] || continue
  timeout 20 $ncu --import $R/$k.ncu-rep --page details --csv > $R/$k.csv 2>&1
  timeout 30 $ncu --import $R/$k.ncu-rep --page source --csv --print-source sass > $R/$k-sass.csv 2>&1
  python3 $c/sass_hot.py $R/$k-sass.csv 40 > $R/$k-hot.txt 2>&1
done
python3 results/h200/s27/calls/ncu_pairs.py $R fa2-1280:ours-1280 fa2-4096:ours-4096 > $R/table.txt 2>&1
rm -f $R/*.ncu-rep; gzip -9 $R/*-sass.csv
tar czf $OUT/F.tgz -C $OUT F && rm -rf $R; echo "done t=$((SECONDS-t0))"
