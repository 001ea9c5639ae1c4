# sourced: builds flashbench + GPU tests for sm_90a on the device, or unpacks a carried build (USEBIN=file) into $B
# (B=build-loc for a build made on the CPU machine in the same tree path: the GPU tests' plug-in and fixture paths
# are compiled in, so the unpacked tree must sit where it was built)
B=${B:-build-dev}
if [ -n "${USEBIN:-}" ] && ls $USEBIN.* > /dev/null 2>&1; then
  rm -rf $B; mkdir -p $B && cat $USEBIN.* | tar xJf - -C $B && echo "== unpacked $USEBIN.* into $B"
fi
if [ ! -x $B/flashbench ] || [ ! -x $B/tests/flashbench_gpu_tests ]; then
  s=$SECONDS
  cmake -S . -B $B -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_BUILD_TYPE=Release > $R/build.log 2>&1 &&
  cmake --build $B -j16 --target flashbench flashbench_gpu_tests ${EXTRA_TARGETS:-} >> $R/build.log 2>&1
  echo "== build rc=$? $((SECONDS-s))s"; tail -n 3 $R/build.log
fi
export BUILD=$B
