#!/usr/bin/env bash
# The flash-sm90 backward on GQA/MQA shapes on an H100/H200 (issue 13), everything into OUTDIR, ~1 minute:
#   the GPU tests tagged [bwd_gqa], `flashbench verify --pass bwd` with the query-head split forced to
#   4 (FB_SM90_BWD_SPLIT, d 64 and 128, MQA and GQA, both masks), then configs/mqabwd-h200.json (bf16,
#   8/32 q heads over 1/8 K/V heads, N 1k/4k/16k, d 64/128, causal and not: flash-sm90 beside the
#   in-binary cudnn), then flash-sm90 alone on the causal 1-K/V-head cases with the split forced to 1 (off:
#   the previous kernel), 2, 4, 8 and (32 heads) 16; under ncu (if on PATH) the main kernel at 32 q heads
#   over 1 and over 8 K/V heads, causal N = 16k; last a TFLOP/s table with the ratios flash-sm90 / cudnn.
#     BUILD=build-h200 scripts/mqabwd_h200.sh OUTDIR
# BUILD (default build-h200) is configured for sm_90a and built when it has no flashbench yet (minutes;
# not part of the minute). Each step is limited to STEP_TIMEOUT seconds (default 60).
set -uo pipefail
out=${1:?usage: scripts/mqabwd_h200.sh OUTDIR}
build=${BUILD:-build-h200}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."

fb="$build/flashbench"

step_timeout=60 step_tail=4 step_name_width=10
. scripts/h200_step.sh
ensure_build mqabwd_h200.sh

step tests "$build/tests/flashbench_gpu_tests" "[bwd_gqa]"
step verify-s4 env FB_SM90_BWD_SPLIT=4 sh -c "
  '$fb' verify --seq 1025 --dim 128 --heads 8 --kv-heads 1 --dtype bf16 --causal both --pass bwd -o '$out/verify-s4-d128.json' &&
  '$fb' verify --seq-q 700 --seq-k 1300 --batch 2 --dim 64 --heads 16 --kv-heads 2 --dtype fp16 --causal both --pass bwd -o '$out/verify-s4-d64.json'"
step run "$fb" run configs/mqabwd-h200.json --no-ceilings -q -o "$out/mqabwd-h200.json"
for s in 1 2 4 8 16; do
  filter='kv1-.*causal'
  [ "$s" = 16 ] && filter='h32-kv1-.*causal'  # 16 divides only the 32-head group
  step "run-s$s" env FB_SM90_BWD_SPLIT=$s "$fb" run configs/mqabwd-h200.json --no-ceilings -q --kernels flash-sm90 \
    --filter "$filter" --warmup 2 --reps 5 -o "$out/mqabwd-h200-s$s.json"
done
# Where MQA causal at N = 16k loses to the 8-K/V-head case: the main kernel of one launch each (the split
# one at 32 q / 1 kv, the unsplit one at 32 / 8) under Nsight Compute, if on PATH.
if command -v ncu >/dev/null 2>&1; then
  step ncu ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats \
    -k regex:flash_sm90_bwd_kernel "$fb" run configs/mqabwd-h200.json --no-ceilings --kernels flash-sm90 \
    --filter 'b1-h32-kv(1|8)-n16384-d128-bf16-causal' --warmup 0 --reps 1 --warmup-time 0 -q
  grep -E "flash_sm90_bwd_kernel|Duration|Compute \(SM\) Throughput|DRAM Throughput|L2 Hit Rate|Grid Size" \
    "$out/ncu.log" | sed 's/(flash_sm90::BwdParams).*//' >&2
fi

# TFLOP/s per case (median); auto = the default (the launcher's split), s1..s16 forced splits.
python3 - "$out" <<'PY' | tee "$out/table.txt"
import json, os, sys
out = sys.argv[1]
cols = {}
def load(name, col):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return
    for r in json.load(open(path)).get("results", []):
        if r.get("tflops") is not None:
            cols.setdefault(r["key"], {})[col if r["kernel"] == "flash-sm90" else r["kernel"]] = r["tflops"]
load("mqabwd-h200.json", "auto")
for s in (1, 2, 4, 8, 16):
    load(f"mqabwd-h200-s{s}.json", f"s{s}")
names = ["auto", "cudnn", "s1", "s2", "s4", "s8", "s16"]
print(f"{'case (TFLOP/s)':40}" + "".join(f"{n:>7}" for n in names) + "  auto/cudnn  auto/s1")
ratios = []
for key in cols:
    c = cols[key]
    cells = "".join(f"{c[n]:7.0f}" if n in c else f"{'-':>7}" for n in names)
    rc = c["auto"] / c["cudnn"] if "auto" in c and "cudnn" in c else None
    r1 = c["auto"] / c["s1"] if "auto" in c and "s1" in c else None
    if rc:
        ratios.append(rc)
    print(f"{key:40}{cells}  {rc or 0:10.2f}  {r1 or 0:7.2f}")
if ratios:
    import math
    print(f"flash-sm90/cudnn: min {min(ratios):.2f} max {max(ratios):.2f} geomean "
          f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f} over {len(ratios)} cases")
PY
printf '%s\n' "${summary[@]}"
exit $failed
