#!/usr/bin/env bash
# Session 55, call W (one Hopper GPU; no rule, a diagnostic after call B): the long 32-query-head backwards under a
# long warm-up. Call B's ncu had ours at 2.00x the 16-head kernel's time for 2x the work, but flashbench's reps in call
# T climbed within one measurement (32 / 1: 19.15 -> 22.65 ms over ten reps; torch-cudnn's flat at 19.97-20.39 behind
# the busy hold): the chip's power cap, reached during the reps. Six rows (d = 128 bf16 non-causal backward, batch 1,
# N = 16384: 16 or 32 query heads on 16, 8 or 1 K/V heads), flash-sm90 and the in-binary cudnn (9.14's kernels, which torch-cudnn
# runs at d = 128: session 53's calls U, Z) under flashbench's default warm-up (0.1 s) and a 2 s one, 20 reps each
# (per-rep times kept), and peers.py's torch-cudnn (busy hold) once a round; two interleaved rounds. Not verified
# (a timing diagnostic; the same kernels verified in call T).
set -uo pipefail
export DEADLINE=${DEADLINE:-200}
source scripts/call_step.sh
call_begin $OUT/W
spec=$R/w-long.json
echo '{"name": "w-long", "seq": [16384], "batch": [1], "heads": [16, 32], "kv_heads": [16, 8, 1], "head_dim": [128],
  "dtype": ["bf16"], "causal": [false], "pass": ["bwd"], "kernels": ["flash-sm90", "cudnn"], "warmup": 2, "reps": 20,
  "seed": 42, "verify": false}' > $spec
$fb run $spec --list > $R/list.txt 2>&1; cat $R/list.txt | head -12
smi_start
for r in 1 2; do
  order=(w01 w2 peers)
  ((r % 2 == 0)) && order=(peers w2 w01)
  for v in "${order[@]}"; do
    case $v in
      w01) step fb-w01-$r 40 $fb run $spec --no-ceilings -q -o $R/fb-w01-$r.json ;;
      w2) step fb-w2-$r 60 $fb run $spec --warmup-time 2 --no-ceilings -q -o $R/fb-w2-$r.json ;;
      peers) step peers-$r 40 python3 scripts/peers.py $spec --backends cudnn -o $R/peers-$r.json ;;
    esac
  done
done
smi_stop
python3 - $R <<'PY' | tee $R/table.txt
import glob, json, os, statistics, sys
R = sys.argv[1]
print(f"{'file':14s} {'kernel':11s} {'row':38s} {'median':>8s} {'first5':>8s} {'last5':>8s}")
for f in sorted(glob.glob(f"{R}/fb-*.json") + glob.glob(f"{R}/peers-*.json")):
    for rec in json.load(open(f)).get("results", []):
        if rec["status"] != "ok":
            continue
        t = rec["time_ms"]
        s = t.get("samples") or []
        f5 = statistics.mean(s[:5]) if len(s) >= 5 else float("nan")
        l5 = statistics.mean(s[-5:]) if len(s) >= 5 else float("nan")
        print(f"{os.path.basename(f)[:-5]:14s} {rec['kernel']:11s} {rec['key']:38s} {t['median']:8.3f} {f5:8.3f} {l5:8.3f}")
PY
call_end W
