#!/usr/bin/env bash
# The portable flash backward's GQA/MQA query-head split on an H100/H200 (issue 13, session 8), everything
# into OUTDIR, ~1.5 minutes:
#   the [flash_split] GPU test (splits forced to 1..32 on odd shapes, against the fp64 reference),
#   `flashbench verify --pass bwd` with FB_FLASH_BWD_SPLIT=3 (uneven subsets of 8 heads, both masks),
#   configs/flashmqa-h200.json (bf16 d = 128 causal, 8/32 q heads over 1/8 K/V heads, N 1k/4k/16k):
#   flash with the launcher's split (auto), then flash on the GQA/MQA cases with the split forced to 1
#   (off: the previous kernel), 2, 4, 8, then torch-flash (FlashAttention-2) through scripts/peers.py;
#   last a TFLOP/s table with the ratios to FA2.
#     BUILD=build-h200 scripts/flashmqa_h200.sh OUTDIR
# d = 64 (call B): CONFIG=configs/flashmqa64-h200.json FILTER=causal TESTS=0 (the test covers d = 64).
# BUILD (default build-h200) is configured for sm_90a and built when it has no flashbench yet (minutes;
# not part of the 1.5). Each step is limited to STEP_TIMEOUT seconds (default 60).
set -uo pipefail
out=${1:?usage: scripts/flashmqa_h200.sh OUTDIR}
build=${BUILD:-build-h200}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."

fb="$build/flashbench"
# CONFIG: the spec timed (default configs/flashmqa-h200.json); FILTER: the cases of the forced-split runs
# (default: the GQA/MQA ones of that spec); TESTS=0 skips the GPU test and verify.
cfg=${CONFIG:-configs/flashmqa-h200.json}
filter=${FILTER:-kv1-|h32-kv8-}

step_timeout=60 step_tail=3 step_name_width=10
. scripts/h200_step.sh
ensure_build flashmqa_h200.sh

if [ "${TESTS:-1}" != 0 ]; then
  step tests "$build/tests/flashbench_gpu_tests" "[flash_split]"
  step verify-s3 env FB_FLASH_BWD_SPLIT=3 "$fb" verify --seq 1025 --dim 128 --heads 8 --kv-heads 1 --dtype bf16 \
    --causal both --pass bwd -q -o "$out/verify-s3.json"
fi
step auto "$fb" run "$cfg" --no-ceilings -q -o "$out/flash-auto.json"
for s in 1 2 4 8; do
  step "s$s" env FB_FLASH_BWD_SPLIT=$s "$fb" run "$cfg" --no-ceilings -q --filter "$filter" \
    -o "$out/flash-s$s.json"
done
step peers python3 scripts/peers.py "$cfg" --backends flash -o "$out/peers.json"

# TFLOP/s per case (median): auto = the launcher's split, s1..s8 forced (s1: no split), FA2 = torch-flash.
python3 - "$out" <<'PY' | tee "$out/table.txt"
import json, math, os, sys
out = sys.argv[1]
cols = {}
def load(name, col):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return
    for r in json.load(open(path)).get("results", []):
        if r.get("tflops"):
            cols.setdefault(r["key"], {})[col if r["kernel"] == "flash" else "FA2"] = r["tflops"]
load("flash-auto.json", "auto")
for s in (1, 2, 4, 8):
    load(f"flash-s{s}.json", f"s{s}")
load("peers.json", "FA2")
names = ["auto", "s1", "s2", "s4", "s8", "FA2"]
print(f"{'case (TFLOP/s)':38}" + "".join(f"{n:>6}" for n in names) + "  auto/FA2 best/FA2 auto/s1")
ratios = []
for key in sorted(cols, key=lambda k: (("h8-" not in k), ("kv8" in k), int(k.split("-n")[1].split("-")[0]))):
    c = cols[key]
    cells = "".join(f"{c[n]:6.0f}" if n in c else f"{'-':>6}" for n in names)
    fa2 = c.get("FA2")
    ra = c["auto"] / fa2 if "auto" in c and fa2 else None
    best = max((c[n] for n in names[:-1] if n in c), default=None)
    rb = best / fa2 if best and fa2 else None
    r1 = c["auto"] / c["s1"] if "auto" in c and "s1" in c else None
    if ra:
        ratios.append(ra)
    f = lambda x: f"{x:8.2f}" if x else f"{'-':>8}"
    print(f"{key:38}{cells}  {f(ra)} {f(rb)} {f(r1)}")
if ratios:
    print(f"flash auto / FA2: min {min(ratios):.2f} max {max(ratios):.2f} geomean "
          f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f} over {len(ratios)} cases")
PY
printf '%s\n' "${summary[@]}"
exit $failed
