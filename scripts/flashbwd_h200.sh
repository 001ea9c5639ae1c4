#!/usr/bin/env bash
# The portable flash backward on an H100/H200 (issue 13), everything into OUTDIR (~90 s on a built tree):
#   the GPU tests that check flash's backward (accuracy cases, seq_q != seq_k), `flashbench verify
#   --pass bwd` on odd shapes (GQA/MQA, both masks, both 16-bit types, seq_q != seq_k both ways), then
#   configs/flashbwd-h200.json timed, the main-kernel variants of tests/flash_bwd_variants.cu timed and
#   cross-checked, and a TFLOP/s table printed last.
#     BUILD=build-h200 scripts/flashbwd_h200.sh OUTDIR
# BUILD must hold flashbench and tests/flashbench_gpu_tests (sm_90a or sm_80 build). Each step is
# limited to STEP_TIMEOUT seconds (default 60).
set -uo pipefail
out=${1:?usage: scripts/flashbwd_h200.sh OUTDIR}
build=${BUILD:-build-h200}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
fb="$build/flashbench"
[ -x "$fb" ] && [ -x "$build/tests/flashbench_gpu_tests" ] ||
  { echo "flashbwd_h200.sh: $build has no flashbench or tests/flashbench_gpu_tests" >&2; exit 2; }

step_timeout=60 step_tail=4
. scripts/h200_step.sh

step tests "$build/tests/flashbench_gpu_tests" \
  "naive meets its dtype tolerance and flash the naive-relative rule vs the fp64 reference,seq_q != seq_k*"
step verify sh -c "'$fb' verify -q --seq 1000 --batch 2 --heads 4 --kv-heads 2 --dim 128 --dtype bf16 --causal both --pass bwd &&
                   '$fb' verify -q --seq 333 --heads 8 --kv-heads 1 --dim 64 --dtype fp16 --causal both --pass bwd &&
                   '$fb' verify -q --seq 4099 --heads 4 --kv-heads 2 --dim 128 --dtype fp16 --causal both --pass bwd &&
                   '$fb' verify -q --seq-q 200 --seq-k 700 --heads 4 --kv-heads 2 --dim 128 --dtype bf16 --causal both --pass bwd &&
                   '$fb' verify -q --seq-q 700 --seq-k 130 --heads 2 --dim 64 --dtype bf16 --causal both --pass bwd"
# Main-kernel variants (tests/flash_bwd_variants.cu): timed and cross-checked in one process. VARIANTS=0
# skips them (the nvcc compile takes ~30 s, the runs ~30 s; limit VARIANTS_TIMEOUT, default 150 s).
if [ "${VARIANTS:-1}" = 1 ]; then
  tmp=$(mktemp -d)
  nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  STEP_TIMEOUT=${VARIANTS_TIMEOUT:-150} step variants sh -c "'$nvcc' -std=c++17 -O3 -arch=${VARIANTS_ARCH:-sm_90a} --expt-relaxed-constexpr -Ikernels \
                       tests/flash_bwd_variants.cu -o '$tmp/flash_bwd_variants' && '$tmp/flash_bwd_variants'"
  cat "$out/variants.log"
  rm -rf "$tmp"
fi
step run "$fb" run configs/flashbwd-h200.json --no-ceilings -q -o "$out/flashbwd-h200.json"

# TFLOP/s per case (median time).
python3 - "$out/flashbwd-h200.json" <<'PY' | tee "$out/table.txt"
import json, sys
try:
    results = json.load(open(sys.argv[1]))["results"]
except (OSError, ValueError, KeyError) as e:
    sys.exit(f"({sys.argv[1]}: {e})")
print(f'{"dtype":5} {"mask":6} {"d":>4} {"N":>6} {"flash TFLOP/s":>14} verified')
for r in sorted(results, key=lambda r: (r["case"]["head_dim"], r["case"]["causal"], r["case"].get("seq_q", r["case"].get("seq")))):
    c = r["case"]
    t = f'{r["tflops"]:.0f}' if r["status"] == "ok" else r["status"]
    print(f'{c["dtype"]:5} {"causal" if c["causal"] else "full":6} {c["head_dim"]:>4} {c.get("seq_q", c.get("seq")):>6} {t:>14} {r.get("verified")}')
PY
printf '%s\n' "${summary[@]}"
exit "$failed"
