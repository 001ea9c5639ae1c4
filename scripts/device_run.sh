#!/usr/bin/env bash
# Runs on a GPU machine over a build made elsewhere: GPU tests, verify, the GPU sweeps, ceilings and
# peers, writing everything under WORK (default ./out); when OUT is set (the device tool), one
# bundle.tgz of it lands there (the tool brings back few files). Prints a short summary last.
#   scripts/device_run.sh BUILD_DIR [step ...]
#   steps: tests ceilings verify verifybwd quick fwd fwd32 tests32 fp32tc fp32tcspeed seed bwd peers
#          peersbwd ncu sanitize sm90 peerssm90 bwdsm90 peersbwdsm90 extreme dump devices archs gpuquick
#          adaptive verifyall decode gatestudy plugin triton
set -uo pipefail
build=${1:?usage: scripts/device_run.sh BUILD_DIR [steps]}
shift
steps=${*:-tests ceilings verify fwd seed}
out=${WORK:-out}
mkdir -p "$out"
fb="$build/flashbench"
summary=()
step() {  # name, command... (each step limited to STEP_TIMEOUT seconds, default 300)
  local name=$1
  shift
  local t0=$SECONDS
  echo "=== $name: $*" >&2
  timeout "${STEP_TIMEOUT:-300}" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  summary+=("$(printf '%-10s rc=%-3s %4ss' "$name" "$rc" "$((SECONDS - t0))")")
  tail -n 25 "$out/$name.log" >&2
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
for s in $steps; do
  case $s in
    tests) step tests "$build/tests/flashbench_gpu_tests" ;;
    ceilings) step ceilings "$fb" info --ceilings --json ;;  # the log is the JSON
    verify) step verify "$fb" verify --seq 4096 -o "$out/verify-4096.json" ;;
    verifybwd) step verifybwd "$fb" verify --seq 4096 --pass bwd -o "$out/verify-4096-bwd.json" ;;
    quick) step quick "$fb" run configs/quick.json -o "$out/quick.json" ;;
    tests32) step tests32 "$build/tests/flashbench_gpu_tests" "[fp32tc]" ;;
    fp32tc) step fp32tc "$fb" run configs/h200-fp32-tc.json -o "$out/h200-fp32-tc.json" --csv "$out/h200-fp32-tc.csv" ;;
    fp32tcspeed) step fp32tcspeed "$build/tests/flashbench_gpu_tests" "[fp32tc-speed]" ;;
    fwd32) step fwd32 "$fb" run configs/h200-fwd-fp32.json -o "$out/h200-fwd-fp32.json" --csv "$out/h200-fwd-fp32.csv" ;;
    ncu) step ncu python3 scripts/ncu_bytes.py configs/ncu-bytes.json -o "$out/ncu-bytes.json" --flashbench "$fb" ;;
    sanitize) step sanitize bash scripts/sanitize.sh -e "$fb" -s "${SANITIZE_SPEC:-configs/sanitize.json}" -t "${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}" "$out/sanitize.json" ;;
    sm90) step sm90 "$fb" run configs/h200-fwd-sm90.json -o "$out/h200-fwd-sm90.json" --csv "$out/h200-fwd-sm90.csv" ;;
    peerssm90) step peerssm90 python3 scripts/peers.py configs/h200-fwd-sm90.json --backends flash,cudnn -o "$out/peers-fwd-sm90.json" ;;
    bwdsm90) step bwdsm90 "$fb" run configs/h200-bwd-sm90.json -o "$out/h200-bwd-sm90.json" --csv "$out/h200-bwd-sm90.csv" ;;
    peersbwdsm90) step peersbwdsm90 python3 scripts/peers.py configs/h200-bwd-sm90.json --backends flash,cudnn -o "$out/peers-bwd-sm90.json" ;;
    extreme) step extreme sh -c "'$fb' verify --seq 4096 --dtype fp32 --input-scale 10 -o '$out/verify-4096-scale10-fp32.json';
                                 '$fb' verify --seq 4096 --dtype fp64 --input-scale 100 -o '$out/verify-4096-scale100-fp64.json';
                                 '$fb' verify --seq 4096 --dtype fp16 --input-scale 10 -o '$out/verify-4096-scale10-fp16.json';
                                 '$fb' verify --seq 4096 --dtype bf16 --input-scale 10 -o '$out/verify-4096-scale10-bf16.json'" ;;
    dump) step dump sh -c "'$fb' run configs/quick.json --dump '$out/dump' -q -o '$out/dump-quick.json' &&
                           python3 -c 'import numpy as np, glob; fs = sorted(glob.glob(\"$out/dump/*/*.npy\")); print(len(fs), \"npy files\"); a = np.load([f for f in fs if f.endswith(\"bf16-causal-fwd/flash.O.npy\")][0]); b = np.load([f for f in fs if f.endswith(\"bf16-causal-fwd/reference.O.npy\")][0]); print(a.shape, \"max |flash - ref|\", abs(a - b).max())' && rm -rf '$out/dump'" ;;
    devices) step devices sh -c "'$fb' run configs/quick.json -q -o '$out/quick-single.json' && '$fb' run configs/quick.json -q --devices 0 -o '$out/quick-devices.json' && python3 -c 'import json; k = lambda f: sorted((r[\"key\"], r[\"kernel\"]) for r in json.load(open(f))[\"results\"]); a, b = k(\"$out/quick-single.json\"), k(\"$out/quick-devices.json\"); print(\"same cases:\", a == b, len(a))'" ;;
    archs) step archs sh -c "cmake -S . -B '$out/cfg-check' -DFLASHBENCH_TESTS=OFF | grep -i 'architectures'; rm -rf '$out/cfg-check'" ;;
    gpuquick) step gpuquick "$fb" run configs/gpu-quick.json -o "$out/gpu-quick.json" --csv "$out/gpu-quick.csv" ;;
    adaptive) step adaptive "$fb" run configs/gpu-quick.json --min-time 0.5 --max-noise 1 --max-time 5 -o "$out/gpu-quick-adaptive.json" ;;
    verifyall) step verifyall sh -c "'$fb' verify --seq 4096 --dtype all --pass fwd -o '$out/verify-4096.json';
                                     '$fb' verify --seq 4096 --dtype all --pass bwd -o '$out/verify-4096-bwd.json'" ;;
    decode) step decode sh -c "'$fb' verify --seq-q 1 --seq-k 4097 --kv-heads 8 --dtype all --causal both --pass all -o '$out/verify-decode.json';
                               '$fb' verify --seq-q 1000 --seq-k 257 --kv-heads 8 --dtype bf16 --causal yes --pass all -o '$out/verify-q1000-k257.json';
                               '$fb' verify --seq-q 257 --seq-k 3001 --kv-heads 4 --dtype all --causal both --pass all -o '$out/verify-q257-k3001.json';
                               '$fb' run configs/decode.json -q -o '$out/decode.json'" ;;
    # The gate's false-alarm and detection rates (results/h200/gate-study.json): GATE_RUNS runs of this
    # binary, then GATE_SLOW runs of a build with tests/data/gate-slowdown.patch applied (reverted after).
    gatestudy) step gatestudy sh -c "set -e; mkdir -p '$out/gate';
        for i in \$(seq 1 ${GATE_RUNS:-6}); do '$fb' run configs/gate-study.json -q -o '$out/gate/base-'\$i.json; done;
        git apply tests/data/gate-slowdown.patch; cmake --build '$build' -j\$(nproc) --target flashbench >/dev/null;
        for i in \$(seq 1 ${GATE_SLOW:-3}); do '$fb' run configs/gate-study.json -q -o '$out/gate/slow-'\$i.json; done;
        git apply -R tests/data/gate-slowdown.patch; cmake --build '$build' -j\$(nproc) --target flashbench >/dev/null;
        python3 scripts/gate_study.py --exe '$fb' --base '$out'/gate/base-*.json --slow '$out'/gate/slow-*.json -o '$out/gate-study.json'" ;;
    # The example plug-ins (examples/plugin, --kernel-lib): the CUDA one's GPU test, then both through the CLI
    # (the CPU one on the CPU backend), square and decode shapes, verified beside the built-ins.
    plugin) step plugin sh -c "set -e; cuda_lib='$build/examples/plugin/libfb_example_cuda.so';
        '$build/tests/flashbench_gpu_tests' 'the example CUDA plug-in*';
        '$fb' run configs/gpu-quick.json --kernel-lib \$cuda_lib --kernels naive,flash,flash-sm90,example-cuda -o '$out/plugin-gpu-quick.json';
        '$fb' run configs/decode.json --kernel-lib \$cuda_lib --kernels naive,flash,flash-sm90,example-cuda --filter '^b1-' -q -o '$out/plugin-decode.json';
        '$fb' verify --seq-q 130 --seq-k 70 --kv-heads 8 --dtype all --causal both --kernel-lib \$cuda_lib -o '$out/plugin-verify-q130-k70.json';
        '$fb' run examples/plugin/spec.json --backend cpu --kernel-lib '$build/examples/plugin/libfb_example_cpu.so' -o '$out/plugin-cpu.json'" ;;
    # peers.py --callable: the Triton example (examples/python) beside flashbench's rows, merged and plotted.
    triton) step triton sh -c "set -e; f=examples/python/triton_attention.py:attention;
        python3 scripts/peers.py configs/gpu-quick.json --callable \$f --name triton-example -o '$out/triton-gpu-quick.json';
        python3 scripts/peers.py configs/decode.json --callable \$f --name triton-example -o '$out/triton-decode.json';
        '$fb' run configs/gpu-quick.json -q -o '$out/gpu-quick-for-triton.json';
        '$fb' merge '$out/gpu-quick-for-triton.json' '$out/triton-gpu-quick.json' --force -o '$out/triton-merged.json';
        python3 scripts/plot.py '$out/triton-merged.json' -o '$out/triton-plots'" ;;
    fwd) step fwd "$fb" run configs/h200-fwd.json -o "$out/h200-fwd.json" --csv "$out/h200-fwd.csv" ;;
    seed) step seed "$fb" run configs/seed-claims.json -o "$out/seed-claims.json" --csv "$out/seed-claims.csv" ;;
    bwd) step bwd "$fb" run configs/h200-bwd.json -o "$out/h200-bwd.json" --csv "$out/h200-bwd.csv" ;;
    peers) step peers python3 scripts/peers.py configs/h200-fwd.json -o "$out/peers-fwd.json" ;;
    peersbwd) step peersbwd python3 scripts/peers.py configs/h200-bwd.json -o "$out/peers-bwd.json" ;;
    *) echo "unknown step $s" >&2 ;;
  esac
done
[ -n "${OUT:-}" ] && tar czf "$OUT/bundle.tgz" -C "$out" .
printf '%s\n' "${summary[@]}"
