#!/usr/bin/env bash
# Session 65, call J (one Hopper GPU; issue 13's measuring; no rule: the checks must pass): flashbench run
# --interleave on the GPU, the backend's timing reworked into arm / run_armed (kernels unchanged since session 58).
# (1) verify --seq 1000, every pass and dtype (every kernel through the new run path); (2) compute-sanitizer memcheck
# over a small sweep timed interleaved (four kernels armed at once, forward and backward, GQA, seq_q != seq_k);
# (3) the issue-13 bf16 grid with flash-sm90 and the in-binary cudnn (9.14), 20 reps, interleaved and back to back in
# turn (I1, B1, I2, B2; round 2 names the kernels in the other order), for agree.py (how far a timing's two rounds
# agree) and paired.py (flash-sm90 against cudnn rep by rep).
set -uo pipefail
export DEADLINE=${DEADLINE:-570}
source scripts/call_step.sh
call_begin $OUT/J
mkdir -p $R/spec $R/I $R/B
python3 - "$R/spec" <<'EOF'
import json, sys
d = sys.argv[1]
grid = json.load(open("configs/issue13-h200.json"))
grid.update(kernels=["flash-sm90", "cudnn"], reps=20, name="issue13-h200-s65J")
json.dump(grid, open(f"{d}/grid.json", "w"), indent=1)
small = {"name": "s65J-small", "seq_q": [200, 333], "seq_k": [333], "batch": [2], "heads": [8], "kv_heads": [2],
         "head_dim": [64, 128], "dtype": ["bf16"], "causal": [False], "pass": ["fwd", "bwd"],
         "kernels": ["naive", "flash", "flash-sm90", "cudnn"], "warmup": 1, "reps": 3}
json.dump(small, open(f"{d}/small.json", "w"), indent=1)
EOF
step verify 90 $fb verify --seq 1000 --pass all -q --backend cuda
tail -3 $R/verify.log
step memcheck 150 compute-sanitizer --tool memcheck --error-exitcode 9 $fb run $R/spec/small.json --interleave \
  --backend cuda --no-ceilings -q -o $R/small.json
grep -E "ERROR SUMMARY|error" $R/memcheck.log | tail -3
echo "cudnn:flash-sm90" > $R/I/pairs.txt
cp $R/I/pairs.txt $R/B/pairs.txt
smi_start
step I1 120 $fb run $R/spec/grid.json --interleave --kernels cudnn,flash-sm90 --backend cuda --no-ceilings -q -o $R/I/peers-bf16-1.json
step B1 120 $fb run $R/spec/grid.json --kernels cudnn,flash-sm90 --backend cuda --no-ceilings -q -o $R/B/peers-bf16-1.json
step I2 120 $fb run $R/spec/grid.json --interleave --kernels flash-sm90,cudnn --backend cuda --no-ceilings -q -o $R/I/peers-bf16-2.json
step B2 120 $fb run $R/spec/grid.json --kernels flash-sm90,cudnn --backend cuda --no-ceilings -q -o $R/B/peers-bf16-2.json
smi_stop
python3 results/h200/s64/calls/agree.py $R/agree.json I=$R/I B=$R/B > $R/agree.log 2>&1; tail -12 $R/agree.log
python3 scripts/paired.py $R/I/peers-bf16-1.json $R/I/peers-bf16-2.json --pair flash-sm90:cudnn --json $R/paired.json \
  > $R/paired.log 2>&1; tail -8 $R/paired.log
call_end J
