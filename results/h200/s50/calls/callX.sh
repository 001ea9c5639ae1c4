#!/usr/bin/env bash
# Session 50, call X (prepared for a later session; one Hopper GPU; issue 13 and the peers' timing): does the peers'
# launch hold bias torch-cudnn's times, and what does the forward's LSE cost it? Its rule is in docs/perf-notes.md,
# "Session 50", written before the call.
# Why: between session 16 (peers.py without the hold; results/h200/s16/callA/cudnn919/table.txt) and session 49
# (with it since session 44; results/h200/s49/M/), torch-cudnn's time against the in-binary cuDNN 9.14's (both the
# same libraries, the in-binary one timed by flashbench) moved in torch-cudnn's favour by a geomean of 3.0% on the
# papers' bf16 forwards and 1.8% on the backwards, most at d = 128 (forward 0.914-0.997, non-causal backward
# 0.925-0.983), the rows where the chip runs power-limited. The hold queues the timed reps behind a one-thread spin
# (torch.cuda._sleep) of twice the host's queueing time: the GPU idles through it, and a power-limited kernel may then
# start its reps at higher clocks than under flashbench's back-to-back reps. Two calls apart on other machines, so a
# lead, not a finding: this call measures it in one process order on one GPU.
# Sides, three interleaved rounds (order reversed in even rounds), on ten bf16 rows of the papers' 16k-token grid
# whose kernels take >= 0.25 ms (longer than PyTorch's host time per call, so no-hold timing is sound there too):
# d = 128 non-causal N = 1024 / 4096 / 16384 fwd and bwd, N = 16384 causal d = 64 / 128 fwd and bwd:
#   fb     flashbench run: flash-sm90 and the in-binary cudnn (the harness ours is timed by)
#   spin   peers.py --backends cudnn (the default hold)
#   busy   peers.py --backends cudnn --busy-hold (the hold as bf16 matrix products: the GPU at work until the reps)
#   none   peers.py --backends cudnn --no-launch-hold
#   train  peers.py --backends cudnn --fwd-training (the forward with the LSE, as ours writes it; default hold)
# with nvidia-smi's SM clock and power every 100 ms beside (smi.csv). Then table.txt (times per side, their ratios
# by round) and rule.json.
set -uo pipefail
export DEADLINE=${DEADLINE:-420}
source scripts/call_step.sh
call_begin $OUT/X
mkdir -p $R/specs $R/ab
python3 - $R/specs <<'PY'
import json, sys
base = json.load(open("configs/issue13-h200.json"))  # 16k tokens, model dim 2048
def spec(name, **kw):
    s = dict(base, name=name, kernels=["flash-sm90", "cudnn"], warmup=3, reps=10, verify=False, **kw)
    json.dump(s, open(f"{sys.argv[1]}/{name}.json", "w"), indent=2)
spec("hold50-full128", seq=[1024, 4096, 16384], head_dim=[128], causal=[False], **{"pass": ["fwd", "bwd"]})
spec("hold50-causal16k", seq=[16384], head_dim=[64, 128], causal=[True], **{"pass": ["fwd", "bwd"]})
PY
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv,noheader,nounits -lms 100 > $R/smi.csv 2>&1 &
smi=$!
specs="hold50-full128 hold50-causal16k"
sides=(fb spin busy none train)
for r in 1 2 3; do
  order=("${sides[@]}")
  ((r % 2 == 0)) && order=(train none busy spin fb)
  for s in $specs; do
    for v in "${order[@]}"; do
      case $v in
        fb) step fb-$s-$r 40 $fb run $R/specs/$s.json --no-ceilings -q -o $R/ab/fb-$s-$r.json ;;
        spin) step spin-$s-$r 45 python3 scripts/peers.py $R/specs/$s.json --backends cudnn -o $R/ab/spin-$s-$r.json ;;
        busy) step busy-$s-$r 45 python3 scripts/peers.py $R/specs/$s.json --backends cudnn --busy-hold \
                -o $R/ab/busy-$s-$r.json ;;
        none) step none-$s-$r 45 python3 scripts/peers.py $R/specs/$s.json --backends cudnn --no-launch-hold \
                -o $R/ab/none-$s-$r.json ;;
        train) step train-$s-$r 45 python3 scripts/peers.py $R/specs/$s.json --backends cudnn --fwd-training \
                 -o $R/ab/train-$s-$r.json ;;
      esac
    done
  done
