#!/usr/bin/env bash
# Session 7 call V: the fp32 backward's reconverged barriers (84a0708), built here, under synccheck/racecheck.
set -uo pipefail
R=$OUT/V; mkdir -p $R; t0=$SECONDS
export PATH=$PATH:/usr/local/cuda/bin
git log --oneline -1 > $R/commit.txt 2>&1
B=build-v
{ cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a >/dev/null && \
  cmake --build $B -j16 --target flashbench flashbench_gpu_tests; } > $R/build.log 2>&1; echo "build rc=$? t=$((SECONDS-t0))"
tail -3 $R/build.log
timeout 60 $B/tests/flashbench_gpu_tests "[sm90tf32],[fp32tc]" > $R/tests.log 2>&1; echo "tests rc=$? t=$((SECONDS-t0))"; tail -3 $R/tests.log
timeout 150 bash scripts/sanitize.sh -e $B/flashbench -s configs/sanitize-tiled.json -t "synccheck racecheck" $R/san-tiled.json > $R/san.log 2>&1; echo "sanitize rc=$? t=$((SECONDS-t0))"; tail -6 $R/san.log
timeout 40 $B/flashbench run configs/h200-fp32-bwd-quick.json --kernels naive,flash-sm90 -q -o $R/fp32-bwd.json > $R/bwd.log 2>&1; echo "bwd rc=$? t=$((SECONDS-t0))"
python3 - $R/fp32-bwd.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1])); a={}
for r in d['results']: a.setdefault(r['key'],{})[r['kernel']]=r
for k,v in sorted(a.items()):
    s=v.get('flash-sm90'); n=v.get('naive')
    if s and n and s.get('status')=='ok': print(k, f"{s['tflops']:.1f} TF  x{n['time_ms']['median']/s['time_ms']['median']:.2f} naive  verified={s.get('verified')}")
PY
tar czf $OUT/V.tgz -C $OUT V; echo "done t=$((SECONDS-t0))"
