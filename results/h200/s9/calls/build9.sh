# sourced: builds flashbench + GPU tests (+ the CUDA plug-in example) for sm_90a on the device unless present
B=build-dev
if [ ! -x $B/flashbench ] || [ ! -x $B/tests/flashbench_gpu_tests ]; then
  s=$SECONDS
  cmake -S . -B $B -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_BUILD_TYPE=Release > $R/build.log 2>&1 &&
  cmake --build $B -j16 --target flashbench flashbench_gpu_tests ${EXTRA_TARGETS:-} >> $R/build.log 2>&1
  echo "== build rc=$? $((SECONDS-s))s"; tail -n 3 $R/build.log
fi
export BUILD=$B
