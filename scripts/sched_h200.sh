#!/usr/bin/env bash
# flash-sm90's 16-bit forward with the tile counter (dynamic schedule, issue 13) on an H100/H200,
# everything into OUTDIR:
#   the GPU tests of flash-sm90 ([sched]: many tiles per block, repeated launches; the sm90 accuracy and
#   seq_q != seq_k tests), `flashbench verify` on odd causal shapes (seq_q != seq_k, GQA), then
#   configs/fwd-bf16-h200.json (24 cases: d 64/128, N 512-16k, causal or not) with flash-sm90 beside the
#   in-binary cudnn peer, and flash-sm90 again with timing probes (FB_SM90_FWD_PROBE, flash_sm90_launch.cuh):
#   noskip (no skip of unseen K/V tiles) and oneq (one Q tile) on N <= 2048, old (the schedule before session
#   6: static round-robin, one block per tile for long causal passes, no skip, O's store waited for at once,
#   one Q tile) on every case. Last, a table of TFLOP/s with flash-sm90 / cudnn, shipped / old (all of
#   session 6), shipped / noskip and shipped / oneq (one step each); before it, the same for the forward
#   cases of configs/gqa-h200.json (32 or 8 query heads on 8 or 1 K/V heads, d = 128, N 1k/4k/16k).
#     BUILD=build-h200 scripts/sched_h200.sh OUTDIR
# BUILD (default build-h200) must hold flashbench and tests/flashbench_gpu_tests built for sm_90a. Each
# step is limited to STEP_TIMEOUT seconds (default 60).
set -uo pipefail
. "$(dirname "$0")/h200_step.sh"
h200_dirs "${1:?usage: scripts/sched_h200.sh OUTDIR}"
step_timeout=60 step_tail=4
require_build sched_h200.sh

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
step tests "$build/tests/flashbench_gpu_tests" "[sched],flash-sm90*,*seq_q*"
# Odd causal shapes: seq_q < seq_k and seq_q > seq_k (rows with no key), GQA, both 16-bit types, d 64/128.
step verify sh -c "'$fb' verify --seq-q 1000 --seq-k 3000 --batch 2 --heads 32 --kv-heads 8 --dim 128 --dtype bf16 --causal both -q -o '$out/verify-q1000-k3000-d128.json' &&
                   '$fb' verify --seq-q 3000 --seq-k 1100 --batch 2 --heads 16 --kv-heads 2 --dim 64 --dtype fp16 --causal both -q -o '$out/verify-q3000-k1100-d64.json' &&
                   '$fb' verify --seq 4099 --heads 16 --kv-heads 4 --dim 64 --dtype bf16 --causal yes -q -o '$out/verify-4099-d64.json'"
step ship "$fb" run configs/fwd-bf16-h200.json --kernels flash-sm90,cudnn --no-ceilings -q -o "$out/fwd-bf16.json"
# The probes that take one step off at a time, on the short sequences (where each step is predicted to
# matter); then the forward as before session 6 on every case.
short='n(512|1024|2048)-d'
FB_SM90_FWD_PROBE=noskip step noskip "$fb" run configs/fwd-bf16-h200.json --kernels flash-sm90 --no-ceilings -q \
  --filter "$short" -o "$out/fwd-bf16-noskip.json"
FB_SM90_FWD_PROBE=oneq step oneq "$fb" run configs/fwd-bf16-h200.json --kernels flash-sm90 --no-ceilings -q \
  --filter "$short" -o "$out/fwd-bf16-oneq.json"
FB_SM90_FWD_PROBE=old step old "$fb" run configs/fwd-bf16-h200.json --kernels flash-sm90 --no-ceilings -q \
  -o "$out/fwd-bf16-old.json"
# GQA/MQA shapes of real models (configs/gqa-h200.json's forward cases): shipped with cudnn, and old.
step gqa "$fb" run configs/gqa-h200.json --kernels flash-sm90,cudnn --filter 'fwd$' --no-ceilings -q \
  -o "$out/gqa-fwd.json"
