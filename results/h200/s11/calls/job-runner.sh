#!/usr/bin/env bash
# Session 11, runner: a kernel that faults on the GPU (illegal address) loses the CUDA context. Checks that
# flashbench records it and goes no further: the GPU test by its name, then the CLI by hand on a sweep with
# the faulting plug-in (tests/plugins/fault.cu, target fb_fixture_fault), printing the exit status (3
# expected), stderr (one line expected) and the results file row by row. About 15 s on an H200.
# Env: BUILD (built targets: flashbench flashbench_gpu_tests fb_fixture_fault), OUTDIR.
set -uo pipefail
: "${BUILD:?BUILD=<build dir>}" "${OUTDIR:?OUTDIR=<dir>}"
mkdir -p "$OUTDIR"
fb=$BUILD/flashbench
lib=$BUILD/tests/libfb_fixture_fault.so

echo "== GPU test"
timeout 25 "$BUILD/tests/flashbench_gpu_tests" "a kernel that loses the CUDA context*" > "$OUTDIR/gputest.log" 2>&1
echo "gpu test rc=$?"
tail -n 4 "$OUTDIR/gputest.log"

echo "== CLI: naive, the faulting kernel (runs only at seq 256), flash over seq 128, 256, 384"
cat > "$OUTDIR/fault-spec.json" <<'JSON'
{"seq": [128, 256, 384], "batch": [1], "heads": [2], "head_dim": [64], "dtype": ["bf16"], "causal": [false],
 "pass": ["fwd"], "kernels": ["naive", "fault-illegal-address", "flash"], "warmup": 1, "reps": 3}
JSON
rm -f "$OUTDIR/fault.json" "$OUTDIR/fault.json.journal.jsonl"
timeout 10 "$fb" run "$OUTDIR/fault-spec.json" --backend cuda --kernel-lib "$lib" --no-ceilings --warmup-time 0 \
  -q -o "$OUTDIR/fault.json" 2> "$OUTDIR/fault.stderr"
echo "run rc=$? (3 expected); stderr, $(wc -l < "$OUTDIR/fault.stderr") line(s) (1 expected):"
cat "$OUTDIR/fault.stderr"
summary() {
  python3 - "$1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print(f"complete={j['complete']} rows={len(j['results'])}")
for r in j["results"]:
    print(f"  {r['key']:<34} {r['kernel']:<22} {r['status']:<8} verified={r['verified']!s:<5} {r['reason'][:110]}")
PY
}
[ -f "$OUTDIR/fault.json" ] && summary "$OUTDIR/fault.json" || echo "no results file"

echo "== CLI: --resume (a new process, a new context)"
timeout 10 "$fb" run "$OUTDIR/fault-spec.json" --backend cuda --kernel-lib "$lib" --no-ceilings --warmup-time 0 \
  -q -o "$OUTDIR/fault.json" --resume 2> "$OUTDIR/resume.stderr"
echo "resume rc=$? (1 expected: the fault's row stays failed); journal left: $(ls "$OUTDIR"/*.journal.jsonl 2>/dev/null | wc -l)"
cat "$OUTDIR/resume.stderr"
[ -f "$OUTDIR/fault.json" ] && summary "$OUTDIR/fault.json"
