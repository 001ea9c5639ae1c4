#!/usr/bin/env bash
# Session 58, call E (one Hopper GPU; no rule, a diagnostic): does flashbench's timing add time that peers.py's does
# not? Call S's ncu (one launch, clocks free) read flash-sm90 at 32 x 32 heads N = 512 d = 64 in 173.7 / 132.6 us
# (non-causal / causal) and PyTorch's cuDNN kernel (ncu of peers.py's call, tcudnn_ncu.sh) in 177.3 / 132.0 us,
# while the grid's timed medians (T2) read 181.3-183.0 / 137.0-137.2 us for ours and 177.8-178.4 / 132.0-133.1 us
# for torch-cudnn: ours ~5-8 us above its ncu time, torch-cudnn ~1 us. The same cases (16k tokens, model dim 2048,
# N = 512 and 4096, d = 64, causal or not, bf16 forward) timed by flashbench (flash-sm90, the in-binary cudnn) as the
# grid times them and cold (one rep, no warm-up: as ncu's one launch), and by peers.py (torch-cudnn) under its busy hold
# and under none; where nsys is on the device, each process under nsys too: the kernels' own durations in the timed
# loops beside the events' times. (Session 55's call L compared the two L2 flush modes at d = 128: level.)
set -uo pipefail
export DEADLINE=${DEADLINE:-240}
source scripts/call_step.sh
call_begin $OUT/E
cat > $R/e.json <<'JSON'
{"name": "s58-e", "seq": [512, 4096], "tokens": 16384, "model_dim": 2048, "head_dim": [64], "dtype": ["bf16"],
 "causal": [false, true], "pass": ["fwd"], "kernels": ["flash-sm90", "cudnn"], "warmup": 5, "reps": 20, "seed": 42,
 "verify": true}
JSON
smi_start
# As the grid times them (warm-up by time, then 20 reps), then cold (no warm-up, one rep: as ncu's one launch), three
# processes; peers.py under its default busy hold and with no hold.
step fb-warm 60 $fb run $R/e.json --no-ceilings -q -o $R/fb-warm.json
for i in 1 2 3; do
  step fb-cold$i 30 $fb run $R/e.json --no-ceilings -q --warmup 0 --warmup-time 0 --reps 1 -o $R/fb-cold$i.json
done
step peers-busy 60 python3 scripts/peers.py $R/e.json --backends cudnn -o $R/peers-busy.json
step peers-nohold 60 python3 scripts/peers.py $R/e.json --backends cudnn --no-launch-hold -o $R/peers-nohold.json
smi_stop
nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
echo "nsys: ${nsys:-none}"
if [ -n "$nsys" ]; then
  step nsys-fb 60 $nsys profile -f true -t cuda -o $R/nsys-fb $fb run $R/e.json --filter n512 --no-ceilings -q \
    -o $R/fb-nsys.json
  step nsys-peers 60 $nsys profile -f true -t cuda -o $R/nsys-peers python3 scripts/peers.py $R/e.json \
    --backends cudnn -o $R/peers-nsys.json
  for n in fb peers; do
    [ -f $R/nsys-$n.nsys-rep ] && $nsys stats -f csv -r cuda_gpu_kern_sum -o $R/kern-$n $R/nsys-$n.nsys-rep \
      > /dev/null 2>&1
    rm -f $R/nsys-$n.nsys-rep $R/nsys-$n.sqlite
  done
  ls $R | grep kern
  for f in $R/kern-*.csv; do [ -f $f ] && cut -c1-200 $f | grep -iE "name|fwd|fprop" | head -6; done
fi
python3 - $R <<'PY'
import json, sys, glob
R = sys.argv[1]
for f in sorted(glob.glob(R + "/fb-*.json") + glob.glob(R + "/peers-*.json")):
    try:
        d = json.load(open(f))
    except Exception as e:
        print(f, "unreadable", e); continue
    for r in d.get("results", []):
        c = r.get("case", {})
        t = r.get("time_ms") or {}
        if t:
            print(f"{f.split('/')[-1]:18s} {r['kernel']:12s} n{c.get('seq_q')} d{c.get('head_dim')} "
                  f"{'causal' if c.get('causal') else 'full  '} median {t['median']*1000:8.1f} us "
                  f"min {t['min']*1000:8.1f} verified {r.get('verified')}")
PY
call_end E
