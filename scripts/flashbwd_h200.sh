#!/usr/bin/env bash
# The portable flash backward on an H100/H200 (issue 13), everything into OUTDIR (~55 s on a built tree):
#   the GPU tests that check flash's backward (accuracy cases, seq_q != seq_k), once per FB_FLASH_BWD
#   variant (VARIANTS, default "standard lean", the two there are); per variant `flashbench verify
#   --pass bwd` on two odd shapes (GQA d 128 bf16, MQA d 64 fp16, both masks; the tests cover the rest);
#   configs/flashbwd-h200.json
#   timed REPS times per variant, the variants interleaved (runs drift 2-3% within a call); torch-flash
#   (FlashAttention-2) through scripts/peers.py on the same spec before and after them; a table of TFLOP/s
#   and FA2 time / flash time per case and variant printed last (times: the mean over the runs of each
#   run's median; FA2's the mean of its two runs).
#     BUILD=build-h200 scripts/flashbwd_h200.sh OUTDIR
# BUILD must hold flashbench and tests/flashbench_gpu_tests (sm_90a or sm_80 build). Each step is
# limited to STEP_TIMEOUT seconds (default 60). PEERS=0 skips torch. REPS (default 2). MAIN_VARIANTS=1
# also compiles and runs tests/flash_bwd_variants.cu (the main kernel alone; ~60 s more).
set -uo pipefail
out=${1:?usage: scripts/flashbwd_h200.sh OUTDIR}
build=${BUILD:-build-h200}
variants=${VARIANTS:-standard lean}
reps=${REPS:-2}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
fb="$build/flashbench"
[ -x "$fb" ] && [ -x "$build/tests/flashbench_gpu_tests" ] ||
  { echo "flashbwd_h200.sh: $build has no flashbench or tests/flashbench_gpu_tests" >&2; exit 2; }

step_timeout=60 step_tail=2 step_name_width=16
. scripts/h200_step.sh

for v in $variants; do
  step "tests-$v" env FB_FLASH_BWD="$v" "$build/tests/flashbench_gpu_tests" \
    "naive meets its dtype tolerance and flash the naive-relative rule vs the fp64 reference,seq_q != seq_k*"
  step "verify-$v" env FB_FLASH_BWD="$v" sh -c "
    '$fb' verify -q --seq 1000 --batch 2 --heads 4 --kv-heads 2 --dim 128 --dtype bf16 --causal both --pass bwd &&
    '$fb' verify -q --seq 333 --heads 8 --kv-heads 1 --dim 64 --dtype fp16 --causal both --pass bwd"
done
peers() {  # N
  [ "${PEERS:-1}" = 1 ] &&
    step "peers-$1" python3 scripts/peers.py configs/flashbwd-h200.json --backends flash -o "$out/peers-$1.json"
}
peers 1
for r in $(seq 1 "$reps"); do
  for v in $variants; do
    step "run-$v-$r" env FB_FLASH_BWD="$v" "$fb" run configs/flashbwd-h200.json --no-ceilings -q \
      -o "$out/flash-$v-$r.json"
  done
done
peers 2
if [ "${MAIN_VARIANTS:-0}" = 1 ]; then
  tmp=$(mktemp -d)
  nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  STEP_TIMEOUT=${VARIANTS_TIMEOUT:-150} step main-variants sh -c "'$nvcc' -std=c++17 -O3 -arch=${VARIANTS_ARCH:-sm_90a} --expt-relaxed-constexpr -Ikernels \
                       tests/flash_bwd_variants.cu -o '$tmp/flash_bwd_variants' && '$tmp/flash_bwd_variants'"
  cat "$out/main-variants.log"
  rm -rf "$tmp"
fi

# Per case: TFLOP/s of each variant (mean of its runs' median times) and FA2's time over each variant's.
python3 - "$out" "$reps" $variants <<'PY' | tee "$out/table.txt"
import json, os, sys
out, reps, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def load(name, kernel):
    try:
        return {r["key"]: r for r in json.load(open(os.path.join(out, name)))["results"]
                if r["status"] == "ok" and r["kernel"] == kernel}
    except (OSError, ValueError, KeyError) as e:
        print(f"({name}: {e})")
        return {}
def merge(runs):
    # key -> (record of the first run, mean median time over the runs that have the key)
    merged = {}
    for k in {k for r in runs for k in r}:
        times = [r[k]["time_ms"]["median"] for r in runs if k in r]
        first = next(r[k] for r in runs if k in r)
        merged[k] = (first, sum(times) / len(times), len(times))
    return merged
runs = {v: merge([load(f"flash-{v}-{r}.json", "flash") for r in range(1, reps + 1)]) for v in variants}
fa2 = merge([load(f"peers-{i}.json", "torch-flash") for i in (1, 2)
             if os.path.exists(os.path.join(out, f"peers-{i}.json"))])
def tflops(rec, t):  # the record's TFLOP/s rescaled to the mean time
    return rec["tflops"] * rec["time_ms"]["median"] / t
keys = sorted({k for r in runs.values() for k in r},
              key=lambda k: next((r[k][0]["case"]["head_dim"], r[k][0]["case"]["causal"],
                                  r[k][0]["case"].get("seq_q", r[k][0]["case"].get("seq")))
                                 for r in runs.values() if k in r))
print(f"TFLOP/s per variant (mean of {reps} runs); x = FA2 time / flash time; "
      f"ratio = {variants[0]} time / {variants[-1]} time (> 1: {variants[-1]} faster)")
print(f'{"case":38}' + "".join(f"{v:>16}" for v in variants) + f'{"FA2":>8}' + f'{"ratio":>8}')
for k in keys:
    t_fa2 = fa2[k][1] if k in fa2 else None
    row = f"{k:38}"
    for v in variants:
        if k not in runs[v]:
            row += f'{"-":>16}'
            continue
        rec, t, n = runs[v][k]
        x = f" {t_fa2 / t:.3f}x" if t_fa2 else ""
        row += f'{tflops(rec, t):>8.0f}{x:>8}'
    row += f'{tflops(*fa2[k][:2]):>8.0f}' if k in fa2 else f'{"-":>8}'
    if k in runs[variants[0]] and k in runs[variants[-1]]:
        row += f'{runs[variants[0]][k][1] / runs[variants[-1]][k][1]:>8.3f}'
    print(row)
PY
printf '%s\n' "${summary[@]}"
exit "$failed"