done
kill $smi 2>/dev/null
python3 - $R "$specs" <<'PY' | tee $R/table.txt
# Per row and side, the median time (ms) of each round; then, per round and over the rounds (geomean), the ratios the
# rule reads: none / spin and busy / none (torch-cudnn's time), train / spin on the forwards, and flash-sm90 and the
# in-binary cudnn against torch-cudnn under each hold.
import json, math, os, sys
R, specs = sys.argv[1], sys.argv[2].split()
gm = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")
t = {}  # (side, kernel, key, round) -> ms
for f in sorted(os.listdir(os.path.join(R, "ab"))):
    side, rest = f.split("-", 1)
    rnd = int(rest.rsplit("-", 1)[1].split(".")[0])
    try:
        doc = json.load(open(os.path.join(R, "ab", f)))
    except (OSError, ValueError):
        continue
    for rec in doc.get("results", []):
        if rec.get("status") == "ok" and rec.get("time_ms", {}).get("median"):
            t[(side, rec["kernel"], rec["key"], rnd)] = float(rec["time_ms"]["median"])
keys = sorted({k[2] for k in t})
rounds = (1, 2, 3)
def ratios(a, b, rows):  # per round: geomean over rows of time a / time b; then the rounds' geomean
    per = []
    for r in rounds:
        xs = [t[a + (k, r)] / t[b + (k, r)] for k in rows if a + (k, r) in t and b + (k, r) in t]
        per.append(gm(xs) if len(xs) == len(rows) else float("nan"))
    return per, gm([x for x in per if x == x])
TC = "torch-cudnn"
print(f"{'row':42s} {'ours':>7s} {'cud914':>7s} {'spin':>7s} {'busy':>7s} {'none':>7s} {'train':>7s}   (ms, geomean of 3 rounds)")
for k in keys:
    cells = []
    for side, kern in (("fb", "flash-sm90"), ("fb", "cudnn"), ("spin", TC), ("busy", TC), ("none", TC), ("train", TC)):
        xs = [t[(side, kern, k, r)] for r in rounds if (side, kern, k, r) in t]
        cells.append(f"{gm(xs):7.3f}" if len(xs) == 3 else "      -")
    print(f"{k:42s} " + " ".join(cells))
fwd = [k for k in keys if k.endswith("-fwd")]
out = {}
for name, a, b, rows in (("none/spin", ("none", TC), ("spin", TC), keys), ("busy/none", ("busy", TC), ("none", TC), keys),
                         ("busy/spin", ("busy", TC), ("spin", TC), keys), ("train/spin fwd", ("train", TC), ("spin", TC), fwd),
                         ("torch(spin)/ours", ("spin", TC), ("fb", "flash-sm90"), keys),
                         ("torch(busy)/ours", ("busy", TC), ("fb", "flash-sm90"), keys),
                         ("torch(none)/ours", ("none", TC), ("fb", "flash-sm90"), keys),
                         ("torch(spin)/cud914", ("spin", TC), ("fb", "cudnn"), keys),
                         ("torch(none)/cud914", ("none", TC), ("fb", "cudnn"), keys)):
    per, overall = ratios(a, b, rows)
    out[name] = {"rounds": per, "geomean": overall, "rows": len(rows)}
    print(f"{name:20s} rounds {' '.join(f'{x:.3f}' for x in per)}  geomean {overall:.3f}  ({len(rows)} rows; time ratio)")
# The rule (docs/perf-notes.md, "Session 50", written before the call): the spin hold biases the peer if none/spin
# >= 1.02 over the rounds with every round >= 1.01, and the busy hold does not (busy/none within 0.99-1.01).
ns, bn = out["none/spin"], out["busy/none"]
biased = ns["geomean"] >= 1.02 and all(x >= 1.01 for x in ns["rounds"])
busy_ok = 0.99 <= bn["geomean"] <= 1.01
cleared = 0.99 <= ns["geomean"] <= 1.01
verdict = ("met: the spin hold biases the peer, the busy hold does not: --busy-hold becomes the default" if biased and busy_ok
           else "cleared: the spin hold does not bias the peer at these rows" if cleared
           else "neither: see the ratios")
out["verdict"] = verdict
print("rule:", verdict)
json.dump(out, open(os.path.join(R, "rule.json"), "w"), indent=1)
PY
call_end X
