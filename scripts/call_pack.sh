#!/usr/bin/env bash
# The lead's side of a device call (scripts/call_step.sh's call_begin unpacks it there): packs a build made here into
# out/ at the repo root, for the device tool's `carry: ["out"]`.
#   scripts/call_pack.sh     (after building build-dev for sm_90a: cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release
#                             -DCMAKE_CUDA_ARCHITECTURES=90a; cmake --build build-dev --target flashbench
#                             flashbench_gpu_tests flashbench_tests fb_fixture_fault fb_example_cuda
#                             flashbench_capi)
# out/b.txz: build-dev's flashbench, GPU tests, their fixture library, the CUDA example plug-in and the C API's
# library (binaries stripped); out/srcdir.txt: this checkout's absolute path (the build's own paths name it,
# call_begin links it on the device); out/commit.txt: HEAD, which must be the tree built: commit first, so that
# what ran can be named (a tree with uncommitted changes to tracked files is refused). Kernels that fail CI's ptxas
# spill check (where the build kept ptxas's reports) are refused too.
#   BASE_BUILD=DIR scripts/call_pack.sh
# also packs DIR's libflashbench_capi.so (a build of another commit, e.g. the one before a kernel change, configured as
# build-dev is; DIR/flashbench names its commit) as build-base/libflashbench_capi.so, and its commit as
# out/base_commit.txt: call_begin exports FB_CAPI_LIB_BASE to it, so that peers.py times the two builds' kernels in one
# loop (scripts/fb_torch.py: flash_sm90_base, flash_base).
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-dev  # its own paths (plug-in and fixture locations) name build-dev under this checkout
if ! git diff --quiet HEAD; then
  echo "call_pack.sh: the tree has uncommitted changes: commit them first, so that commit.txt names what was built" >&2
  exit 2
fi
files=(flashbench tests/flashbench_gpu_tests tests/libfb_fixture_fault.so examples/plugin/libfb_example_cuda.so
       libflashbench_capi.so)  # the C API (scripts/fb_torch.py: flashbench's kernels under peers.py)
for f in "${files[@]}"; do
  [ -f "$build/$f" ] || { echo "call_pack.sh: $build/$f is missing (build it first)" >&2; exit 2; }
done
# The binary names the commit it was built from (cmake/version.cmake): it must be HEAD, or commit.txt would lie.
built=$("$build/flashbench" --version | sed -n 's/.*(git \([0-9a-f]*\)\(-dirty\)\{0,1\}).*/\1\2/p')
head=$(git rev-parse --short=12 HEAD)
if [ "$built" != "$head" ]; then
  echo "call_pack.sh: $build/flashbench was built from '${built:-?}', HEAD is $head: rebuild it first" >&2
  exit 2
fi
# The kernels' spills against the CI's baseline (ptxas_spills, tests/CMakeLists.txt), where the build kept ptxas's
# reports: a kernel that spills fails CI, so it is not timed either (session 56's call A timed one that did).
cuda_cmake=$(ls "$build"/CMakeFiles/*/CMakeCUDACompiler.cmake 2>/dev/null | head -1 || true)
nvcc_version=""
[ -n "$cuda_cmake" ] && nvcc_version=$(sed -n 's/^set(CMAKE_CUDA_COMPILER_VERSION "\(.*\)")$/\1/p' "$cuda_cmake")
if [ -n "$nvcc_version" ] && [ -f scripts/ptxas_spills.py ] && [ -d "$build/CMakeFiles/flashbench_kernels.dir" ]; then
  rc=0
  spills=$(python3 scripts/ptxas_spills.py "$build/CMakeFiles/flashbench_kernels.dir" --allow tests/data/ptxas_spills.json \
    --nvcc-version "$nvcc_version" 2>&1) || rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
    printf '%s\n' "$spills" | grep -v "^ *$" | head -8 >&2
    echo "call_pack.sh: $build's kernels fail the ptxas spill check (ptxas_spills, as CI runs it): fix them first" >&2
    exit 2
  fi
fi
base_commit=""
if [ -n "${BASE_BUILD:-}" ]; then
  for f in libflashbench_capi.so flashbench; do
    [ -f "$BASE_BUILD/$f" ] || { echo "call_pack.sh: BASE_BUILD: $BASE_BUILD/$f is missing (build it)" >&2; exit 2; }
  done
  base_commit=$("$BASE_BUILD/flashbench" --version | sed -n 's/.*(git \([0-9a-f]*\)\(-dirty\)\{0,1\}).*/\1\2/p')
  case "$base_commit" in
    ""|*-dirty) echo "call_pack.sh: BASE_BUILD: $BASE_BUILD/flashbench names no clean commit ('$base_commit')" >&2
                exit 2 ;;
  esac
  [ "$base_commit" != "$head" ] || { echo "call_pack.sh: BASE_BUILD is a build of HEAD itself" >&2; exit 2; }
fi
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for f in "${files[@]}"; do
  mkdir -p "$stage/build-dev/$(dirname "$f")"
  cp "$build/$f" "$stage/build-dev/$f"
done
strip "$stage/build-dev/flashbench" "$stage/build-dev/tests/flashbench_gpu_tests"
strip --strip-unneeded "$stage/build-dev/libflashbench_capi.so"
dirs=(build-dev)
if [ -n "$base_commit" ]; then
  mkdir -p "$stage/build-base"
  cp "$BASE_BUILD/libflashbench_capi.so" "$stage/build-base/"
  strip --strip-unneeded "$stage/build-base/libflashbench_capi.so"
  dirs+=(build-base)
fi
rm -rf out
mkdir -p out
(cd "$stage" && tar cf - "${dirs[@]}") | xz -T2 -6 > out/b.txz
pwd > out/srcdir.txt
git rev-parse HEAD > out/commit.txt
[ -z "$base_commit" ] || echo "$base_commit" > out/base_commit.txt
summary="out/: b.txz $(du -h out/b.txz | cut -f1), srcdir $(cat out/srcdir.txt), commit $(cut -c1-12 out/commit.txt)"
echo "$summary${base_commit:+, base $base_commit}"
