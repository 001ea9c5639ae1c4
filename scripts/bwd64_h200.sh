#!/usr/bin/env bash
# The flash-sm90 backward at head dim 64 on an H100/H200 (issue 13), everything into OUTDIR, ~1 minute:
#   the GPU tests tagged [bwd64], `flashbench verify --pass bwd` on odd d = 64 shapes (GQA/MQA, both
#   masks, both 16-bit types, seq_q != seq_k both ways), then configs/bwd64-h200.json (bf16, N 1k/4k/8k,
#   causal and not: flash-sm90 beside the in-binary cudnn), then flash-sm90 alone with the previous d = 64
#   kernel (FB_SM90_BWD64=per-consumer-dq, column old), one block per tile (FB_SM90_BWD_PERSIST=off),
#   persistent on every causal pass (=on), the portable pre-pass (FB_SM90_BWD_PREPASS=portable); at
#   d = 128 (configs/bwd128-h200.json) the default and cudnn, and flash-sm90 persistent
#   (FB_SM90_BWD128=persistent), with this file's pre-pass (FB_SM90_BWD_PREPASS=own), and both; each
#   variant verified on one shape first; under ncu (if on PATH) each backward kernel at N = 1024 and
#   8192; and last a TFLOP/s table per head dim with the ratios flash-sm90 / cudnn, flash-sm90 / old
#   and best column / cudnn.
#     BUILD=build-h200 scripts/bwd64_h200.sh OUTDIR
# BUILD (default build-h200) is configured for sm_90a and built when it has no flashbench yet (minutes;
# not part of the minute). Each step is limited to STEP_TIMEOUT seconds (default 120).
set -uo pipefail
. "$(dirname "$0")/h200_step.sh"
h200_dirs "${1:?usage: scripts/bwd64_h200.sh OUTDIR}"
step_timeout=120 step_tail=6
ensure_build bwd64_h200.sh

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
step tests "$build/tests/flashbench_gpu_tests" "[bwd64]"
step verify sh -c "'$fb' verify --seq 4099 --dim 64 --heads 8 --kv-heads 2 --dtype bf16 --causal both --pass bwd -o '$out/verify-4099-d64.json' &&
                   '$fb' verify --seq-q 17 --seq-k 1000 --dim 64 --heads 8 --kv-heads 2 --dtype fp16 --causal both --pass bwd -o '$out/verify-q17-k1000-d64.json' &&
                   '$fb' verify --seq-q 1000 --seq-k 130 --batch 2 --dim 64 --heads 4 --kv-heads 1 --dtype bf16 --causal both --pass all -o '$out/verify-q1000-k130-d64.json'"
step run "$fb" run configs/bwd64-h200.json --no-ceilings -o "$out/bwd64-h200.json" --csv "$out/bwd64-h200.csv"
step verify-old env FB_SM90_BWD64=per-consumer-dq "$fb" verify --seq 1025 --dim 64 --heads 8 --kv-heads 2 --dtype fp16 --causal both --pass bwd -o "$out/verify-old-1025-d64.json"
step run-old env FB_SM90_BWD64=per-consumer-dq "$fb" run configs/bwd64-h200.json --no-ceilings --kernels flash-sm90 -o "$out/bwd64-h200-per-consumer-dq.json"
# The default with one block per tile (not persistent), and persistent forced on every causal pass
# (verified where blocks loop over several tiles: 33 key tiles x 16 K/V planes, GQA 2:1).
step verify-persist-on env FB_SM90_BWD_PERSIST=on "$fb" verify --seq 4099 --batch 2 --dim 64 --heads 16 --kv-heads 8 --dtype bf16 --causal both --pass bwd -o "$out/verify-persist-on-4099-d64.json"
step run-persist-off env FB_SM90_BWD_PERSIST=off "$fb" run configs/bwd64-h200.json --no-ceilings --kernels flash-sm90 -o "$out/bwd64-h200-persist-off.json"
step run-persist-on env FB_SM90_BWD_PERSIST=on "$fb" run configs/bwd64-h200.json --no-ceilings --kernels flash-sm90 --filter causal -o "$out/bwd64-h200-persist-on.json"
# The portable pre-pass at d = 64 (timed), and this file's pre-pass forced at d = 128 and 256 (verified only).
step run-prepass-portable env FB_SM90_BWD_PREPASS=portable "$fb" run configs/bwd64-h200.json --no-ceilings --kernels flash-sm90 -o "$out/bwd64-h200-prepass-portable.json"
step verify-prepass-own env FB_SM90_BWD_PREPASS=own sh -c "'$fb' verify --seq 1025 --dim 128 --heads 8 --kv-heads 2 --dtype bf16 --causal both --pass bwd -o '$out/verify-prepass-own-d128.json' &&
                   '$fb' verify --seq-q 130 --seq-k 1000 --dim 256 --heads 4 --kv-heads 1 --dtype fp16 --causal both --pass bwd -o '$out/verify-prepass-own-d256.json'"

