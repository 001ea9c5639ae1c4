#!/usr/bin/env bash
# Session 66, call D (one Hopper GPU; issue 13): the portable backward's d = 64 walk from the last query tile, now the
# default at non-causal MHA passes of 8192 keys or more (call C's rule). (1) the new GPU test [flash_desc64]; (2) the
# shipped flash beside its variant under FB_FLASH_BWD=nodesc2 (the rotated walk with its tail split: the default
# before) and a null variant, at shapes no config names of 8192 keys or more (a grid of less than one wave, seq_q !=
# seq_k both ways, 20 / 24 / 12 heads, fp16 and bf16) and the grid's N = 16384 row, 16 reps interleaved, two
# processes; (3) peers.py: FlashAttention-2 beside flash (the C API callable) at the d = 64 non-causal backwards
# N = 8192 / 16384, bf16 and fp16, interleaved; (4) verify --seq 1000 and the whole GPU test binary.
set -uo pipefail
export DEADLINE=${DEADLINE:-580}
source scripts/call_step.sh
call_begin $OUT/D
mkdir -p $R/spec $R/ab $R/peers
$fb --version
step gpu-desc64 90 $gt "[flash_desc64]"
tail -2 $R/gpu-desc64.log
python3 - "$R/spec" <<'EOF'
import json, sys
d = sys.argv[1]
base = {"head_dim": [64], "causal": [False], "pass": ["bwd"], "warmup": 2, "reps": 16, "kernels": ["flash"],
        "seed": 42, "verify": True}
def spec(name, **kw):
    json.dump(dict(base, name=name, **kw), open(f"{d}/{name}.json", "w"), indent=1)
spec("h1", seq_q=[1000], seq_k=[9000], batch=[1], heads=[3], dtype=["bf16"])
spec("h2", seq=[8300], batch=[1], heads=[2], dtype=["fp16"])
spec("h3", seq=[10000], batch=[1], heads=[20], dtype=["bf16"])
spec("h4", seq_q=[9000], seq_k=[12000], batch=[2], heads=[12], dtype=["fp16"])
spec("h5", seq=[8192], batch=[1], heads=[24], dtype=["bf16"])
spec("g16", seq=[16384], batch=[1], heads=[32], dtype=["bf16"])
spec("peers", seq=[8192, 16384], tokens=16384, model_dim=2048, dtype=["bf16", "fp16"], reps=20, warmup=5)
EOF
V1="--variant rot=flash:FB_FLASH_BWD=nodesc2 --variant null=flash:FB_FLASH_BWD=standard"
V2="--variant null=flash:FB_FLASH_BWD=standard --variant rot=flash:FB_FLASH_BWD=nodesc2"
smi_start
for r in 1 2; do
  v=$V1; [ $r = 2 ] && v=$V2
  for s in h1 h2 h3 h4 h5 g16; do
    step ab-$s-$r 60 $fb run $R/spec/$s.json --interleave $v --backend cuda --no-ceilings -q -o $R/ab/$s-$r.json
  done
done
step peers 150 python3 scripts/peers.py $R/spec/peers.json --backends flash --callable scripts/fb_torch.py:flash \
  --busy-hold --interleave -o $R/peers/peers.json
smi_stop
python3 scripts/paired.py $R/ab/*-1.json $R/ab/*-2.json --pair flash:rot --pair null:flash --json $R/paired.json \
  > $R/paired.log 2>&1
cut -c1-120 $R/paired.log
python3 scripts/paired.py $R/peers/peers.json --pair flash:torch-flash --json $R/paired-peers.json \
  > $R/paired-peers.log 2>&1
cut -c1-120 $R/paired-peers.log
step verify 90 $fb verify --seq 1000 --pass all -q --backend cuda
tail -2 $R/verify.log
step gpu-all 200 $gt
tail -2 $R/gpu-all.log
call_end D
