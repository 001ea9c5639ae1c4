#!/usr/bin/env bash
# Session 46: builds build-dev on the device (sm_90a, Release, -j16: about a minute) and packs it into out/ as
# scripts/call_pack.sh does here, so that the prepared calls (call_begin unpacks out/b.txz) run unchanged, where no
# sm_90a build of the commit is at hand here. COMMIT: the full hash of the tree sent, typed into the device command
# as `git rev-parse HEAD` prints it here: the device's copy of the checkout carries the git metadata of the session's
# first commit (session 46's peers records named it), so the build names COMMIT through FLASHBENCH_GIT
# (cmake/version.cmake) and out/commit.txt holds it. On a warm machine a later call finds out/ (ignored, not carried)
# and skips the build:
#   [ -f out/b.txz ] || bash results/h200/s46/calls/devbuild.sh COMMIT || exit 1; bash results/h200/s46/calls/callL.sh
set -uo pipefail
commit=${1:-}
if ! [[ "$commit" =~ ^[0-9a-f]{40}$ ]]; then
  echo "devbuild: COMMIT must be the tree's full 40-digit hash (git rev-parse HEAD, run where the tree was sent from)"
  exit 2
fi
export FLASHBENCH_GIT=${commit:0:12}
log=$(mktemp)
s=$SECONDS
if ! cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DPython3_EXECUTABLE="$(command -v python3)" > "$log" 2>&1; then
  tail -30 "$log"; echo "devbuild: configure failed"; exit 1
fi
files=(flashbench tests/flashbench_gpu_tests tests/libfb_fixture_fault.so examples/plugin/libfb_example_cuda.so)
if ! cmake --build build-dev -j16 --target flashbench flashbench_gpu_tests fb_fixture_fault fb_example_cuda \
    > "$log" 2>&1; then
  grep -m5 -B2 -A8 "error" "$log"; tail -20 "$log"; echo "devbuild: build failed"; exit 1
fi
build-dev/flashbench --version
rm -rf out && mkdir -p out
tar cf - "${files[@]/#/build-dev/}" | xz -T16 -0 > out/b.txz
pwd > out/srcdir.txt
echo "$commit" > out/commit.txt
echo "devbuild: built and packed in $((SECONDS - s)) s ($commit)"
