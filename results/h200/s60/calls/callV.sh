#!/usr/bin/env bash
# Session 60, call V (one Hopper GPU; no rule, a diagnostic): call G read flash-sm90 level with torch-cudnn's kernel at
# the 8-query-head GQA forwards in one launch each under ncu (16 x 8 / 8 heads: 119.8 / 118.4 us; 16 x 8 / 1: 116.7 /
# 117.2), where the grids read ours 125-130 us against torch-cudnn's 118-120 (session 59's P2). Is the difference the
# timed loop's (flashbench's against peers.py's: the poisoned outputs, the flush) or our kernel's under sustained load?
# ROUNDS rounds (2) of fresh processes on those two rows (N = 1024, d = 128, bf16 forward, non-causal; call Q has the
# MHA row in flashbench's loop beside the in-binary cudnn): flashbench with flash-sm90 and the in-binary cudnn in both
# orders, and under FB_L2_FLUSH=clean; peers.py's torch-cudnn under both flushes. Each row's median with the lowest SM
# clock read.
# Also call Q's pattern: a flash-sm90-only, verify-off process read its last case slow (16 x 16 N = 1024 d = 128 causal
# in `short`, 169-176 us against 154-160 elsewhere; d = 64 N = 512 non-causal last in `first`, 198-208 against 180-183):
# `short` again beside `short12`, the same eight cases then d = 256's four, so that the d = 128 causal row is eighth of
# twelve, not last.
set -uo pipefail
export DEADLINE=${DEADLINE:-170}
source scripts/call_step.sh
call_begin $OUT/V
spec() {  # NAME KERNELS
  echo "{\"name\": \"v-$1\", \"seq\": [1024], \"batch\": [16], \"heads\": [8], \"kv_heads\": [8, 1],
 \"head_dim\": [128], \"dtype\": [\"bf16\"], \"causal\": [false], \"pass\": [\"fwd\"], \"kernels\": $2, \"warmup\": 5,
 \"reps\": 20, \"seed\": 42, \"verify\": false}" > $R/$1.json
}
spec ab '["flash-sm90", "cudnn"]'
spec ba '["cudnn", "flash-sm90"]'
spec pe '["flash-sm90"]'
base='"tokens": 16384, "model_dim": 2048, "dtype": ["bf16"], "pass": ["fwd"], "warmup": 5, "reps": 20, "seed": 42'
echo "{\"name\": \"v-short\", \"seq\": [512, 1024], \"head_dim\": [64, 128], \"causal\": [false, true], $base,
 \"kernels\": [\"flash-sm90\"], \"verify\": false}" > $R/short.json
echo "{\"name\": \"v-short12\", \"seq\": [512, 1024], \"head_dim\": [64, 128, 256], \"causal\": [false, true], $base,
 \"kernels\": [\"flash-sm90\"], \"verify\": false}" > $R/short12.json
smi_start
for ((i = 1; i <= ${ROUNDS:-2}; ++i)); do
  step short-$i 20 $fb run $R/short.json --no-ceilings -q -o $R/short-$i.json
  step short12-$i 25 $fb run $R/short12.json --no-ceilings -q -o $R/short12-$i.json
  step ab-$i 30 $fb run $R/ab.json --no-ceilings -q -o $R/ab-$i.json
  step ba-$i 30 $fb run $R/ba.json --no-ceilings -q -o $R/ba-$i.json
  step clean-$i 30 env FB_L2_FLUSH=clean $fb run $R/ab.json --no-ceilings -q -o $R/clean-$i.json
  step pe-$i 40 python3 scripts/peers.py $R/pe.json --backends cudnn -o $R/pe-$i.json
  step peclean-$i 40 env FB_L2_FLUSH=clean python3 scripts/peers.py $R/pe.json --backends cudnn -o $R/peclean-$i.json
done
smi_stop
python3 - $R <<'PY'
import glob, json, sys
R = sys.argv[1]
for f in sorted(glob.glob(R + "/*-[0-9].json")):
    d = json.load(open(f))
    row = []
    for r in d.get("results", []):
        c, t, k = r["case"], r.get("time_ms"), r.get("clocks") or {}
        if t:
            row.append(f"{r['kernel'][:7]}:h{c['heads']}/{c['kv_heads']}/n{c['seq_q']}/d{c['head_dim']}"
                       f"{'c' if c['causal'] else 'n'}:{t['median']*1e3:.1f}@{k.get('sm_mhz_min', '?')}")
    print(f.split("/")[-1], " ".join(row))
PY
call_end V
