#!/usr/bin/env bash
# The K/V ring A/B of flash-decode on one GPU (issue 14 part 1), over a CUDA build made beforehand
# (flash_decode.h: FB_DECODE_RING). Settings, each a run of configs/decode-ring-h200.json:
#   std       FB_DECODE_RING=std: the cp.async ring (Cfg16: three 64-key stages, two CTAs per SM; the
#             default until session 7, which made the TMA ring the default), naive beside it
#   deep      FB_DECODE_RING=deep: the deep cp.async ring where the grid is at most one CTA per SM
#   tma       FB_DECODE_RING=tma: std's stages filled by TMA boxes (128-byte swizzle)
#   tmadeep   FB_DECODE_RING=tmadeep: the deep ring filled by TMA where the grid is <= one CTA per SM
#   deepall   FB_DECODE_RING=deepall at batch 256 (the deep ring over several waves)
# Before them the [decode] GPU tests (default, deepall, tmadeep, tma) and one `flashbench verify`; after
# them batch-1 forced split counts on std. MODE=tma runs only the TMA tests and std/tma/tmadeep at
# d = 128 (~60 s). Prints last a table: time in us (% of the copy ceiling) per setting.
#   BUILD=build [MODE=tma] scripts/decode_ring_h200.sh OUTDIR
set -uo pipefail
out=${1:?usage: BUILD=build [MODE=tma] scripts/decode_ring_h200.sh OUTDIR}
build=${BUILD:-build}
mode=${MODE:-full}
fb="$build/flashbench"
mkdir -p "$out"
rc=0
spec=configs/decode-ring-h200.json
tests() {  # tests NAME [RING]
  FB_DECODE_RING=${2:-} timeout 60 "$build/tests/flashbench_gpu_tests" "[decode]" >"$out/tests-$1.log" 2>&1 || rc=1
  echo "tests-$1: $(tail -n 2 "$out/tests-$1.log" | tr '\n' ' ')"
}
fd() {  # fd NAME [flashbench run options...]: flash-decode only, no ceilings
  local name=$1
  shift
  timeout 90 "$fb" run "$spec" -q --kernels flash-decode --no-ceilings -o "$out/ring-$name.json" "$@" \
    >"$out/ring-$name.log" 2>&1 || rc=1
}
if [ "$mode" = tma ]; then
  tests tmadeep tmadeep
  tests tma tma
  FB_DECODE_RING=std timeout 90 "$fb" run "$spec" -q --filter 'd128' -o "$out/ring-std.json" >"$out/ring-std.log" 2>&1 || rc=1
  FB_DECODE_RING=tma fd tma --filter 'd128'
  FB_DECODE_RING=tmadeep fd tmadeep --filter 'd128'
else
  tests std std
  tests deepall deepall
  tests tmadeep tmadeep
  tests tma tma
  timeout 60 "$fb" verify --seq-q 1 --seq-k 5001 --batch 3 --heads 64 --kv-heads 8 --dim 128 --dtype bf16 \
    --causal both -q >"$out/verify.log" 2>&1 || rc=1
  echo "verify: $(tail -n 1 "$out/verify.log")"
  FB_DECODE_RING=std timeout 180 "$fb" run "$spec" -q -o "$out/ring-std.json" >"$out/ring-std.log" 2>&1 || rc=1
  FB_DECODE_RING=deep fd deep
  FB_DECODE_RING=tma fd tma
  FB_DECODE_RING=tmadeep fd tmadeep
  FB_DECODE_RING=deepall fd deepall --filter '^b256-'
  FB_DECODE_RING=std fd splits --filter '^b1-.*-d128-' --splits 0,8,16,32,64
fi
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
def load(name):
    p = os.path.join(out, f"ring-{name}.json")
    return json.load(open(p)) if os.path.exists(p) else {"results": []}
cols = ["std", "deep", "tma", "tmadeep", "deepall"]
docs = {c: load(c) for c in cols}
copy = (docs["std"].get("device", {}).get("ceilings") or {}).get("copy_gbps", 0)
rows = {}
for c, doc in docs.items():
    for r in doc["results"]:
        if r["status"] == "ok" and r["kernel"] in ("naive", "flash-decode"):
            rows.setdefault(r["key"], {})["naive" if r["kernel"] == "naive" else c] = r
sp = {}
for r in load("splits")["results"]:
    if r["status"] == "ok":
        sp.setdefault(r["case"]["seq_k"], []).append((r.get("kv_splits", 0), r["time_ms"]["median"] * 1e3, r.get("verified")))
for k, v in sp.items():
    print(f"std b1 d128 seq_k {k}: " + ", ".join(f"{n} splits {t:.1f} us{'' if ok else '*'}" for n, t, ok in sorted(v)))
print(f"copy ceiling {copy:.0f} GB/s; us (% of copy) on flash-decode's modelled bytes; * = unverified; "
      "best/std = std's time / the best setting's")
print(f"{'case':42s} {'naive':>6s} " + " ".join(f"{c:>13s}" for c in cols) + f" {'best/std':>8s}")
for key, ks in rows.items():
    def cell(r):
        if not r:
            return f"{'-':>13s}"
        pct = 100 * r["gbps"] / copy if copy else float("nan")
        return f"{r['time_ms']['median'] * 1e3:7.1f} ({pct:3.0f}%){'' if r.get('verified') else '*'}"
    nv = ks.get("naive")
    ts = [ks[c]["time_ms"]["median"] for c in cols if c in ks]
    best = ks["std"]["time_ms"]["median"] / min(ts) if "std" in ks and ts else float("nan")
    print(f"{key:42s} {nv['time_ms']['median'] * 1e3 if nv else float('nan'):6.1f} "
          + " ".join(cell(ks.get(c)) for c in cols) + f" {best:8.3f}")
PY
exit $rc
