#!/usr/bin/env bash
# The probe A/B of flash-decode at one query row (issue 14 part 1) on one GPU, over a CUDA build made
# beforehand, in <= ~70 s. Probes (flash_decode.h, each read once a process):
#   FB_DECODE_SYNC=warp   each warp loads and waits for its own keys of every tile (no block barrier)
#   FB_DECODE_L2=128|256|ef256   L2 prefetch-size hint (ef256: with an evict-first policy) on the ring
#   FB_DECODE_CTAS=N      the auto split count aims at N CTAs per SM (default 1 for one row)
#   FB_DECODE_RING=small  a two-stage ring at three CTAs per SM; tma / tmadeep: the TMA rings
#   FB_DECODE_STREAMK=1   stream-K: all heads' keys end to end, one equal range per CTA
#   FB_DECODE_ROTATE=1    each CTA starts its tiles at a hashed offset (scattered DRAM addresses)
# Steps: the [decode] GPU tests (default, stream-K with the warp ring, rotation; every setting's run
# below verifies too), configs/decode-ab-h200.json with flash-decode + the in-binary cudnn,
# scripts/peers.py on the same spec (torch-cudnn, torch-flash), then flash-decode alone under each
# setting (GQA 32/8 cases) while time is left (likeliest first). Prints last: us per case and setting,
# then per setting the ratio better torch peer / setting per case, min, geomean, and % of the copy
# ceiling at large KV.
#   BUILD=build scripts/decode_ab_h200.sh OUTDIR
set -uo pipefail
out=${1:?usage: BUILD=build scripts/decode_ab_h200.sh OUTDIR}
build=${BUILD:-build}
budget=${BUDGET_S:-66}  # seconds; settings that would start past budget - 6 are left out
fb="$build/flashbench"
spec=configs/decode-ab-h200.json
mkdir -p "$out"
rc=0
t0=$SECONDS
tests() {  # tests NAME [VAR=VALUE...]
  local name=$1
  shift
  env "$@" timeout 15 "$build/tests/flashbench_gpu_tests" "[decode]" >"$out/tests-$name.log" 2>&1 || rc=1
  echo "tests-$name ($*), at $((SECONDS - t0)) s: $(tail -n 2 "$out/tests-$name.log" | tr '\n' ' ')"
}
tests std
tests sk_warp FB_DECODE_STREAMK=1 FB_DECODE_SYNC=warp
tests rotate FB_DECODE_ROTATE=1
wt=(--warmup-time 0.05)  # back-to-back runs: the clocks are up already
timeout 25 "$fb" run "$spec" -q "${wt[@]}" -o "$out/ab-std.json" >"$out/ab-std.log" 2>&1 || rc=1
timeout 30 python3 scripts/peers.py "$spec" -o "$out/peers.json" --backends flash,cudnn --ref-max-seq 0 \
  >"$out/peers.log" 2>&1 || rc=1
settings=(
  "sk FB_DECODE_STREAMK=1"
  "rot FB_DECODE_ROTATE=1"
  "sk1 FB_DECODE_STREAMK=1 FB_DECODE_CTAS=1"
  "warp FB_DECODE_SYNC=warp"
  "tma FB_DECODE_RING=tma"
  "rot_ctas2 FB_DECODE_ROTATE=1 FB_DECODE_CTAS=2"
  "ctas2 FB_DECODE_CTAS=2"
  "w_sk FB_DECODE_STREAMK=1 FB_DECODE_SYNC=warp"
  "l2_256 FB_DECODE_L2=256"
  "small3 FB_DECODE_RING=small FB_DECODE_CTAS=3"
  "sk_small FB_DECODE_STREAMK=1 FB_DECODE_RING=small FB_DECODE_CTAS=3"
  "tmadeep FB_DECODE_RING=tmadeep"
  "w_small3 FB_DECODE_RING=small FB_DECODE_CTAS=3 FB_DECODE_SYNC=warp"
  "w_256 FB_DECODE_SYNC=warp FB_DECODE_L2=256"
  "ef256 FB_DECODE_L2=ef256"
  "sk_deep FB_DECODE_STREAMK=1 FB_DECODE_RING=deepall FB_DECODE_CTAS=1"
  "ctas4 FB_DECODE_CTAS=4"
  "l2_128 FB_DECODE_L2=128"
)
: >"$out/order.txt"
filter=${FILTER:-h32-kv}  # the settings on GQA 32/8 only (64/8 streams the same K/V bytes)
skipped=()
for s in "${settings[@]}"; do
  read -r name vars <<<"$s"
  if [ $((SECONDS - t0)) -gt $((budget - 6)) ]; then
    skipped+=("$name")
    continue
  fi
  echo "$name" >>"$out/order.txt"
  # shellcheck disable=SC2086  # vars: VAR=VALUE words
  env $vars timeout 12 "$fb" run "$spec" -q "${wt[@]}" --kernels flash-decode --no-ceilings --filter "$filter" \
    -o "$out/ab-$name.json" >"$out/ab-$name.log" 2>&1 || rc=1
