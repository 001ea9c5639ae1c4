#!/usr/bin/env bash
# Head dim 256 on an H100/H200 (issue 14, part 3), everything into OUTDIR:
#   the GPU tests tagged [hdim256], `flashbench verify` at d = 256, a config through flashbench and
#   through PyTorch's SDPA (torch-flash, torch-cudnn: scripts/peers.py) on the same cases, merged, then a
#   TFLOP/s table with flash-sm90's ratio to torch-cudnn.
#     scripts/hdim256_h200.sh OUTDIR            configs/hdim256.json; verify every dtype, both passes
#     PASS=bwd scripts/hdim256_h200.sh OUTDIR   the backward alone: configs/hdim256-bwd.json; verify the
#                                               backward on odd lengths, GQA/MQA, both 16-bit types, seq_q !=
#                                               seq_k both ways
# BUILD (default build-h200) is configured for sm_90a and built when it has no flashbench yet (minutes;
# not part of the ~4 minutes the steps take). Each step is limited to STEP_TIMEOUT seconds (default 240).
set -uo pipefail
. "$(dirname "$0")/h200_step.sh"
h200_dirs "${1:?usage: scripts/hdim256_h200.sh OUTDIR}"
step_timeout=240 step_tail=8
ensure_build hdim256_h200.sh

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
step tests "$build/tests/flashbench_gpu_tests" "[hdim256]"
if [ "${PASS:-all}" = bwd ]; then
  spec=hdim256-bwd
  # The backward at d = 256: odd lengths, GQA and MQA, both masks, both 16-bit types, seq_q != seq_k both ways.
  step verify sh -c "'$fb' verify --seq 4099 --dim 256 --heads 8 --kv-heads 2 --dtype bf16 --causal both --pass bwd -o '$out/verify-4099-d256.json' &&
                     '$fb' verify --seq 1000 --batch 2 --dim 256 --heads 4 --kv-heads 1 --dtype fp16 --causal both --pass all -o '$out/verify-1000-d256.json' &&
                     '$fb' verify --seq-q 17 --seq-k 1000 --dim 256 --heads 8 --kv-heads 2 --dtype bf16 --causal both --pass bwd -o '$out/verify-q17-k1000-d256.json' &&
                     '$fb' verify --seq-q 1000 --seq-k 130 --dim 256 --heads 8 --kv-heads 8 --dtype fp16 --causal both --pass bwd -o '$out/verify-q1000-k130-d256.json'"
else
  spec=hdim256
  # Odd lengths, GQA, both masks, both passes, every dtype (flash at d = 256 is 16-bit only: its fp32/fp64
  # rows are skipped with the reason; flash's backward is skipped at d = 256), and seq_q != seq_k.
  step verify sh -c "'$fb' verify --seq 4099 --dim 256 --heads 8 --kv-heads 2 --dtype all --causal both --pass all -o '$out/verify-4099-d256.json' &&
                     '$fb' verify --seq-q 17 --seq-k 1000 --dim 256 --heads 8 --kv-heads 2 --dtype bf16 --causal both -o '$out/verify-q17-k1000-d256.json'"
fi
step run "$fb" run "configs/$spec.json" -o "$out/$spec.json" --csv "$out/$spec.csv"
step peers python3 scripts/peers.py "configs/$spec.json" --backends flash,cudnn -o "$out/peers-$spec.json"
step merge "$fb" merge "$out/$spec.json" "$out/peers-$spec.json" -o "$out/$spec-all.json"

# TFLOP/s per case (median time), flash-sm90 / torch-cudnn in the last column.
python3 - "$out/$spec.json" "$out/peers-$spec.json" <<'EOF' | tee "$out/table.txt"
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
