#!/usr/bin/env bash
# Session 26 call J (one H200; issue 13): main 621bc89's binaries (the shipped head-split model; commit.txt), built on
# the lead's machine and carried: the GPU tests of both changed paths ([bwd_gqa], [flashfwd]) and the GQA grid's one
# shape whose split changed (32 q / 8 kv heads, 16k tokens, N = 4096, causal backward, d = 64 and 128), verified.
R=$OUT/J; mkdir -p $R
tar xJf out/b.txz
src=$(cat out/srcdir.txt)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
fb=$src/build-dev/flashbench
cat out/commit.txt > $R/commit.txt
timeout 200 $src/build-dev/tests/flashbench_gpu_tests "[bwd_gqa],[flashfwd]" > $R/tests.log 2>&1; echo "tests rc=$?"
tail -n 3 $R/tests.log
for g in gqa-h200 gqa-d64-h200; do
  timeout 60 $fb run configs/$g.json --filter 'b4-h32-kv8-n4096-d(64|128)-bf16-causal-bwd' --kernels flash --no-ceilings \
    -o $R/$g.json > $R/$g.log 2>&1; echo "$g rc=$?"; tail -n 4 $R/$g.log
done
tar czf $OUT/J.tgz -C $OUT J && rm -rf $R
