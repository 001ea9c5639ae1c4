#!/usr/bin/env bash
# The portable flash backward on an H100/H200 (issue 13), everything into OUTDIR (~60 s on a built tree):
#   the GPU tests that check flash's backward (accuracy cases, seq_q != seq_k; the standard variant);
#   per FB_FLASH_BWD variant (VARIANTS, default "standard lean", the two there are): `flashbench verify --pass bwd`
#   on two odd shapes (GQA d 128 bf16, MQA d 64 fp16, both masks; the tests cover the rest) and configs/flashbwd-h200.json
#   timed; torch-flash (FlashAttention-2) on the same spec through scripts/peers.py; a table of TFLOP/s
#   and FA2 time / flash time per case and variant printed last.
#     BUILD=build-h200 scripts/flashbwd_h200.sh OUTDIR
# BUILD must hold flashbench and tests/flashbench_gpu_tests (sm_90a or sm_80 build). Each step is
# limited to STEP_TIMEOUT seconds (default 60). PEERS=0 skips torch. MAIN_VARIANTS=1 also compiles and
# runs tests/flash_bwd_variants.cu (the main kernel alone; ~60 s more).
set -uo pipefail
out=${1:?usage: scripts/flashbwd_h200.sh OUTDIR}
build=${BUILD:-build-h200}
variants=${VARIANTS:-standard lean}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
fb="$build/flashbench"
[ -x "$fb" ] && [ -x "$build/tests/flashbench_gpu_tests" ] ||
  { echo "flashbwd_h200.sh: $build has no flashbench or tests/flashbench_gpu_tests" >&2; exit 2; }

step_timeout=60 step_tail=2 step_name_width=16
. scripts/h200_step.sh

step tests "$build/tests/flashbench_gpu_tests" \
  "naive meets its dtype tolerance and flash the naive-relative rule vs the fp64 reference,seq_q != seq_k*"
for v in $variants; do
  step "verify-$v" env FB_FLASH_BWD="$v" sh -c "
    '$fb' verify -q --seq 1000 --batch 2 --heads 4 --kv-heads 2 --dim 128 --dtype bf16 --causal both --pass bwd &&
    '$fb' verify -q --seq 333 --heads 8 --kv-heads 1 --dim 64 --dtype fp16 --causal both --pass bwd"
  step "run-$v" env FB_FLASH_BWD="$v" "$fb" run configs/flashbwd-h200.json --no-ceilings -q -o "$out/flash-$v.json"
done
if [ "${PEERS:-1}" = 1 ]; then
  step peers python3 scripts/peers.py configs/flashbwd-h200.json --backends flash -o "$out/peers.json"
fi
if [ "${MAIN_VARIANTS:-0}" = 1 ]; then
  tmp=$(mktemp -d)
  nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  STEP_TIMEOUT=${VARIANTS_TIMEOUT:-150} step main-variants sh -c "'$nvcc' -std=c++17 -O3 -arch=${VARIANTS_ARCH:-sm_90a} --expt-relaxed-constexpr -Ikernels \
                       tests/flash_bwd_variants.cu -o '$tmp/flash_bwd_variants' && '$tmp/flash_bwd_variants'"
  cat "$out/main-variants.log"
  rm -rf "$tmp"
fi

# Per case: TFLOP/s of each variant (median time) and FA2's median time over each variant's.
python3 - "$out" $variants <<'PY' | tee "$out/table.txt"
import json, os, sys
out, variants = sys.argv[1], sys.argv[2:]
def load(name, kernel):
    try:
        return {r["key"]: r for r in json.load(open(os.path.join(out, name)))["results"]
                if r["status"] == "ok" and r["kernel"] == kernel}
    except (OSError, ValueError, KeyError) as e:
        print(f"({name}: {e})")
        return {}
runs = {v: load(f"flash-{v}.json", "flash") for v in variants}
fa2 = load("peers.json", "torch-flash") if os.path.exists(os.path.join(out, "peers.json")) else {}
keys = sorted({k for r in runs.values() for k in r},
              key=lambda k: next((r[k]["case"]["head_dim"], r[k]["case"]["causal"], r[k]["case"].get("seq_q", r[k]["case"].get("seq")))
                                 for r in runs.values() if k in r))
print("TFLOP/s per variant; x = FA2 time / flash time")
print(f'{"case":38}' + "".join(f"{v:>16}" for v in variants) + f'{"FA2":>8}')
for k in keys:
    t_fa2 = fa2[k]["time_ms"]["median"] if k in fa2 else None
    row = f"{k:38}"
    for v in variants:
        r = runs[v].get(k)
        if r is None:
            row += f'{"-":>16}'
            continue
        x = f" {t_fa2 / r['time_ms']['median']:.3f}x" if t_fa2 else ""
        row += f'{r["tflops"]:>8.0f}{x:>8}'
    row += f'{fa2[k]["tflops"]:>8.0f}' if k in fa2 else f'{"-":>8}'
    print(row)
PY
printf '%s\n' "${summary[@]}"
exit "$failed"
