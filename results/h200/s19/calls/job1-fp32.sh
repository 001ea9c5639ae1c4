#!/usr/bin/env bash
# Session 19, call B (fp32; issue 15; <= 45 s on the H200): a design study, no kernel. Are fp16 pairs (hi = fp16(x s),
# lo = fp16((x s - hi) 2^11), s a power of two per tile) as accurate as the shipped TF32 pairs under flashbench's FP32
# rule, on the real tensor cores? And does the emulation's accumulator model (products exact, the fp32 accumulator
# rounded toward zero after each MMA) match the hardware?
# Why (docs/perf-notes.md, flash-sm90 fp32 backward, "Session 19: fp16 pairs instead of TF32 pairs"): fp16 wgmma runs at
# twice TF32's rate with half the shared-memory bytes per operand and MN-major operands; the CPU emulation
# (results/model/fp32-split-study.txt) says the tile-scaled fp16 pair passes the rule wherever 3xTF32 does.
# Steps (BUILD is accepted and not used: the study needs python3 + torch only, no flashbench binary):
#   1. nvidia-smi snapshot.
#   2. python3 scripts/fp32_split_study.py --hw --no-emulation (limit 38 s, its own budget 30 s: later forms are
#      skipped past it and say so): an accumulator probe (one fp16 / TF32 / bf16 GEMM on the tensor cores against the
#      rn / rz / tr models), then 7 attention cases (shapes no config names; standard-normal, rows at 2^-20, values
#      near 65504, beyond fp16's range both ways, planes 2^24 apart, sharp softmax; causal and not) with every form's
#      GEMMs on the tensor cores (torch.bmm; fp16 / bf16 with fp32 output, allow_fp16_reduced_precision_reduction
#      False; TF32 through torch's allow_tf32), judged against fp64 by src/judge.cpp's rule with cuBLAS fp32 as the
#      baseline. No torch or no GPU: the step says so and the job still ends with a table (fail soft).
# Table last: OUTDIR/table.txt (study.json beside it).
#   BUILD=<ignored> OUTDIR=<dir> bash results/h200/s19/calls/job1-fp32.sh
set -uo pipefail
: "${BUILD:=}"
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../../../.." || exit 1
t0=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
s=$SECONDS
timeout 38 python3 scripts/fp32_split_study.py --hw --no-emulation --budget 30 --out "$out/study" >"$out/study.log" 2>&1
rc=$?
took=$((SECONDS - s))
{
  echo "# session 19 call B, fp32 split study (results/h200/s19/calls/job1-fp32.sh); $(date -u +%FT%TZ)"
  echo "# git: $(git rev-parse --short HEAD 2>/dev/null || echo '?'); study rc=$rc in ${took}s (124 = cut at 38 s); job ${SECONDS}s"
  echo "# gpu: $(tail -n 1 "$out/nvidia-smi.csv" 2>/dev/null)"
  if [ -s "$out/study/table.txt" ]; then
    cat "$out/study/table.txt"
  else
    echo "# no table from the study (rc=$rc): its log's tail:"
    tail -n 20 "$out/study.log"
  fi
} >"$out/table.txt.tmp"
[ -f "$out/study/study.json" ] && mv "$out/study/study.json" "$out/study.json"
rm -rf "$out/study"
mv "$out/table.txt.tmp" "$out/table.txt"
echo "fp32 study rc=$rc ${took}s; table: $out/table.txt"
exit 0
