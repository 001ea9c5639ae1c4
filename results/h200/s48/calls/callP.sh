#!/usr/bin/env bash
# Session 48, call P (one Hopper GPU; issue 13): the probe FB_SM90_BWD_PERSIST=dyn on the binaries of commit.txt.
# Call O's ncu (results/h100/s48/O/ncu-summary.txt, an H100): flash-sm90's d = 64 causal backward at N = 1024 (the
# persistent kernel, tiles blockIdx.x + gridDim.x, ...) read 856 and wrote 482 MiB of DRAM against the in-binary
# cuDNN's 388 / 240 (710 against 597 us); at d = 64 non-causal N = 4096 both read ~389 / 240. dyn: every causal d = 64
# pass without a head split runs the persistent kernel taking its next tile from a counter (the tiles in flight a
# window of the order, as under the hardware's scheduler).
# (Run order: 2, 3, then 1, each step as time allows: a refused start left ~300 s of device time; every A/B run
# verifies each row, so the rows measured are checked before the tests run.)
# 1. Tests: [sm90_dyn] as built (no pass takes the order), [bwd64] under dyn (ctest gpu_bwd64_dyn), memcheck of a dyn run.
# 2. ncu: DRAM bytes and time of the d = 64 causal N = 1024 backward under dyn and under off (a block a tile).
# 3. Three interleaved rounds of def / dyn on the papers' d = 64 causal grid (bf16, N 512-16k; dyn48-c64) and two
#    non-causal controls (dyn48ctl-f64: code identical under dyn); torch-cudnn once. (About 230 s of device time were
#    left for the whole call: `off` is in the ncu step only.)
# Rule (docs/perf-notes.md, "Session 48", written before the call): dyn becomes the default for causal d = 64 passes
# if its six rows' geomean >= 1.02 with none below 0.98, each control 0.97-1.03 and their geomean 0.99-1.01, every row
# verified on both sides in every round, and every test above passes.
set -uo pipefail
export DEADLINE=${DEADLINE:-160}
source scripts/call_step.sh
call_begin $OUT/${CALL_NAME:-P}; mkdir -p $R/ab $R/specs  # CALL_NAME: call Q runs these steps again
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
python3 - $R/specs <<'PY'
import json, sys
base = json.load(open("configs/issue13-h200.json"))
def spec(name, seq, causal):
    s = dict(base, name=name, seq=seq, head_dim=[64], causal=[causal], kernels=["flash-sm90"])
    s["pass"] = ["bwd"]
    json.dump(s, open(f"{sys.argv[1]}/{name}.json", "w"), indent=2)
spec("dyn48-c64", [512, 1024, 2048, 4096, 8192, 16384], True)
spec("dyn48ctl-f64", [1024, 4096], False)
PY
python3 - $R/ncu-spec.json <<'PY'
import json, sys
s = json.load(open("configs/issue13-h200.json"))
s.update({"name": "ncu48p", "seq": [1024], "head_dim": [64], "causal": [True], "kernels": ["flash-sm90"],
          "pass": ["bwd"], "warmup": 1, "reps": 1, "verify": False})
json.dump(s, open(sys.argv[1], "w"), indent=2)
PY
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum
for v in def=X=1 dyn=FB_SM90_BWD_PERSIST=dyn off=FB_SM90_BWD_PERSIST=off; do
  step ncu-${v%%=*} 30 env "${v#*=}" $ncu --clock-control none --kernel-name regex:flash_sm90_bwd_kernel --metrics $m \
    --csv $fb run $R/ncu-spec.json --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q -o $R/ncu-${v%%=*}.json
  echo "ncu ${v%%=*}: $(grep -E 'gpu__time_duration|dram__bytes' $R/ncu-${v%%=*}.log | awk -F'","' '{print $(NF-2)"="$NF}' | tr -d '"' | tr '\n' ' ')"
done
smi_start
specs="dyn48-c64 dyn48ctl-f64"
ab_rounds $R/ab $R/specs 3 "$specs" def=X=1 dyn=FB_SM90_BWD_PERSIST=dyn
peers_once $R/ab $R/specs "dyn48-c64" cudnn
smi_stop
step tests-dyn-built 40 $gt "[sm90_dyn]"
step tests-bwd64-dyn 90 env FB_SM90_BWD_PERSIST=dyn $gt "[bwd64]"
for t in dyn-built bwd64-dyn; do echo "tests-$t: $(grep -E 'passed|failed' $R/tests-$t.log | tail -2 | tr '\n' ' ')"; done
python3 - $R/memcheck-spec.json <<'PY'
import json, sys
json.dump({"name": "dyn48-memcheck", "seq": [1030], "batch": [2], "heads": 8, "head_dim": [64], "dtype": ["bf16"],
           "causal": [True], "pass": ["bwd"], "kernels": ["flash-sm90"], "warmup": 1, "reps": 1, "seed": 5,
           "verify": True}, open(sys.argv[1], "w"), indent=2)
PY
step memcheck 60 env FB_SM90_BWD_PERSIST=dyn compute-sanitizer --tool memcheck --error-exitcode 9 $fb run \
  $R/memcheck-spec.json --warmup-time 0 --no-ceilings -q -o $R/memcheck.json
tail -3 $R/memcheck.log
python3 results/h200/s29/calls/ab_table.py $R/ab flash-sm90 torch-cudnn def dyn > $R/table.txt 2>&1
cut -c1-200 $R/table.txt
python3 scripts/ab_rule.py $R/ab --spec-dir $R/specs --kernel flash-sm90 --base def --variant dyn --rounds 3 \
  --rows dyn48-c64 --controls dyn48ctl-f64 --min-geomean 1.02 --min-row 0.98 --control-band 0.97:1.03 \
  --controls-geomean-band 0.99:1.01 --json $R/rule.json > $R/rule.txt 2>&1
echo "rule-dyn rc=$?"; tail -4 $R/rule.txt | cut -c1-150
call_end ${CALL_NAME:-P}
