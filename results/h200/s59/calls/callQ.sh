#!/usr/bin/env bash
# Session 59, call Q (one Hopper GPU; no rule, a diagnostic): why call P's flash-sm90 read 178-195 us at 16 x 16 heads
# N = 1024 d = 128 causal (bf16 forward; the short spec's last case, verify off, flash-sm90 alone) where session 58's
# grid (T2) read 158.7-159.4 us. The same spec (P's short.json) in fresh processes: as P ran it; verify on; that row
# alone (--filter); the row first (a spec of it then the rest); with the in-binary cudnn beside it; ROUNDS times (2). SM
# clock and power sampled every 100 ms (smi.csv) and, per process, the row's median beside the others', with the
# lowest SM clock flashbench read in its timed reps (its records' `clocks`, session 59 on; P: under sw_power_cap).
set -uo pipefail
export DEADLINE=${DEADLINE:-150}
source scripts/call_step.sh
call_begin $OUT/Q
base='"tokens": 16384, "model_dim": 2048, "dtype": ["bf16"], "pass": ["fwd"], "warmup": 5, "reps": 20, "seed": 42'
echo "{\"name\": \"q-short\", \"seq\": [512, 1024], \"head_dim\": [64, 128], \"causal\": [false, true], $base,
 \"kernels\": [\"flash-sm90\"], \"verify\": false}" > $R/short.json
echo "{\"name\": \"q-verify\", \"seq\": [512, 1024], \"head_dim\": [64, 128], \"causal\": [false, true], $base,
 \"kernels\": [\"flash-sm90\"], \"verify\": true}" > $R/verify.json
echo "{\"name\": \"q-first\", \"seq\": [1024, 512], \"head_dim\": [128, 64], \"causal\": [true, false], $base,
 \"kernels\": [\"flash-sm90\"], \"verify\": false}" > $R/first.json
echo "{\"name\": \"q-cudnn\", \"seq\": [512, 1024], \"head_dim\": [64, 128], \"causal\": [false, true], $base,
 \"kernels\": [\"flash-sm90\", \"cudnn\"], \"verify\": false}" > $R/cudnn.json
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 100 > $R/smi.csv 2>&1 &
smi_pid=$!
for ((i = 1; i <= ${ROUNDS:-2}; ++i)); do
  step short-$i 20 $fb run $R/short.json --no-ceilings -q -o $R/short-$i.json
  step verify-$i 30 $fb run $R/verify.json --no-ceilings -q -o $R/verify-$i.json
  step alone-$i 20 $fb run $R/short.json --filter n1024-d128-bf16-causal --no-ceilings -q -o $R/alone-$i.json
  step first-$i 20 $fb run $R/first.json --no-ceilings -q -o $R/first-$i.json
  step cudnn-$i 30 $fb run $R/cudnn.json --no-ceilings -q -o $R/cudnn-$i.json
done
smi_stop
python3 - $R <<'PY'
import glob, json, sys
R = sys.argv[1]
clk = lambda r: r.get("clocks") or {}
for f in sorted(glob.glob(R + "/*-[12].json")):
    d = json.load(open(f))
    row = [f"{r['kernel'][:5]}:{r['case']['seq_q']}/{r['case']['head_dim']}{'c' if r['case']['causal'] else 'n'}:"
           f"{r['time_ms']['median']*1e3:.1f}"
           f"@{clk(r).get('sm_mhz_min', '?')}{'P' if 'sw_power_cap' in clk(r).get('event_reasons', []) else ''}"
           for r in d.get("results", []) if r.get("time_ms")]
    print(f.split("/")[-1], " ".join(row))
PY
call_end Q