# (Session 8 removed the persistent d = 128 kernel: FB_SM90_BWD128=persistent now runs the default, so the
# p128 columns below time the default; docs/perf-notes.md has what they measured before.)
# d = 128: FB_SM90_BWD128=persistent and this file's pre-pass, alone and together, beside the default and
# cudnn (verified first where persistent blocks loop over several tiles: 33 key tiles x 16 K/V planes).
step verify-128-persistent env FB_SM90_BWD128=persistent FB_SM90_BWD_PERSIST=on FB_SM90_BWD_PREPASS=own "$fb" verify --seq 4099 --batch 2 --dim 128 --heads 16 --kv-heads 8 --dtype bf16 --causal both --pass bwd -o "$out/verify-128-persistent-4099.json"
step run-128 "$fb" run configs/bwd128-h200.json --no-ceilings -o "$out/bwd128-h200.json"
step run-128-persistent env FB_SM90_BWD128=persistent "$fb" run configs/bwd128-h200.json --no-ceilings --kernels flash-sm90 -o "$out/bwd128-h200-persistent.json"
step run-128-pp-own env FB_SM90_BWD_PREPASS=own "$fb" run configs/bwd128-h200.json --no-ceilings --kernels flash-sm90 -o "$out/bwd128-h200-pp-own.json"
step run-128-both env FB_SM90_BWD128=persistent FB_SM90_BWD_PREPASS=own "$fb" run configs/bwd128-h200.json --no-ceilings --kernels flash-sm90 -o "$out/bwd128-h200-both.json"

# Where the N-independent time goes: each backward kernel (pre-pass, main, dQ convert) of one launch at
# N = 1024 and 8192 under Nsight Compute (clocks locked by ncu: compare within, not with the table).
if command -v ncu >/dev/null 2>&1; then
  step ncu ncu --csv --metrics gpu__time_duration.sum -k regex:bwd "$fb" run configs/bwd64-h200.json --no-ceilings \
    --kernels flash-sm90 --filter 'n(1024|8192)-d64-bf16-full' --warmup 0 --reps 1 --warmup-time 0 -q
  python3 - "$out/ncu.log" <<'PY'
import csv, re, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')) if len(r) > 14]
for r in rows:
    if r[0] == "ID":
        continue
    m = re.search(r"(\w+)[<(]", r[4])
    name = (m.group(1) if m else r[4])[:40]
    print(f"ncu {name:40} grid {r[8]:>16}  {r[14]:>10} {r[13]}")
PY
fi

# TFLOP/s per case (median time); flash-sm90 / cudnn, flash-sm90 / old (the previous d = 64 kernel) and
# the best new column / cudnn last.
python3 - "$out" <<'PY' | tee "$out/table.txt"
import json, os, sys
out = sys.argv[1]
files = (("bwd64-h200.json", None), ("bwd64-h200-per-consumer-dq.json", "old"),
         ("bwd64-h200-persist-off.json", "persist-off"), ("bwd64-h200-persist-on.json", "persist-on"),
         ("bwd64-h200-prepass-portable.json", "pp-portable"), ("bwd128-h200.json", None),
         ("bwd128-h200-persistent.json", "p128"), ("bwd128-h200-pp-own.json", "pp-own"),
         ("bwd128-h200-both.json", "p128+pp"))
kernels = ["flash-sm90", "cudnn", "old", "persist-off", "persist-on", "pp-portable",
           "p128", "pp-own", "p128+pp"]
rows = {}
for name, rename in files:
    path = os.path.join(out, name)
    try:
        results = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"({path}: {e})")
        continue
    for r in results:
        c = r["case"]
        key = (c["dtype"], "causal" if c["causal"] else "full", c.get("seq_q", c.get("seq")), c["head_dim"])
        k = rename if rename and r["kernel"] == "flash-sm90" else r["kernel"]
        rows.setdefault(key, {})[k] = f'{r["tflops"]:.0f}' if r["status"] == "ok" else r["status"]
def num(v, k):
    try:
        return float(v[k])
    except (KeyError, ValueError):
        return None
def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "-"
for d in sorted({key[3] for key in rows}):
    keys = [key for key in sorted(rows) if key[3] == d]
    cols = [k for k in kernels if any(k in rows[key] for key in keys)]
    print(f'{"dtype":5} {"mask":6} {"N":>6} {"d":>4} ' + " ".join(f"{k:>11}" for k in cols) +
          "  sm90/cudnn  sm90/old  best/cudnn")
    for key in keys:
        v = rows[key]
        best = max((x for x in (num(v, k) for k in cols if k not in ("cudnn", "old")) if x), default=None)
        print(f"{key[0]:5} {key[1]:6} {key[2]:>6} {key[3]:>4} " + " ".join(f'{v.get(k, ""):>11}' for k in cols) +
              f"  {ratio(num(v, 'flash-sm90'), num(v, 'cudnn')):>10}  {ratio(num(v, 'flash-sm90'), num(v, 'old')):>8}"
              f"  {ratio(best, num(v, 'cudnn')):>10}")
PY
printf '%s\n' "${summary[@]}"
exit "$failed"