done
[ ${#skipped[@]} -eq 0 ] || echo "out of time, not run: ${skipped[*]}"
python3 - "$out" "$filter" <<'PY'
import json, math, os, re, sys
out, filt = sys.argv[1], sys.argv[2]
def load(p):
    try:
        return json.load(open(p))
    except (OSError, ValueError):
        return {"results": []}
std = load(os.path.join(out, "ab-std.json"))
copy = (std.get("device", {}).get("ceilings") or {}).get("copy_gbps", 0)
names = ["std"] + [n for n in open(os.path.join(out, "order.txt")).read().split()
                   if os.path.exists(os.path.join(out, f"ab-{n}.json"))]
t, nbytes, ok = {}, {}, {}
for n in names:
    for r in load(os.path.join(out, f"ab-{n}.json"))["results"]:
        if r["status"] != "ok":
            continue
        col = n if r["kernel"] == "flash-decode" else r["kernel"]
        t.setdefault(r["key"], {})[col] = r["time_ms"]["median"] * 1e3
        ok[(r["key"], col)] = bool(r.get("verified"))
        if r["kernel"] == "flash-decode":
            nbytes[r["key"]] = r["bytes_moved"]
for r in load(os.path.join(out, "peers.json"))["results"]:
    if r["status"] == "ok" and r["key"] in t:
        t[r["key"]][r["kernel"]] = r["time_ms"]["median"] * 1e3
peers = ["torch-cudnn", "torch-flash", "cudnn"]
cols = peers + names
short = lambda k: k.replace("-bf16-causal-fwd", "").replace("-d128", "")
print(f"copy ceiling {copy:.0f} GB/s; us per case (* = unverified); ratio = better torch peer's time / setting's, "
      f"over the cases matching '{filt}'")
print(f"{'case':24s} " + " ".join(f"{c[:8]:>8s}" for c in cols))
stats = {n: [] for n in names}
for key, row in t.items():
    cells = []
    for c in cols:
        v = row.get(c)
        cells.append(f"{'-':>8s}" if v is None else f"{v:7.1f}{'' if ok.get((key, c), True) else '*'}".rjust(8))
    print(f"{short(key):24s} " + " ".join(cells))
    best = min([row[p] for p in ("torch-cudnn", "torch-flash") if p in row], default=None)
    if not re.search(filt, key):  # the settings' cases only, std included, so that the rows compare
        continue
    for n in names:
        if n in row and best:
            gbps = nbytes.get(key, 0) / (row[n] * 1e-6) / 1e9
            stats[n].append((best / row[n], 100 * gbps / copy if copy else float("nan"), gbps, key))
print("ratio per case, in the table's order (" + ", ".join(short(x[3]) for x in stats["std"]) + ")")
for n in names:
    s = stats[n]
    if not s:
        print(f"{n:9s} no rows")
        continue
    gm = math.exp(sum(math.log(x[0]) for x in s) / len(s))
    worst = min(s)
    big = [x for x in s if "k4096" not in x[3] or x[3].startswith("b256")]  # large KV: >= 32k keys or batch 256
    pct = ", ".join(f"{x[1]:.0f}" for x in big)
    each = " ".join(f"{x[0]:.2f}" for x in s)
    print(f"{n:9s} ratio {each} | min {worst[0]:.3f} geomean {gm:.3f} | large-KV % of copy: {pct}")
PY
echo "elapsed $((SECONDS - t0)) s, rc=$rc"
exit $rc
