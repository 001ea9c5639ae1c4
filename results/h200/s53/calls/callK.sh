#!/usr/bin/env bash
# Session 53, call K (one Hopper GPU; issue 13; no rule: a lead). Call Z's ncu put flash-sm90's long GQA backward
# ahead of torch-cudnn's in kernel time (32 q / 8 kv heads d = 128 bf16, N = 16384 non-causal: 17094 against 17989 us)
# where session 49's call M on an H100 read it 0.903x torch-cudnn. This call times those rows as the tables do, and
# watches the clocks: flashbench (flash-sm90 and the in-binary cuDNN, back-to-back reps) and scripts/peers.py
# torch-cudnn under the spin hold (the tables' setting) and with none, two interleaved rounds (order reversed in the
# second), on the GQA grid's 32 / 8 rows at N = 16384 (non-causal, causal) and N = 4096 non-causal, backward only,
# with nvidia-smi's SM clock and power every 100 ms and each step's start and end (steps.txt). table.txt: per row and
# side the time (ms, geomean of the rounds), and per side the median SM clock and power of the samples over 250 W.
set -uo pipefail
export DEADLINE=${DEADLINE:-200}
source scripts/call_step.sh
call_begin $OUT/K
mkdir -p $R/ab
python3 - $R/spec.json <<'PY'
import json, sys
s = json.load(open("configs/gqa-h200.json"))  # 16k tokens, d = 128, bf16
s.update({"name": "clk53k", "seq": [4096, 16384], "heads": [32], "kv_heads": [8], "pass": ["bwd"],
          "kernels": ["flash-sm90", "cudnn"], "warmup": 3, "reps": 10, "verify": False})
json.dump(s, open(sys.argv[1], "w"), indent=2)
PY
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv,noheader,nounits -lms 100 > $R/smi.csv 2>&1 &
smi=$!
timed() {  # SIDE ROUND COMMAND...: a step, its wall-clock window in steps.txt
  local side=$1 r=$2
  shift 2
  local a
  a=$(date "+%Y/%m/%d %H:%M:%S.%3N")  # nvidia-smi's format, local time as its samples
  step $side-$r 60 "$@"
  echo "$side|$r|$a|$(date "+%Y/%m/%d %H:%M:%S.%3N")" >> $R/steps.txt
}
for r in 1 2; do
  order=(fb spin none)
  ((r % 2 == 0)) && order=(none spin fb)
  for v in "${order[@]}"; do
    case $v in
      fb) timed fb $r $fb run $R/spec.json --no-ceilings -q -o $R/ab/fb-$r.json ;;
      spin) timed spin $r python3 scripts/peers.py $R/spec.json --backends cudnn -o $R/ab/spin-$r.json ;;
      none) timed none $r python3 scripts/peers.py $R/spec.json --backends cudnn --no-launch-hold \
              -o $R/ab/none-$r.json ;;
    esac
  done
done
kill $smi 2>/dev/null
python3 - $R <<'PY' | tee $R/table.txt
import datetime, json, math, os, statistics, sys
R = sys.argv[1]
gm = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")
t = {}
for f in sorted(os.listdir(os.path.join(R, "ab"))):
    side, rnd = f[:-5].split("-")
    try:
        doc = json.load(open(os.path.join(R, "ab", f)))
    except (OSError, ValueError):
        continue
    for rec in doc.get("results", []):
        if rec.get("status") == "ok" and rec.get("time_ms", {}).get("median"):
            t.setdefault((side, rec["kernel"], rec["key"]), []).append(float(rec["time_ms"]["median"]))
keys = sorted({k[2] for k in t})
cols = (("fb", "flash-sm90", "ours"), ("fb", "cudnn", "cud914"), ("spin", "torch-cudnn", "t-spin"),
        ("none", "torch-cudnn", "t-none"))
print(f"{'row':44s} " + " ".join(f"{c[2]:>8s}" for c in cols) + "  t-spin/ours t-none/ours  (ms, geomean of rounds)")
for k in keys:
    v = [gm(t.get((s, kern, k), [])) for s, kern, _ in cols]
    print(f"{k:44s} " + " ".join(f"{x:8.3f}" for x in v) + f"  {v[2] / v[0]:10.3f} {v[3] / v[0]:10.3f}")
samples = []
for line in open(os.path.join(R, "smi.csv")):
    f = [x.strip() for x in line.split(",")]
    try:
        ts = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
        samples.append((ts, float(f[1]), float(f[2])))
    except (IndexError, ValueError):
        continue
print(f"{'side':6s} {'round':>5s} {'samples>250W':>12s} {'SM MHz':>7s} {'W':>6s}")
for line in open(os.path.join(R, "steps.txt")):
    side, rnd, a, b = line.strip().split("|")
    a, b = (datetime.datetime.strptime(x, "%Y/%m/%d %H:%M:%S.%f").timestamp() for x in (a, b))
    busy = [s for s in samples if a <= s[0] <= b and s[2] > 250]
    if busy:
        print(f"{side:6s} {rnd:>5s} {len(busy):12d} {statistics.median(s[1] for s in busy):7.0f} "
              f"{statistics.median(s[2] for s in busy):6.0f}")
    else:
        print(f"{side:6s} {rnd:>5s} {0:12d}       -      -")
PY
call_end K
