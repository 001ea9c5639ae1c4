#!/usr/bin/env bash
# The flash-sm90 backward at head dim 256 on an H100/H200 (issue 14, part 3), everything into OUTDIR:
#   the GPU tests tagged [hdim256] (the d = 256 backward beside naive, and the forwards), `flashbench verify`
#   of the backward at d = 256 on a few shapes (odd lengths, GQA, seq_q != seq_k, both masks), then
#   configs/hdim256-bwd.json through flashbench and through PyTorch's SDPA (torch-flash, torch-cudnn:
#   scripts/peers.py) on the same cases, and a TFLOP/s table with flash-sm90's ratio to torch-cudnn.
#     scripts/bwd256_h200.sh OUTDIR
# BUILD (default build-h200) is configured for sm_90a and built when it has no flashbench yet (minutes).
# Each step is limited to STEP_TIMEOUT seconds (default 240).
# Exit status: 0 when every step passed, else 1 (the log of each step is OUTDIR/<step>.log).
set -uo pipefail
out=${1:?usage: scripts/bwd256_h200.sh OUTDIR}
build=${BUILD:-build-h200}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."

if [ ! -x "$build/flashbench" ] || [ ! -x "$build/tests/flashbench_gpu_tests" ]; then
  cmake -S . -B "$build" -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 &&
    cmake --build "$build" -j"$(nproc)" --target flashbench flashbench_gpu_tests >>"$out/build.log" 2>&1 ||
    { tail -n 30 "$out/build.log" >&2; echo "bwd256_h200.sh: the build failed ($out/build.log)" >&2; exit 1; }
fi
fb="$build/flashbench"

failed=0
summary=()
step() {  # name, command...
  local name=$1
  shift
  local t0=$SECONDS
  echo "=== $name: $*" >&2
  timeout "${STEP_TIMEOUT:-240}" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  [ "$rc" -eq 0 ] || failed=1
  summary+=("$(printf '%-8s rc=%-3s %4ss' "$name" "$rc" "$((SECONDS - t0))")")
  tail -n 8 "$out/$name.log" >&2
}

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
step tests "$build/tests/flashbench_gpu_tests" "[hdim256]"
# The backward at d = 256: odd lengths, GQA and MQA, both masks, both 16-bit types, seq_q != seq_k both ways.
step verify sh -c "'$fb' verify --seq 4099 --dim 256 --heads 8 --kv-heads 2 --dtype bf16 --causal both --pass bwd -o '$out/verify-4099-d256.json' &&
                   '$fb' verify --seq 1000 --batch 2 --dim 256 --heads 4 --kv-heads 1 --dtype fp16 --causal both --pass all -o '$out/verify-1000-d256.json' &&
                   '$fb' verify --seq-q 17 --seq-k 1000 --dim 256 --heads 8 --kv-heads 2 --dtype bf16 --causal both --pass bwd -o '$out/verify-q17-k1000-d256.json' &&
                   '$fb' verify --seq-q 1000 --seq-k 130 --dim 256 --heads 8 --kv-heads 8 --dtype fp16 --causal both --pass bwd -o '$out/verify-q1000-k130-d256.json'"
step run "$fb" run configs/hdim256-bwd.json -o "$out/hdim256-bwd.json" --csv "$out/hdim256-bwd.csv"
step peers python3 scripts/peers.py configs/hdim256-bwd.json --backends flash,cudnn -o "$out/peers-hdim256-bwd.json"
step merge "$fb" merge "$out/hdim256-bwd.json" "$out/peers-hdim256-bwd.json" -o "$out/hdim256-bwd-all.json"

# TFLOP/s per case (median time), flash-sm90 / torch-cudnn in the last column.
python3 - "$out/hdim256-bwd.json" "$out/peers-hdim256-bwd.json" <<'EOF' | tee "$out/table.txt"
import json, sys
rows, kernels = {}, ["naive", "flash", "flash-sm90", "torch-flash", "torch-cudnn"]
for path in sys.argv[1:]:
    try:
        results = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"({path}: {e})")
        continue
    for r in results:
        c = r["case"]
        key = (c["dtype"], "causal" if c["causal"] else "full", c["pass"], c.get("seq_q", c.get("seq")), c["head_dim"])
        rows.setdefault(key, {})[r["kernel"]] = f'{r["tflops"]:.0f}' if r["status"] == "ok" else r["status"]
print(f'{"dtype":5} {"mask":6} {"pass":4} {"N":>6} {"d":>4} ' + " ".join(f"{k:>11}" for k in kernels) + "  sm90/cudnn")
for key in sorted(rows):
    v = rows[key]
    try:
        ratio = f'{float(v["flash-sm90"]) / float(v["torch-cudnn"]):.2f}x'
    except (KeyError, ValueError, ZeroDivisionError):
        ratio = "-"
    print(f"{key[0]:5} {key[1]:6} {key[2]:4} {key[3]:>6} {key[4]:>4} " + " ".join(f'{v.get(k, ""):>11}' for k in kernels) + f"  {ratio:>10}")
EOF
printf '%s\n' "${summary[@]}"
exit "$failed"
