#!/usr/bin/env bash
# The probe A/B of flash-decode at one query row (issue 14 part 1) on one GPU, over a CUDA build made
# beforehand, in <= ~70 s. Probes (flash_decode.h, each read once a process):
#   FB_DECODE_SYNC=warp   each warp loads and waits for its own keys of every tile (no block barrier)
#   FB_DECODE_L2=128|256|ef256   L2 prefetch-size hint (ef256: with an evict-first policy) on the ring
#   FB_DECODE_CTAS=N      the auto split count aims at N CTAs per SM (default 1 for one row)
#   FB_DECODE_RING=std|tma|tmadeep|small  the cp.async ring, the TMA rings, two stages at three CTAs
#                         per SM (unset: the per-shape default, flash_decode.cu's default_ring)
#   FB_DECODE_STREAMK=1   stream-K: all heads' keys end to end, one equal range per CTA
#   FB_DECODE_ROTATE=1    each CTA starts its tiles at a hashed offset (scattered DRAM addresses)
# Steps: the [decode] GPU tests (the default, the cp.async ring, the deep TMA ring; every setting's run
# below verifies too), configs/decode-ab-h200.json
# with flash-decode (default) + the in-binary cudnn, scripts/peers.py on the same spec (torch-cudnn,
# torch-flash), then flash-decode alone under each setting (GQA 32/8 cases), twice, while time is left,
# and the d = 64 companion spec on both rings. Prints last: us per case and setting (the faster of the
# two runs), then per setting the ratio better torch peer / setting per case, min, geomean, and % of
# the copy ceiling at large KV; then d = 64.
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
tests default
tests std FB_DECODE_RING=std
tests tmadeep FB_DECODE_RING=tmadeep
wt=(--warmup-time 0.05)  # back-to-back runs: the clocks are up already
timeout 25 "$fb" run "$spec" -q "${wt[@]}" -o "$out/ab-default.json" >"$out/ab-default.log" 2>&1 || rc=1
timeout 30 python3 scripts/peers.py "$spec" -o "$out/peers.json" --backends flash,cudnn --ref-max-seq 0 \
  >"$out/peers.log" 2>&1 || rc=1
# Session 7's calls A and B ran every probe (commit 018b269's list: docs/perf-notes.md has the tables);
# the default is now per shape (TMA or the cp.async ring with .L2::128B). This list: the leaders, each
# run twice (the table shows the faster run of each case), then the cp.async and TMA rings at d = 64.
settings=(
  "cp FB_DECODE_RING=std"
  "tma FB_DECODE_RING=tma"
  "tmadeep FB_DECODE_RING=tmadeep"
  "cp128 FB_DECODE_RING=std FB_DECODE_L2=128"
  "w128 FB_DECODE_RING=std FB_DECODE_SYNC=warp FB_DECODE_L2=128"
  "tma_c2 FB_DECODE_RING=tma FB_DECODE_CTAS=2"
)
: >"$out/order.txt"
filter=${FILTER:-h32-kv}  # the settings on GQA 32/8 only (64/8 streams the same K/V bytes)
skipped=()
run_setting() {  # name suffix spec vars...
  local name=$1 suffix=$2 sp=$3
  shift 3
  if [ $((SECONDS - t0)) -gt $((budget - 4)) ]; then
    skipped+=("$name$suffix")
    return
  fi
  [ -n "$suffix" ] || echo "$name" >>"$out/order.txt"
  env "$@" timeout 12 "$fb" run "$sp" -q "${wt[@]}" --kernels flash-decode --no-ceilings --filter "$filter" \
    -o "$out/ab-$name$suffix.json" >"$out/ab-$name$suffix.log" 2>&1 || rc=1
}
for pass in "" -r2; do
  for s in "${settings[@]}"; do
    read -r name vars <<<"$s"
    # shellcheck disable=SC2086  # vars: VAR=VALUE words
    run_setting "$name" "$pass" "$spec" $vars
  done
done
run_setting d64cp "" configs/decode-ab-d64-h200.json FB_DECODE_RING=std
run_setting d64tma "" configs/decode-ab-d64-h200.json FB_DECODE_RING=tma
[ ${#skipped[@]} -eq 0 ] || echo "out of time, not run: ${skipped[*]}"
python3 - "$out" "$filter" <<'PY'
import json, math, os, re, sys
out, filt = sys.argv[1], sys.argv[2]
def load(p):
    try:
        return json.load(open(p))
    except (OSError, ValueError):
        return {"results": []}
std = load(os.path.join(out, "ab-default.json"))
copy = (std.get("device", {}).get("ceilings") or {}).get("copy_gbps", 0)
names = ["default"] + [n for n in open(os.path.join(out, "order.txt")).read().split()
                   if os.path.exists(os.path.join(out, f"ab-{n}.json")) and not n.startswith("d64")]
d64 = {}
for n in ("d64cp", "d64tma"):
    for r in load(os.path.join(out, f"ab-{n}.json"))["results"]:
        if r["status"] == "ok":
            d64.setdefault(r["key"], {})[n] = (r["time_ms"]["median"] * 1e3, bool(r.get("verified")))
t, nbytes, ok = {}, {}, {}
for n in names:
    for r in load(os.path.join(out, f"ab-{n}.json"))["results"] + load(os.path.join(out, f"ab-{n}-r2.json"))["results"]:
        if r["status"] != "ok":
            continue
        col = n if r["kernel"] == "flash-decode" else r["kernel"]
        us = r["time_ms"]["median"] * 1e3
        if col in t.get(r["key"], {}):  # the second run of a setting: keep the faster
            us = min(us, t[r["key"]][col])
        t.setdefault(r["key"], {})[col] = us
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
print("ratio per case, in the table's order (" + ", ".join(short(x[3]) for x in stats["default"]) + ")")
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
if d64:
    print("d = 64, us (* = unverified): cp.async ring / TMA ring")
    for key, v in d64.items():
        cells = [f"{v[n][0]:7.1f}{'' if v[n][1] else '*'}" if n in v else "      -" for n in ("d64cp", "d64tma")]
        print(f"  {key.replace('-bf16-causal-fwd', ''):28s} " + " / ".join(cells))
PY
echo "elapsed $((SECONDS - t0)) s, rc=$rc"
exit $rc
