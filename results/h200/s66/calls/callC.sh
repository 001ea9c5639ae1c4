#!/usr/bin/env bash
# Session 66, call C (one Hopper GPU; issue 13): call B read the portable backward's `desc2` (the query-tile walk
# from the last tile down, no tail split: the d = 128 non-causal default up to 4096 keys since session 18) 1.025x over
# the default at d = 64 N = 8192 / 16384 non-causal, the row behind FlashAttention-2. Its rule (docs/perf-notes.md,
# session 66) is judged here: (1) flash, its desc2 and null variants over the d = 64 non-causal backwards of the
# issue's grid (N 512-16384, bf16 and fp16, 16k tokens x 32 heads) and shapes no config names (MHA and GQA), 16 reps
# interleaved, two processes; (2) peers.py: FlashAttention-2 beside flashbench's flash (the C API callable) on the
# d = 64 non-causal backwards N 2048-16384, bf16, interleaved, once as shipped and once under FB_FLASH_BWD=desc2.
set -uo pipefail
export DEADLINE=${DEADLINE:-580}
source scripts/call_step.sh
call_begin $OUT/C
mkdir -p $R/spec $R/ab $R/peers
$fb --version
python3 - "$R/spec" <<'EOF'
import json, sys
d = sys.argv[1]
base = {"head_dim": [64], "causal": [False], "pass": ["bwd"], "warmup": 2, "reps": 16, "kernels": ["flash"],
        "seed": 42, "verify": True}
def spec(name, **kw):
    s = dict(base, name=name, **kw)
    json.dump(s, open(f"{d}/{name}.json", "w"), indent=1)
spec("grid", seq=[512, 1024, 2048, 4096, 8192, 16384], tokens=16384, model_dim=2048, dtype=["bf16", "fp16"])
spec("held1", seq=[3000], batch=[3], heads=[20], dtype=["bf16"])
spec("held2", seq=[5500], batch=[2], heads=[12], dtype=["fp16"])
spec("held3", seq_q=[6000], seq_k=[7000], batch=[1], heads=[24], dtype=["bf16"])
spec("gqa", seq=[8192], batch=[2], heads=[32], kv_heads=[8], dtype=["bf16"])
spec("peers", seq=[2048, 4096, 8192, 16384], tokens=16384, model_dim=2048, dtype=["bf16"], reps=20, warmup=5)
EOF
V1="--variant null=flash:FB_FLASH_BWD=standard --variant desc2=flash:FB_FLASH_BWD=desc2"
V2="--variant desc2=flash:FB_FLASH_BWD=desc2 --variant null=flash:FB_FLASH_BWD=standard"
smi_start
for r in 1 2; do
  v=$V1; [ $r = 2 ] && v=$V2
  for s in grid held1 held2 held3 gqa; do
    step ab-$s-$r 90 $fb run $R/spec/$s.json --interleave $v --backend cuda --no-ceilings -q -o $R/ab/$s-$r.json
  done
done
for mode in default desc2; do
  env=(); [ $mode = desc2 ] && env=(FB_FLASH_BWD=desc2)
  step peers-$mode 120 env ${env[@]+"${env[@]}"} python3 scripts/peers.py $R/spec/peers.json --backends flash \
    --callable scripts/fb_torch.py:flash --busy-hold --interleave -o $R/peers/peers-$mode.json
done
smi_stop
python3 scripts/paired.py $R/ab/*-1.json $R/ab/*-2.json --pair desc2:flash --pair null:flash --json $R/paired.json \
  > $R/paired.log 2>&1
cut -c1-120 $R/paired.log
for mode in default desc2; do
  python3 scripts/paired.py $R/peers/peers-$mode.json --pair flash:torch-flash --json $R/paired-peers-$mode.json \
    > $R/paired-peers-$mode.log 2>&1
  echo "== flash ($mode) vs torch-flash"; cut -c1-120 $R/paired-peers-$mode.log
done
call_end C
