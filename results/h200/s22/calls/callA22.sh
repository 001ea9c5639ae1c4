#!/usr/bin/env bash
# Session 22 call A (one H200): s22m's binaries built on the lead's machine for sm_90a and carried (out/b.txz, the
# build's source folder in out/srcdir.txt: the GPU tests hold its paths). job1-fp32 with the lead's word alone
# (fp16pair128w2m, the plane-major w2a; the helpers' words come in call B), then ncu's DRAM bytes of one default and
# one w2m backward kernel at N = 1k (what the plane-major order is for).
R=$OUT/A; mkdir -p $R; export DEADLINE=${DEADLINE:-300}
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
TAILN=3 step ncudram 40 bash -c "for w in default fp16pair128w2m; do p=\$w; [ \$w = default ] && p=; echo \"== \$w\"; FB_SM90_FP32_BWD_PROBE=\$p ncu --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum -k regex:w2_bwd -c 1 $B/flashbench run configs/fp32-fp16pair128-s21.json --filter '^b16-h16-kv16-n1024-d128-fp32-full-bwd\$' --kernels flash-sm90 --no-ceilings -q --warmup 0 --reps 1 --warmup-time 0 | grep -E 'gpu__|dram__|lts__'; done"
grep -E "^==|gpu__|dram__|lts__" $R/ncudram.log | awk -F'","' '/^==/{print;next}{print $(NF-2), $(NF-1), $NF}'
TAILN=40 step fp32 110 env WORDS=fp16pair128w2m BUILD=$B OUTDIR=$R/fp32 BUDGET=100 bash $S/job1-fp32.sh
tar czf $OUT/A.tgz -C $OUT A && rm -rf $R; echo "done t=$((SECONDS-t0))"
