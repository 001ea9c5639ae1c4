#!/usr/bin/env bash
# Session 59, call P (one Hopper GPU; no rule, a diagnostic): the short forwards over many processes. Session 54's
# calls R / R2 found a 5-10% mode at short rows that one process has and the next may not; session 59's first calls
# (results/h100/s59/E, E2, P) read torch-cudnn at 32 x 32 heads N = 512 d = 64 non-causal from 173 to 223 us across
# seven processes while flashbench's flash-sm90 read 178.6-181.9. Here ROUNDS rounds (default 6) of four fresh
# processes each: flashbench (flash-sm90) and peers.py (torch-cudnn, its default busy hold) on the short rows (16k
# tokens, model dim 2048, N = 512 and 1024, d = 64 and 128, causal or not, bf16 forward) and on the 8-query-head GQA
# rows behind in session 58's tables (16 x 8 heads over 8 and 1 K/V heads, N = 1024, d = 128, non-causal); odd
# rounds flashbench first, even rounds peers.py first. summary.json: each row's medians by round on both sides, and
# the ratio (torch-cudnn / flash-sm90) by round, its range and the ratio of the medians over rounds.
set -uo pipefail
export DEADLINE=${DEADLINE:-200}
rounds=${ROUNDS:-6}
source scripts/call_step.sh
call_begin $OUT/P
cat > $R/short.json <<'JSON'
{"name": "s59-short", "seq": [512, 1024], "tokens": 16384, "model_dim": 2048, "head_dim": [64, 128],
 "dtype": ["bf16"], "causal": [false, true], "pass": ["fwd"], "kernels": ["flash-sm90"], "warmup": 5, "reps": 20,
 "seed": 42, "verify": false}
JSON
cat > $R/gqa.json <<'JSON'
{"name": "s59-gqa", "seq": [1024], "batch": [16], "heads": [8], "kv_heads": [8, 1], "head_dim": [128],
 "dtype": ["bf16"], "causal": [false], "pass": ["fwd"], "kernels": ["flash-sm90"], "warmup": 5, "reps": 20,
 "seed": 42, "verify": false}
JSON
smi_start
for ((r = 1; r <= rounds; ++r)); do
  sides="fb pe"
  ((r % 2 == 0)) && sides="pe fb"
  for side in $sides; do
    for s in short gqa; do
      if [ $side = fb ]; then
        step fb-$s-$r 30 $fb run $R/$s.json --no-ceilings -q -o $R/fb-$s-$r.json
      else
        step pe-$s-$r 40 python3 scripts/peers.py $R/$s.json --backends cudnn -o $R/pe-$s-$r.json
      fi
    done
  done
done
smi_stop
python3 - $R $rounds <<'PY'
import glob, json, math, statistics, sys
R, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for side, kernel in (("fb", "flash-sm90"), ("pe", "torch-cudnn")):
    for r in range(1, rounds + 1):
        for s in ("short", "gqa"):
            try:
                d = json.load(open(f"{R}/{side}-{s}-{r}.json"))
            except (OSError, ValueError):
                continue
            for x in d.get("results", []):
                c, t = x["case"], x.get("time_ms")
                if x.get("kernel") != kernel or not t:
                    continue
                key = (f"{c['batch']}x{c['heads']}/{c['kv_heads']} n{c['seq_q']} d{c['head_dim']} "
                       f"{'causal' if c['causal'] else 'full'}")
                rows.setdefault(key, {"flash-sm90": {}, "torch-cudnn": {}})[kernel][r] = t["median"]
out = []
print(f"{'row':34s} {'ours med (range) us':>24s} {'torch med (range) us':>24s} {'ratio by round':>40s} med-ratio")
for key, v in rows.items():
    a, b = v["flash-sm90"], v["torch-cudnn"]
    both = sorted(set(a) & set(b))
    ratios = [b[r] / a[r] for r in both]
    rec = {"row": key, "flash_sm90_ms": a, "torch_cudnn_ms": b, "ratio_by_round": dict(zip(both, ratios))}
    if both:
        ma, mb = statistics.median(a.values()), statistics.median(b.values())
        rec.update(ratio_of_medians=mb / ma, ratio_min=min(ratios), ratio_max=max(ratios),
                   rounds_ahead=sum(x >= 1 for x in ratios), rounds=len(ratios))
        print(f"{key:34s} {ma*1e3:7.1f} ({min(a.values())*1e3:6.1f}-{max(a.values())*1e3:6.1f}) "
              f"{mb*1e3:7.1f} ({min(b.values())*1e3:6.1f}-{max(b.values())*1e3:6.1f}) "
              f"{' '.join(f'{x:.3f}' for x in ratios):>40s} {mb/ma:.3f}")
    out.append(rec)
json.dump({"rounds": rounds, "rows": out}, open(f"{R}/summary.json", "w"), indent=1)
PY
call_end P
