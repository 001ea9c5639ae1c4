#!/usr/bin/env bash
# A/B of two flashbench builds on one spec, runs interleaved (A B A B ...) so that the device's drift
# over minutes falls on both: then every B run is compared against the A runs as a history.
#   scripts/ab_runs.sh A_EXE B_EXE SPEC OUT_DIR [ROUNDS=2]
# A_ARGS / B_ARGS: extra flags for each side's `run` (e.g. B_ARGS="--warmup-time 0" against a build
# that has no time-based warm-up).
set -euo pipefail
a=$1 b=$2 spec=$3 out=$4 rounds=${5:-2}
mkdir -p "$out"
for i in $(seq 1 "$rounds"); do
  "$a" run "$spec" -q -o "$out/a-$i.json" ${A_ARGS:-}
  "$b" run "$spec" -q -o "$out/b-$i.json" ${B_ARGS:-}
done
for i in $(seq 1 "$rounds"); do
  "$b" compare "$out"/a-*.json "$out/b-$i.json" --force --format json >"$out/b-$i-vs-a.json" || true
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[1], 'geomean B/A', round(j['geomean_ratio'], 4), {k: v for k, v in j['counts'].items() if v})" "$out/b-$i-vs-a.json"
done
