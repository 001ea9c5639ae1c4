# Sourced by the scripts/*_h200.sh device scripts (by its path, or after they cd to the repo root):
#   h200_dirs OUTDIR
# makes OUTDIR and sets $out to its absolute path, build to $BUILD (default build-h200), fb and tests to
# its flashbench and GPU test binaries, and moves to the repo root (where configs/ and scripts/ are).
#   step NAME COMMAND...
# runs COMMAND with its output in $out/NAME.log under a time limit (STEP_TIMEOUT from the environment, else
# the script's step_timeout, else 60 s), adds "NAME rc=.. Ns" to the summary array, sets failed=1 when the
# command fails or times out, and shows the log's last step_tail lines (default 4; 0 shows none) on stderr:
# with step_grep=REGEX, the last step_tail lines that match REGEX instead. step_rc is then the command's
# exit status (124: timed out), for a script that stops after a hang. A failing step never stops the
# script by itself: the rest still run, and the summary says which failed. With step_result=REGEX, the
# summary line ends with the log's last line that matches REGEX (a test binary's pass/fail count).
#   require_build SCRIPT
# ends the script (exit 2, naming SCRIPT) when $build has no flashbench or GPU test binary.
#   ensure_build SCRIPT
# configures and builds $build for sm_90a (flashbench and the GPU tests, log in $out/build.log) when it has
# no flashbench or GPU test binary yet; a failed build ends the script (exit 1), naming SCRIPT.
h200_dirs() {  # OUTDIR
  build=${BUILD:-build-h200}
  fb="$build/flashbench"
  tests="$build/tests/flashbench_gpu_tests"
  mkdir -p "$1" && out=$(cd "$1" && pwd) || { echo "$0: cannot make $1" >&2; exit 2; }
  cd "$(dirname "$0")/.." || exit 2
}

failed=0
step_rc=0
summary=()
step() {  # name, command...
  local name=$1
  shift
  local t0=$SECONDS
  echo "=== $name: $*" >&2
  timeout "${STEP_TIMEOUT:-${step_timeout:-60}}" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  step_rc=$rc
  [ "$rc" -eq 0 ] || failed=1
  local result=""
  [ -z "${step_result:-}" ] || result="  $(grep -E "$step_result" "$out/$name.log" | tail -n 1)"
  summary+=("$(printf "%-${step_name_width:-8}s rc=%-3s %4ss%s" "$name" "$rc" "$((SECONDS - t0))" "$result")")
  if [ "${step_tail:-4}" -gt 0 ]; then
    if [ -n "${step_grep:-}" ]; then
      grep -E "$step_grep" "$out/$name.log" | tail -n "${step_tail:-4}" >&2
    else
      tail -n "${step_tail:-4}" "$out/$name.log" >&2
    fi
  fi
  return 0
}

require_build() {  # script name
  [ -x "$build/flashbench" ] && [ -x "$build/tests/flashbench_gpu_tests" ] ||
    { echo "$1: $build has no flashbench or tests/flashbench_gpu_tests" >&2; exit 2; }
}

ensure_build() {  # script name
  if [ ! -x "$build/flashbench" ] || [ ! -x "$build/tests/flashbench_gpu_tests" ]; then
    cmake -S . -B "$build" -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 &&
      cmake --build "$build" -j"$(nproc)" --target flashbench flashbench_gpu_tests >>"$out/build.log" 2>&1 ||
      { tail -n 30 "$out/build.log" >&2; echo "$1: the build failed ($out/build.log)" >&2; exit 1; }
  fi
}
