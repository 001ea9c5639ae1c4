#!/usr/bin/env bash
# Session 67, call F (one Hopper GPU; issue 13). Call E withdrew the portable backward's d = 64 walk (0.985x at b1-h2
# N = 9000, 142 blocks). Its losses so far sat on grids of 1.0-1.1 waves (130 and 142 blocks on 132 SMs) or seq_q <
# seq_k; its wins on 2.9 waves or more. This call asks whether the walk (`desc2`, the walk wherever the tiled dQ runs)
# beats the default (no d = 64 walk since call E) on grids of two whole waves or more, at shapes no call has timed:
#   f1 b1-h4 N = 8700 bf16 (272 blocks, 2.06 waves)     f2 b1-h3 N = 12000 fp16 (282, 2.14)
#   f3 b1-h5 N = 9500 bf16 (375, 2.84)                  f4 b2-h5 seq_q 11000 / seq_k 9000 fp16 (710, 5.4)
#   f5 b1-h12 N = 14000 bf16 (1320, 10.0)
# and, reported outside the rule, two grids between one and two waves: g1 b1-h3 N = 8192 bf16 (192, 1.45), g2 b1-h2
# N = 12500 fp16 (196, 1.48). d = 64, non-causal, MHA; 16 reps interleaved, two processes (the variants' order swapped),
# a null variant beside. Rule (docs/perf-notes.md, session 67, written before this ran): paired flash rep / walk rep
# >= 0.995 at every f row, their geomean >= 1.01, the null within 0.995-1.005 at every row: met, the d = 64 walk comes
# back for MHA non-causal passes of 8192 keys or more, seq_q >= seq_k, on grids of two whole waves or more; not met,
# it stays withdrawn. Before it: the GPU test [flash_desc64] as shipped and under FB_FLASH_BWD=desc2 (the walk verified).
set -uo pipefail
export DEADLINE=${DEADLINE:-100}
source scripts/call_step.sh
call_begin $OUT/F
mkdir -p $R/spec $R/ab
step gpu-desc64 40 $gt "[flash_desc64]"
tail -1 $R/gpu-desc64.log
FB_FLASH_BWD=desc2 step gpu-desc64-desc2 40 $gt "[flash_desc64]"
tail -1 $R/gpu-desc64-desc2.log
python3 - "$R/spec" <<'PY'
import json, sys
d = sys.argv[1]
base = {"head_dim": [64], "causal": [False], "pass": ["bwd"], "warmup": 2, "reps": 16, "kernels": ["flash"],
        "seed": 42, "verify": True}
def spec(name, **kw):
    json.dump(dict(base, name=name, **kw), open(f"{d}/{name}.json", "w"), indent=1)
spec("f1", seq=[8700], batch=[1], heads=[4], dtype=["bf16"])
spec("f2", seq=[12000], batch=[1], heads=[3], dtype=["fp16"])
spec("f3", seq=[9500], batch=[1], heads=[5], dtype=["bf16"])
spec("f4", seq_q=[11000], seq_k=[9000], batch=[2], heads=[5], dtype=["fp16"])
spec("f5", seq=[14000], batch=[1], heads=[12], dtype=["bf16"])
spec("g1", seq=[8192], batch=[1], heads=[3], dtype=["bf16"])
spec("g2", seq=[12500], batch=[1], heads=[2], dtype=["fp16"])
PY
ab_variants $R/ab $R/spec "f1 f2 f3 f4 f5 g1 g2" flash walk=FB_FLASH_BWD=desc2 null=FB_FLASH_BWD=standard
cut -c1-120 $R/ab/paired.log
python3 scripts/ab_rule.py $R/ab --in-process --spec-dir $R/spec --kernel flash --variant walk --rounds 2 \
  --rows 'f*' --min-geomean 1.01 --min-row 0.995 --json $R/rule.json > $R/rule.txt 2>&1
tail -4 $R/rule.txt
call_end F
