#!/usr/bin/env bash
# Session 63, call D (one Hopper GPU; issue 13): the probes wide192 and wide256 (flash_sm90_launch.cuh): d = 64 on two
# consumer warpgroups x 192- or 256-key K/V tiles, against the shipped three warpgroups x 128 keys. The in-binary
# cuDNN 9.14 runs a 256-key d = 64 non-causal engine and leads ours at N 2048-4096 (sessions 49, 58, 62). The sm90
# forward's GPU tests and memcheck under each word; then three interleaved rounds (order reversed in round 2) of def,
# wide192, wide256 over d = 64 forwards: the papers' bf16 non-causal grid N 512-16384 (16k tokens, 32 heads), fp16
# N 2048 / 4096, causal N 1024 / 4096, and four shapes no config names (drawn before the call); the in-binary cudnn
# beside ours in every process. The rule is in docs/perf-notes.md, "Session 63", written before the call.
set -uo pipefail
export DEADLINE=${DEADLINE:-420}
source scripts/call_step.sh
call_begin $OUT/D; mkdir -p $R/ab $R/specs
for w in wide192 wide256; do
  step tests-$w 90 env FB_SM90_FWD_PROBE=$w $gt "flash-sm90 meets*,[sched],*seq_q*,[sm90fwd]"
  echo "tests-$w: $(grep -E 'passed|failed' $R/tests-$w.log | tail -2 | tr '\n' ' ')"
done
spec() {  # NAME BATCH HEADS KV_HEADS SEQ DTYPE CAUSAL
  python3 - "$R/specs" "$@" <<'PY'
import json, sys
d, name, b, h, kv, n, dtype, causal = sys.argv[1:9]
json.dump({"name": name, "seq": [int(n)], "batch": [int(b)], "heads": [int(h)], "kv_heads": [int(kv)],
           "head_dim": [64], "dtype": [dtype], "causal": [causal == "true"], "pass": ["fwd"],
           "kernels": ["flash-sm90", "cudnn"], "warmup": 5, "reps": 10, "seed": 42, "verify": True},
          open(f"{d}/{name}.json", "w"), indent=2)
PY
}
for n in 512 1024 2048 4096 8192 16384; do spec pg-n$n-bf16-cf $((16384 / n)) 32 32 $n bf16 false; done
for n in 2048 4096; do spec pg-n$n-fp16-cf $((16384 / n)) 32 32 $n fp16 false; done
for n in 1024 4096; do spec pc-n$n-bf16-ct $((16384 / n)) 32 32 $n bf16 true; done
spec ho-b3-h20-kv4-n1800-bf16-cf 3 20 4 1800 bf16 false
spec ho-b5-h12-kv12-n2900-fp16-cf 5 12 12 2900 fp16 false
spec ho-b2-h24-kv8-n3333-bf16-ct 2 24 8 3333 bf16 true
spec ho-b6-h16-kv2-n1111-fp16-cf 6 16 2 1111 fp16 false
for w in wide192 wide256; do
  for c in false true; do
    python3 - "$R/san-$c.json" "$c" <<'PY'
import json, sys
json.dump({"name": "san", "seq": [700], "batch": [3], "heads": [12], "kv_heads": [4], "head_dim": [64],
           "dtype": ["bf16"], "causal": [sys.argv[2] == "true"], "pass": ["fwd"], "kernels": ["flash-sm90"],
           "verify": True}, open(sys.argv[1], "w"))
PY
    step memcheck-$w-$c 40 env FB_SM90_FWD_PROBE=$w compute-sanitizer --tool memcheck --error-exitcode 9 $fb \
      run $R/san-$c.json --warmup 1 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/memcheck-$w-$c.json
    tail -n 1 $R/memcheck-$w-$c.log
  done
done
specs=$(cd $R/specs && ls -- *.json | sed 's/\.json$//' | tr '\n' ' ')
smi_start
ab_rounds $R/ab $R/specs 3 "$specs" def=X=1 wide192=FB_SM90_FWD_PROBE=wide192 wide256=FB_SM90_FWD_PROBE=wide256
smi_stop
python3 results/h200/s63/calls/d_table.py $R/ab --json $R/table.json > $R/table.txt 2>&1
echo "d_table rc=$?"
cat $R/table.txt
call_end D