FB_SM90_FWD_PROBE=old step gqa-old "$fb" run configs/gqa-h200.json --kernels flash-sm90 --filter 'fwd$' --no-ceilings -q \
  -o "$out/gqa-fwd-old.json"

python3 - "$out/gqa-fwd.json" "$out/gqa-fwd-old.json" <<'PY' | tee "$out/table-gqa.txt"
import json, math, sys
rows = {}
for path, tag in zip(sys.argv[1:], ["", " old"]):
    try:
        results = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"({path}: {e})")
        continue
    for r in results:
        c = r["case"]
        key = (c["heads"], c["kv_heads"], "causal" if c["causal"] else "full", c["seq_q"])
        ok = r["status"] == "ok" and r.get("verified", True) is not False
        rows.setdefault(key, {})[r["kernel"] + tag] = r["tflops"] if ok else float("nan")
nan = float("nan")
print(f'{"h":>3} {"kv":>3} {"mask":6} {"N":>6} {"ship":>6} {"old":>6} {"cudnn":>6}  ship/cudnn ship/old')
for key in sorted(rows):
    v = rows[key]
    a, o, c = (v.get(k, nan) for k in ["flash-sm90", "flash-sm90 old", "cudnn"])
    div = lambda x, y: x / y if y else nan
    print(f"{key[0]:>3} {key[1]:>3} {key[2]:6} {key[3]:>6} {a:>6.0f} {o:>6.0f} {c:>6.0f}  {div(a, c):>9.3f}x {div(a, o):>7.3f}x")
PY

# TFLOP/s per case (median time): flash-sm90 as shipped, without the skip, as before session 6, cudnn;
# ratios last.
python3 - "$out/fwd-bf16.json" "$out/fwd-bf16-noskip.json" "$out/fwd-bf16-oneq.json" "$out/fwd-bf16-old.json" <<'PY' | tee "$out/table.txt"
import json, math, sys
rows = {}
for path, tag in zip(sys.argv[1:], ["", " noskip", " oneq", " old"]):
    try:
        results = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"({path}: {e})")
        continue
    for r in results:
        c = r["case"]
        key = (c["head_dim"], "causal" if c["causal"] else "full", c.get("seq_q", c.get("seq")))
        ok = r["status"] == "ok" and r.get("verified", True) is not False
        rows.setdefault(key, {})[r["kernel"] + tag] = r["tflops"] if ok else float("nan")
cols = ["flash-sm90", "flash-sm90 noskip", "flash-sm90 oneq", "flash-sm90 old", "cudnn"]
names = ["ship", "noskip", "oneq", "old", "cudnn"]
print(f'{"d":>4} {"mask":6} {"N":>6} ' + " ".join(f"{k:>6}" for k in names) +
      "  ship/cudnn ship/old ship/noskip ship/oneq")
logs = []
nan = float("nan")
for key in sorted(rows):
    v = rows[key]
    a, n, q, o, c = (v.get(k, nan) for k in cols)
    if a > 0 and c > 0:
        logs.append(math.log(a / c))
    div = lambda x, y: x / y if y else nan
    print(f"{key[0]:>4} {key[1]:6} {key[2]:>6} " + " ".join(f"{x:>6.0f}" for x in (a, n, q, o, c)) +
          f"  {div(a, c):>9.3f}x {div(a, o):>7.3f}x {div(a, n):>10.3f}x {div(a, q):>8.3f}x")
if logs:
    r = [math.exp(x) for x in logs]
    print(f"flash-sm90 / cudnn over {len(r)} rows: {min(r):.2f}-{max(r):.2f}x, geomean {math.exp(sum(logs) / len(logs)):.3f}")
PY
printf '%s\n' "${summary[@]}"
exit "$failed"
