#!/usr/bin/env bash
# One-step set-up for a fresh Debian/Ubuntu machine (README's first two commands).
#   scripts/setup.sh run    install what is missing, build (Release), run the default sweep:
#                           configs/gpu-quick.json when flashbench finds a GPU, else configs/quick.json
#   scripts/setup.sh test   install what is missing, build (Release), run every test through ctest
# Environment: BUILD_DIR (default build), JOBS (default: number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
case "$mode" in
  run|test) shift ;;
  *) echo "usage: scripts/setup.sh run|test" >&2; exit 2 ;;
esac
build=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

# Libraries from the distribution; tools only when no other install of them is on PATH (pyenv, modules).
missing=()
for p in libcli11-dev libfmt-dev nlohmann-json3-dev catch2; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
for tool in cmake gcc g++ make git python3; do  # gcc: the example plug-ins are C
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  if [ "$(id -u)" = 0 ]; then sudo=""; elif command -v sudo >/dev/null; then sudo="sudo"; else
    echo "setup: missing packages ${missing[*]} and not root: install them and re-run" >&2; exit 2
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The scripts' tests run with the python3 on PATH, the one the pinned packages are installed into.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$(command -v python3)"
cmake --build "$build" -j "$jobs"

if [ "$mode" = run ]; then
  # The backend `run` picks by itself (auto): CUDA when this build has it and a GPU is visible. On a GPU
  # the CPU's smoke sweep would only time microsecond launches; gpu-quick shows naive vs tiled in seconds.
  spec=quick
  # Read all of info's output first: `info | grep -q` under pipefail fails when grep stops reading
  # early and info, still writing (its JSON is larger on a GPU), dies of SIGPIPE.
  info=$("$build/flashbench" info --json 2>/dev/null || true)
  if grep -q '"backend": "cuda"' <<<"$info"; then spec=gpu-quick; fi
  exec "$build/flashbench" run "configs/$spec.json" -o "$build/$spec.json" --csv "$build/$spec.csv" "$@"
fi

# The plot and peers scripts are tested too: they need the pinned Python packages.
if ! python3 -c "import matplotlib, numpy" >/dev/null 2>&1; then
  python3 -m pip install -q -r scripts/requirements.txt ||
    python3 -m pip install -q --break-system-packages -r scripts/requirements.txt ||
    echo "setup: could not install scripts/requirements.txt; the scripts test will report skipped" >&2
fi
cd "$build" && ctest --output-on-failure "$@"
