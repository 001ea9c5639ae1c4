# Session 18 (lead), call D: the flash-sm90 backward's plane-major order (pmajor, the non-causal d = 128 default
# since call B) on the GQA/MQA grid's non-causal rows at N = 1k and 4k, which call B did not time: default vs
# FB_SM90_BWD128=nopmajor (the order before), interleaved D N D N, each beside the in-binary cudnn, every row verified.
# (N = 16k passes already ran plane_group = 1 before: unchanged there.)
#   BUILD=<build dir> OUTDIR=<dir> bash results/h200/s18/calls/job-pmajor-gqa.sh
set -uo pipefail
build=${BUILD:?}; out=${OUTDIR:?}; mkdir -p "$out"; out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
filter='n(1024|4096)-'
i=0
for s in default nopmajor default nopmajor; do
  i=$((i + 1))
  v=""; [ "$s" = nopmajor ] && v=nopmajor
  FB_SM90_BWD128=$v timeout 40 "$build/flashbench" run "$here/c18-gqabwd.json" --kernels flash-sm90,cudnn --filter "$filter" \
    -q -o "$out/$i-$s.json" > "$out/$i-$s.log" 2>&1
  echo "$i $s rc=$?"
done
python3 - "$out" <<'PY' | tee "$out/table.txt"
import glob, json, math, os, sys
out = sys.argv[1]
runs = []
for p in sorted(glob.glob(os.path.join(out, "[0-9]-*.json"))):
    n, s = os.path.basename(p)[:-5].split("-", 1)
    d = {}
    for r in json.load(open(p))["results"]:
        d.setdefault(r["key"], {})[r["kernel"]] = r
    runs.append((int(n), s, d))
keys = sorted({k for _, _, d in runs for k in d})
print("flash-sm90 backward, GQA/MQA non-causal d = 128 (16k tokens, bf16): default (pmajor) vs nopmajor; per run")
print("ours/cudnn (same process, time ratio cudnn / ours); def/nop = geomean of the default's ratios over nopmajor's")
print(f"{'case':40s} " + " ".join(f"{str(n) + s[:3]:>8s}" for n, s, _ in runs) + "  def/nop  verified")
allr = []
for k in keys:
    vals, ok = {}, True
    cells = []
    for n, s, d in runs:
        r = d.get(k, {})
        a, c = r.get("flash-sm90"), r.get("cudnn")
        if not a or not c or a["status"] != "ok" or c["status"] != "ok":
            cells.append(f"{'-':>8s}"); ok = False; continue
        ok = ok and bool(a.get("verified"))
        x = c["time_ms"]["median"] / a["time_ms"]["median"]
        vals.setdefault(s, []).append(x); cells.append(f"{x:8.3f}")
    g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
    rr = g(vals["default"]) / g(vals["nopmajor"]) if vals.get("default") and vals.get("nopmajor") else float("nan")
    if rr == rr: allr.append(rr)
    print(f"{k:40s} " + " ".join(cells) + f"  {rr:7.3f}  {ok}")
if allr:
    print(f"geomean def/nop over {len(allr)} rows: {math.exp(sum(map(math.log, allr)) / len(allr)):.3f} "
          f"(min {min(allr):.3f}, max {max(allr):.3f})")
PY
