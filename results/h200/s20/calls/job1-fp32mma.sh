#!/usr/bin/env bash
# Session 20, first call (fp32; issue 15; <= 40 s on the H200): the known-order MMA chain probe, no cuBLAS.
# Why (docs/perf-notes.md, flash-sm90 fp32 backward, "Session 19: fp16 pairs ..." and its "prepared for session 20"
# subsection): session 19's cuBLAS probe put fp16's accumulation at 6.9x TF32's max error, but cuBLAS's K order is its
# own (its TF32 kernel looked split-K). Here one warp (mma.sync m16n8k16 / m16n8k8) or one warpgroup (wgmma m64n8k16 /
# m64n8k8, A from registers, B from shared memory) runs chains of MMAs in an order the program fixes, and the host
# replays that order under the rn / rz / tr accumulator models (per MMA and per half MMA), over K = 64..16384, on
# seeded inputs (positive, mixed, rows at 2^-20, near 65504, beyond fp16's range, K halves 2^24 apart); then the
# 3xTF32 and the tile-scaled 3xFP16 split GEMMs built from the same MMAs, hi*hi and the cross terms in separate
# accumulators, per 128-long tile (the kernel's habit) and chained.
# Steps:
#   1. nvidia-smi snapshot.
#   2. $BUILD/tests/flashbench_mma_probe --check (limit 10 s): fragment layouts on small integers (every sum exact),
#      both formats, both instructions; a FAILED instruction's rows below are invalid (the table says so first).
#   3. $BUILD/tests/flashbench_mma_probe --json (limit 28 s, its own budget 22 s: rows past it are skipped and
#      counted, longest K first; seed 20, 8 tiles = 1024 outputs a row; ~5 s expected on 16 cores): the tables and
#      the verdicts with the pre-registered decision line. MMA_PROBE_ARGS adds arguments (a dry run without a GPU:
#      MMA_PROBE_ARGS="--emulate-hw tr,rz" -- the output then says EMULATED).
# Table last: OUTDIR/table.txt (mma-probe.json, check.log, probe.log beside it).
#   BUILD=<build dir with tests/flashbench_mma_probe> OUTDIR=<dir> bash results/h200/s20/calls/job1-fp32mma.sh
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=$(cd "$build" && pwd)
cd "$(dirname "$0")/../../../.." || exit 1
probe="$build/tests/flashbench_mma_probe"
read -r -a extra <<<"${MMA_PROBE_ARGS:-}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
s=$SECONDS
if [ -x "$probe" ]; then
  timeout 10 "$probe" --check "${extra[@]}" >"$out/check.log" 2>&1
  rc_check=$?
  timeout 28 "$probe" --budget 22 --json "$out/mma-probe.json" "${extra[@]}" >"$out/probe.log" 2>&1
  rc_probe=$?
else
  echo "no $probe (build the flashbench_mma_probe target)" | tee "$out/check.log" >"$out/probe.log"
  rc_check=127
  rc_probe=127
fi
took=$((SECONDS - s))
{
  echo "# session 20 call 1, fp32 known-order MMA probe (results/h200/s20/calls/job1-fp32mma.sh); $(date -u +%FT%TZ)"
  echo "# git: $(git rev-parse --short HEAD 2>/dev/null || echo '?'); check rc=$rc_check, probe rc=$rc_probe (124 = cut; 77 = no GPU); ${took}s"
  echo "# gpu: $(tail -n 1 "$out/nvidia-smi.csv" 2>/dev/null)"
  if [ "$rc_check" != 0 ]; then
    echo "# LAYOUT CHECK NOT PASSED (rc=$rc_check): an instruction marked FAILED below has invalid rows"
  fi
  cat "$out/check.log"
  cat "$out/probe.log"
} >"$out/table.txt.tmp"
mv "$out/table.txt.tmp" "$out/table.txt"
echo "fp32 mma probe: check rc=$rc_check, probe rc=$rc_probe, ${took}s; table: $out/table.txt"
exit 0
