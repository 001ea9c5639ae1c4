#!/usr/bin/env bash
# The decode measurements on one GPU, over a CUDA build made beforehand (cmake --build BUILD --target
# flashbench flashbench_gpu_tests): the decode GPU tests, flashbench on configs/decode-h200*.json, the
# PyTorch SDPA peers (cuDNN, FlashAttention-2) on the same cases, merged into OUTDIR/decode-h200-all.json,
# and a table of GB/s, % of the measured copy ceiling and the ratio to the better peer.
#   scripts/decode_h200.sh OUTDIR [BUILD_DIR (default build)]
set -uo pipefail
out=${1:?usage: scripts/decode_h200.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
fb="$build/flashbench"
mkdir -p "$out"
rc=0
"$build/tests/flashbench_gpu_tests" "[decode]" >"$out/gpu-tests-decode.log" 2>&1 || rc=1
tail -n 3 "$out/gpu-tests-decode.log"
parts=()
for spec in decode-h200 decode-h200-d64; do
  "$fb" run "configs/$spec.json" -q -o "$out/$spec.json" >"$out/$spec.log" 2>&1 || rc=1
  tail -n 4 "$out/$spec.log"
  python3 scripts/peers.py "configs/$spec.json" --backends cudnn,flash -o "$out/$spec-peers.json" \
    >"$out/$spec-peers.log" 2>&1 || rc=1
  parts+=("$out/$spec.json" "$out/$spec-peers.json")
done
"$fb" merge "${parts[@]}" --force -o "$out/decode-h200-all.json" >/dev/null || rc=1
python3 - "$out/decode-h200-all.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
copy = (doc.get("device", {}).get("ceilings") or {}).get("copy_gbps", 0)
rows = {}
for r in doc["results"]:
    if r["status"] == "ok":
        rows.setdefault(r["key"], {})[r["kernel"]] = r
print(f"copy ceiling {copy:.0f} GB/s; GB/s on flash-decode's modelled bytes (K/V once + Q + O + partials)")
print(f"{'case':52s} {'fd ms':>8s} {'fd GB/s':>8s} {'%copy':>6s} {'splits':>6s} {'peer':>12s} {'vs peer':>7s} {'vs flash-sm90':>13s}")
for key, ks in rows.items():
    fd = ks.get("flash-decode")
    if not fd:
        continue
    peers = [(ks[p]["time_ms"]["median"], p) for p in ("torch-cudnn", "torch-flash") if p in ks]
    best = min(peers) if peers else None
    sm90 = ks.get("flash-sm90")
    t = fd["time_ms"]["median"]
    pct = 100 * fd["gbps"] / copy if copy else float("nan")
    print(f"{key:52s} {t:8.4f} {fd['gbps']:8.0f} {pct:6.1f} {fd.get('kv_splits', 0):6d} "
          f"{best[1] if best else '-':>12s} {best[0] / t if best else float('nan'):7.2f} "
          f"{sm90['time_ms']['median'] / t if sm90 else float('nan'):13.2f}"
          + ("" if fd.get("verified") else "  UNVERIFIED"))
PY
exit $rc
