#!/usr/bin/env bash
# Session 43+ call E (one H200), prepared in session 42: the portable kernels' sm_80 code on a GPU for the first time.
# An A100 runs the portable kernels as compiled for sm_80, and some of that code differs from the sm_90a build's
# (#if __CUDA_ARCH__ >= 900: scalar atomics for the dQ / dK / dV reductions in place of red.global.add.v4, four 4-byte
# stores in place of stmatrix, no griddepcontrol); no GPU here has run it. A build for "80" alone holds sm_80 SASS and
# compute_80 PTX; the H200 cannot run the SASS, so the driver compiles the PTX for it: the sm_80 source paths, run on
# real hardware. Since session 42 the forward launches its tail in stream order there (programmatic_launch_ok: the
# code has no griddepcontrol), as on an A100. Not an A100: the tile configurations follow the H200's shared memory,
# and nothing here is a timing. Built on the device (~1-2 min at -j16), nothing carried.
# Cases: sm80ptx-main (d = 64 / 128, bf16 / fp16, MHA / GQA, both masks, fwd / bwd, N = 1100 / 3000), sm80ptx-dims
# (d = 32 / 96 / 256, fp32 / bf16, N = 257), sm80ptx-decode (1 and 4 query rows on 3000 keys, flash and flash-decode),
# every case verified against the fp64 reference; flash-sm90 listed in sm80ptx-main, where every case must be skipped
# because the build has no sm_90a code; sm80ptx_summary.py's table last (exit 1 if flash or flash-decode failed a case
# it ran, or flash-sm90 was not skipped so). Dry-run on the CPU in session 42: the "80" build configures and builds
# (2.5 min at -j2; 40 cubins and 40 PTX, all sm_80), the specs run and the summary reads them.
set -uo pipefail
export DEADLINE=${DEADLINE:-540}
source scripts/call_step.sh  # step, left, smi_start/stop, call_end (no call_begin: nothing carried)
R=$OUT/E; mkdir -p $R; t0=$SECONDS
c=results/h200/s42/calls
git rev-parse HEAD > $R/commit.txt 2>/dev/null || true
step configure 90 cmake -S . -B b80 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=80 -DFLASHBENCH_TESTS=OFF \
  -DFLASHBENCH_PTXAS_LOG=OFF -DPython3_EXECUTABLE="$(command -v python3)"
step build 300 cmake --build b80 -j16 --target flashbench
fb=b80/flashbench
[ -x $fb ] || { echo "no flashbench built"; tail -30 $R/build.log; call_end E; exit 1; }
# what the binary holds: sm_80 SASS and compute_80 PTX, no sm_90 code (so every kernel here is the PTX, JIT-compiled)
step elf 30 bash -c "{ cuobjdump --list-elf $fb; cuobjdump --list-ptx $fb; } |
  sed -E 's/.*\\.([a-z]+_[0-9a-z]+)\\.(cubin|ptx)\$/\\2 \\1/' | sort | uniq -c"
step info 30 $fb info
export CUDA_CACHE_MAXSIZE=4294967296 CUDA_CACHE_PATH=$PWD/b80/jit-cache
smi_start
for s in sm80ptx-main sm80ptx-dims sm80ptx-decode; do
  step run-$s 150 $fb run $c/$s.json --no-ceilings -q -o $R/$s.json
done
smi_stop
cat $R/elf.log
grep -E "^  (flash|naive|flash-decode) " $R/info.log | cut -c1-110
python3 $c/sm80ptx_summary.py $R/sm80ptx-{main,dims,decode}.json > $R/table.txt 2>&1; echo "summary rc=$?" >> $R/table.txt
cut -c1-200 $R/table.txt
call_end E
