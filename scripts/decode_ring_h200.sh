#!/usr/bin/env bash
# The K/V ring A/B of flash-decode on one GPU (issue 14 part 1), over a CUDA build made beforehand:
# the [decode] GPU tests (auto ring, then every ring forced to cp.async), one `flashbench verify` of a
# decode shape, then configs/decode-ring-h200.json once per setting: FB_DECODE_RING = cpasync (session
# 5's ring), bulk (sm_90a bulk copies, same ring), auto (bulk, the deep ring where the grid is one CTA
# per SM; naive beside it), auto with FB_DECODE_L2PF=2 (d = 128), deep forced at batch 256, and batch-1
# forced split counts. Prints last a table: time, GB/s and % of the copy ceiling per setting.
#   BUILD=build scripts/decode_ring_h200.sh OUTDIR
set -uo pipefail
out=${1:?usage: BUILD=build scripts/decode_ring_h200.sh OUTDIR}
build=${BUILD:-build}
fb="$build/flashbench"
mkdir -p "$out"
rc=0
timeout 60 "$build/tests/flashbench_gpu_tests" "[decode]" >"$out/tests-auto.log" 2>&1 || rc=1
FB_DECODE_RING=cpasync timeout 60 "$build/tests/flashbench_gpu_tests" "[decode]" >"$out/tests-cpasync.log" 2>&1 || rc=1
timeout 60 "$fb" verify --seq-q 1 --seq-k 5001 --batch 3 --heads 64 --kv-heads 8 --dim 128 --dtype bf16 \
  --causal both -q >"$out/verify.log" 2>&1 || rc=1
spec=configs/decode-ring-h200.json
FB_DECODE_RING=cpasync timeout 120 "$fb" run "$spec" -q --kernels flash-decode --no-ceilings -o "$out/ring-cpasync.json" \
  >"$out/ring-cpasync.log" 2>&1 || rc=1
FB_DECODE_RING=bulk timeout 120 "$fb" run "$spec" -q --kernels flash-decode --no-ceilings -o "$out/ring-bulk.json" \
  >"$out/ring-bulk.log" 2>&1 || rc=1
timeout 180 "$fb" run "$spec" -q -o "$out/ring-auto.json" >"$out/ring-auto.log" 2>&1 || rc=1
# L2 prefetch 2 tiles past the ring's newest (auto rings, d = 128).
FB_DECODE_L2PF=2 timeout 60 "$fb" run "$spec" -q --kernels flash-decode --no-ceilings --filter 'd128' \
  -o "$out/ring-l2pf.json" >"$out/ring-l2pf.log" 2>&1 || rc=1
# The deep ring forced where auto does not take it (batch 256: one CTA per SM over several waves).
FB_DECODE_RING=deep timeout 60 "$fb" run "$spec" -q --kernels flash-decode --no-ceilings --filter '^b256-' \
  -o "$out/ring-deep.json" >"$out/ring-deep.log" 2>&1 || rc=1
# Batch 1, d = 128: forced split counts on the auto rings (past 16 splits the grid exceeds one CTA per
# SM and takes the two-per-SM ring).
timeout 90 "$fb" run "$spec" -q --kernels flash-decode --no-ceilings --filter '^b1-.*-d128-' --splits 0,8,16,32,64 \
  -o "$out/splits-b1.json" >"$out/splits-b1.log" 2>&1 || rc=1
for f in tests-auto tests-cpasync verify; do echo "$f: $(tail -n 2 "$out/$f.log" | tr '\n' ' ')"; done
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
def load(name):
    p = os.path.join(out, name)
    return json.load(open(p)) if os.path.exists(p) else {"results": []}
docs = {r: load(f"ring-{r}.json") for r in ("cpasync", "bulk", "auto", "l2pf", "deep")}
copy = (docs["auto"].get("device", {}).get("ceilings") or {}).get("copy_gbps", 0)
rows = {}
for ring, doc in docs.items():
    for r in doc["results"]:
        if r["status"] == "ok" and r["kernel"] in ("naive", "flash-decode"):
            name = r["kernel"] if r["kernel"] == "naive" else ring
            rows.setdefault(r["key"], {})[name] = r
print(f"copy ceiling {copy:.0f} GB/s; us (GB/s, % of copy) on flash-decode's modelled bytes; * = unverified")
print(f"{'case':44s} {'naive':>7s} {'cpasync':>22s} {'bulk':>22s} {'auto':>22s} {'auto/cp':>7s} {'auto+L2 prefetch 2':>22s} {'deep (forced)':>22s}")
def cell(r):
    if not r:
        return f"{'-':>22s}"
    t = r["time_ms"]["median"] * 1e3
    pct = 100 * r["gbps"] / copy if copy else float("nan")
    return f"{t:8.1f} ({r['gbps']:5.0f},{pct:4.0f}%){'' if r.get('verified') else '*'}"
sp = {}
for r in load("splits-b1.json")["results"]:
    if r["status"] == "ok":
        sp.setdefault(r["case"]["seq_k"] if "case" in r and "seq_k" in r["case"] else r["key"], []).append(
            (r.get("kv_splits", 0), r["time_ms"]["median"] * 1e3, r.get("verified")))
for k, v in sp.items():
    print(f"b1 d128 seq_k {k}: " + ", ".join(f"{n} splits {t:.1f} us{'' if ok else '*'}" for n, t, ok in sorted(v)))
for key, ks in rows.items():
    nv = ks.get("naive")
    a, c = ks.get("auto"), ks.get("cpasync")
    ratio = c["time_ms"]["median"] / a["time_ms"]["median"] if a and c else float("nan")
    print(f"{key:44s} {nv['time_ms']['median'] * 1e3 if nv else float('nan'):7.1f} {cell(c)} {cell(ks.get('bulk'))} {cell(a)} {ratio:7.3f}"
          + f" {cell(ks.get('l2pf'))}" + (f" {cell(ks['deep'])}" if "deep" in ks else ""))
PY
exit $rc
