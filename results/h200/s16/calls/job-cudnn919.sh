# Session 16 (lead): which cuDNN does the in-binary `cudnn` peer get, and does a newer one change the peer?
# The image's system cuDNN is 9.14.0; PyTorch's wheel brings its own (9.19.0, session 15 call N), which is what the
# torch-cudnn column runs. This job runs the same flashbench binary over cudnn919.json (bf16 fwd + bwd, N 512-16k,
# d 64/128, causal and not) with the system library and with PyTorch's (LD_LIBRARY_PATH = the directory holding
# the wheel's libcudnn.so.9), interleaved: sys, torch, sys, torch; each run's JSON records the cudnn_version it
# loaded. flash-sm90 rides along as the drift control. Then PyTorch's own SDPA (scripts/peers.py, cuDNN backend)
# on the same rows, and under PyTorch's library the forward graph without Stats (FB_CUDNN_FWD_PROBE=nostats; its
# LSE is left unwritten, so those rows fail verification on LSE by construction; O is judged as ever).
#   BUILD=<build dir> OUTDIR=<dir> bash results/h200/s16/calls/job-cudnn919.sh
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"; out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
spec=${SPEC:-$here/cudnn919.json}
budget=${BUDGET:-150}; t0=$SECONDS
tlib=$(python3 - <<'PY'
import glob, os, site
roots = site.getsitepackages() + [site.getusersitepackages()]
for pat in ("nvidia/cudnn/lib/libcudnn.so.9", "nvidia/cu*/lib/libcudnn.so.9", "torch/lib/libcudnn.so.9"):
    for r in roots:
        hits = sorted(glob.glob(os.path.join(r, pat)))
        if hits:
            print(os.path.dirname(hits[0])); raise SystemExit
PY
)
echo "torch's cuDNN dir: ${tlib:-none found}" | tee "$out/libs.txt"
python3 -c "import torch; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version())" >> "$out/libs.txt" 2>&1
run() {  # name, lib dir ('' = system), probe word, extra flags...
  local name=$1 lib=$2 word=$3; shift 3
  local left=$((budget - (SECONDS - t0)))
  if [ "$left" -lt 20 ]; then echo "$name skipped (t=$((SECONDS - t0))s)"; return; fi
  local s=$SECONDS
  LD_LIBRARY_PATH=${lib}${lib:+:}${LD_LIBRARY_PATH:-} FB_CUDNN_FWD_PROBE=$word timeout "$left" \
    "$build/flashbench" run "$spec" --no-ceilings -q -o "$out/$name.json" "$@" > "$out/$name.log" 2>&1
  echo "$name rc=$? $((SECONDS - s))s (t=$((SECONDS - t0))s)"
}
run 1-sys "" default
[ -n "$tlib" ] && run 2-torch "$tlib" default
run 3-sys "" default
[ -n "$tlib" ] && run 4-torch "$tlib" default
s=$SECONDS; timeout 60 python3 scripts/peers.py "$spec" --backends cudnn -o "$out/peers-torch.json" > "$out/peers.log" 2>&1
echo "peers rc=$? $((SECONDS - s))s"
[ -n "$tlib" ] && run 5-torch-nostats "$tlib" nostats --filter 'fwd$'
python3 - "$out" <<'PY' | tee "$out/table.txt"
import json, math, os, sys
out = sys.argv[1]
def load(n):
    try: return json.load(open(os.path.join(out, n + ".json")))
    except (OSError, ValueError): return None
runs = {n: load(n) for n in ("1-sys", "2-torch", "3-sys", "4-torch", "5-torch-nostats", "peers-torch")}
def table(doc, kernel):
    t = {}
    for r in (doc or {}).get("results", []):
        if r.get("kernel") == kernel and "time_ms" in r and r["time_ms"].get("median"):
            t[r["key"]] = (1000.0 * r["time_ms"]["median"], r.get("verified"))
    return t
for n, d in runs.items():
    if d: print(f"{n}: cudnn_version {(d.get('device') or {}).get('cudnn_version', '?')}")
c = {n: table(d, "cudnn") for n, d in runs.items()}
f = {n: table(d, "flash-sm90") for n, d in runs.items()}
tc = table(runs["peers-torch"], "torch-cudnn")
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
keys = [k for k in c["1-sys"]] or list(tc)
print(f"{'case':46s} {'sys us':>8s} {'torch us':>8s} {'sys/tor':>7s} {'nost us':>8s} {'tcud us':>8s} {'ours us':>8s} {'tcud/ours':>9s}")
ratios, rt = [], []
for k in keys:
    s = [c[n][k][0] for n in ("1-sys", "3-sys") if k in c[n]]
    t = [c[n][k][0] for n in ("2-torch", "4-torch") if k in c[n]]
    o = [f[n][k][0] for n in ("1-sys", "2-torch", "3-sys", "4-torch") if k in f[n]]
    ns = c["5-torch-nostats"].get(k, (float("nan"), None))[0] if "5-torch-nostats" in c else float("nan")
    p = tc.get(k, (float("nan"), None))[0]
    r = gm(s) / gm(t) if s and t else float("nan")
    if s and t: ratios.append(r)
    ro = p / gm(o) if o and p == p else float("nan")
    print(f"{k:46s} {gm(s):8.1f} {gm(t):8.1f} {r:7.3f} {ns:8.1f} {p:8.1f} {gm(o):8.1f} {ro:9.3f}")
print(f"geomean sys/torch (>1: the torch library's cuDNN is faster): {gm(ratios):.3f} over {len(ratios)} rows")
PY
