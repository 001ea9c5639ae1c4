#!/usr/bin/env bash
# Session 66, call E (one Hopper GPU; issue 13): the d = 64 walk from the last query tile as call D left it (non-causal
# MHA, 8192 keys or more, seq_q >= seq_k, a whole wave or more) on shapes no call has timed, beside the walk before it
# (FB_FLASH_BWD=nodesc2) and a null variant, 16 reps interleaved, two processes; its rule (docs/perf-notes.md): every
# shape >= 0.995. And the GPU test [flash_desc64].
set -uo pipefail
export DEADLINE=${DEADLINE:-100}
source scripts/call_step.sh
call_begin $OUT/E
mkdir -p $R/spec $R/ab
step gpu-desc64 40 $gt "[flash_desc64]"
tail -1 $R/gpu-desc64.log
python3 - "$R/spec" <<'EOF'
import json, sys
d = sys.argv[1]
base = {"head_dim": [64], "causal": [False], "pass": ["bwd"], "warmup": 2, "reps": 16, "kernels": ["flash"],
        "seed": 42, "verify": True}
def spec(name, **kw):
    json.dump(dict(base, name=name, **kw), open(f"{d}/{name}.json", "w"), indent=1)
spec("e1", seq_q=[10000], seq_k=[8192], batch=[3], heads=[8], dtype=["bf16"])
spec("e2", seq=[12000], batch=[1], heads=[16], dtype=["fp16"])
spec("e3", seq=[9000], batch=[1], heads=[2], dtype=["bf16"])
spec("e4", seq=[8192], batch=[1], heads=[6], dtype=["fp16"])
EOF
for r in 1 2; do
  v="--variant rot=flash:FB_FLASH_BWD=nodesc2 --variant null=flash:FB_FLASH_BWD=standard"
  [ $r = 2 ] && v="--variant null=flash:FB_FLASH_BWD=standard --variant rot=flash:FB_FLASH_BWD=nodesc2"
  step ab-$r 40 $fb run $R/spec/e1.json $v --interleave --backend cuda --no-ceilings -q -o $R/ab/e1-$r.json
  for s in e2 e3 e4; do
    step ab-$s-$r 30 $fb run $R/spec/$s.json $v --interleave --backend cuda --no-ceilings -q -o $R/ab/$s-$r.json
  done
done
python3 scripts/paired.py $R/ab/*-1.json $R/ab/*-2.json --pair flash:rot --pair null:flash --json $R/paired.json \
  > $R/paired.log 2>&1
cut -c1-120 $R/paired.log
call_end E
