# Session 15, cudnn-nostats (<= 40 s): does the Stats (LSE) output alone change cuDNN's forward engine and time?
# Call D's ncu (results/h200/s15/callD/ncu-*.log, cuDNN 9.19.0, d = 64 causal N = 512, b32 h32 bf16): PyTorch's
# cuDNN forward under no_grad (graph without Stats) ran ..._flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1... in
# 173 us, the in-binary cudnn (graph with Stats) ..._knob_32_64x256x64... in 203 us.
# Rows (results/h200/s15/calls/cudnn-nostats.json): bf16 forward, 16k tokens, model dim 2048 (d = 64: 32 heads,
# d = 128: 16), N = 512 / 1k / 4k, causal and not; cudnn beside flash-sm90 (the control: the probe does not touch
# it), verified. Three flashbench processes, interleaved: FB_CUDNN_FWD_PROBE=default (the shipped graph; the word
# only adds one stderr line per planned forward naming cuDNN's engine configuration), nostats (the graph without
# Stats), default. Under nostats cudnn does not write LSE: it keeps the runner's NaN poison, so cudnn's rows there
# fail verification on LSE by construction (flashbench has no notion of a kernel without LSE); the table shows
# whether O passed its bound. The table (OUTDIR/table.txt, last): per row cudnn's median time under each run,
# default/nostats (the two default runs' geometric mean over nostats: > 1 = nostats faster), flash-sm90's times
# (its drift across the runs is the call's noise), O's verdict under nostats, and the engine configurations
# (global engine index and knob choices, CUDNN_KNOB_TYPE_* numbers: 24 = KERNEL_CFG) the two graphs planned.
# Time: a process ~6-9 s (12 rows x 2 kernels, fp64 reference); a run other than the last starts only while it and
# the last one still fit in 40 s.
#   BUILD=<build dir> OUTDIR=<dir> [SPEC=<spec>] bash results/h200/s15/calls/job-cudnn-nostats.sh
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
# The spec beside this script (a call copies both into out/), else the repo's; SPEC= overrides.
spec=${SPEC:-$here/cudnn-nostats.json}
[ -f "$spec" ] || spec=results/h200/s15/calls/cudnn-nostats.json
budget=40
t0=$SECONDS
summary=()
step() {  # name, timeout, command... (the timeout cut to what is left of the job's budget)
  local name=$1 max=$2 s=$SECONDS left=$((budget - (SECONDS - t0)))
  shift 2
  if [ "$left" -lt 4 ]; then
    summary+=("$(printf '%-12s skipped (t=%ss)' "$name" "$((SECONDS - t0))")")
    return
  fi
  [ "$max" -gt "$left" ] && max=$left
  timeout "$max" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  summary+=("$(printf '%-12s rc=%-3s %3ss  %s' "$name" "$rc" "$((SECONDS - s))" \
    "$(tail -n 1 "$out/$name.log" | cut -c1-80)")")
  echo "$name rc=$rc $((SECONDS - s))s (t=$((SECONDS - t0))s)"
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
runs=()
n=0
longest=6  # the longest run so far but the first (s): a run other than the last starts only if it and the last fit
for v in default nostats default; do
  n=$((n + 1))
  name=$n-$v
  if [ $n -lt 3 ] && [ $((SECONDS - t0 + 2 * longest)) -gt $budget ]; then
    summary+=("$(printf '%-12s skipped (t=%ss, runs take up to %ss)' "$name" "$((SECONDS - t0))" "$longest")")
    continue
  fi
  s=$SECONDS
  # rc 1 is expected under nostats (cudnn's LSE is not verified).
  FB_CUDNN_FWD_PROBE=$v step "$name" 16 "$build/flashbench" run "$spec" --kernels cudnn,flash-sm90 --no-ceilings \
    -q -o "$out/$name.json"
  [ $n -gt 1 ] && [ $((SECONDS - s)) -gt "$longest" ] && longest=$((SECONDS - s))
  [ -f "$out/$name.json" ] && runs+=("$name")
done
python3 - "$out" "${runs[@]}" <<'PY' | tee "$out/table.txt"
import json, math, os, re, sys
out, names = sys.argv[1], sys.argv[2:]
nan = float("nan")
us, o_ok, keys, engine = {}, {}, [], {}  # (run, key, kernel) -> median us; (run, key) -> cudnn's O verdict
note = re.compile(r"flashbench: cudnn forward plan \(FB_CUDNN_FWD_PROBE=(\w+)\) b(\d+) h(\d+) kv(\d+) q(\d+) k(\d+) "
                  r"d(\d+) (\w+) (causal|full): (.*)$")
for n in names:
    try:
        results = json.load(open(os.path.join(out, n + ".json")))["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"({n}.json: {e})")
        continue
    nostats = n.endswith("-nostats")
    for r in results:
        k = r["key"]
        if k not in keys:
            keys.append(k)
        ok = r["status"] == "ok"
        # Default runs: a time counts only when verified; under nostats cudnn's LSE cannot be, so its time
        # counts when it ran (O's verdict is shown beside it); flash-sm90 must verify in every run.
        counted = ok and (r.get("verified") is not False or (nostats and r["kernel"] == "cudnn"))
        us[(n, k, r["kernel"])] = r["time_ms"]["median"] * 1e3 if counted else nan
        if r["kernel"] == "cudnn" and ok:
            e = r.get("errors", {}).get("O", {})
            try:
                o_ok[(n, k)] = "pass" if float(e["ref"]) <= float(e["bound"]) else "FAIL"
            except (KeyError, TypeError, ValueError):
                o_ok[(n, k)] = "?"
    try:
        for line in open(os.path.join(out, n + ".log")):
            m = note.search(line.strip())
            if m:
                w, b, h, kv, q, kk, d, t, c, what = m.groups()
                n_key = f"n{q}" if q == kk else f"q{q}-k{kk}"
                key = f"b{b}-h{h}-kv{kv}-{n_key}-d{d}-{t}-{c}-fwd"
                engine.setdefault((w, key), set()).add(re.sub(r" \(.*\)$", "", what))
    except OSError:
        pass
defaults = [n for n in names if n.endswith("-default")]
nostats = [n for n in names if n.endswith("-nostats")]
def gmean(xs):
    xs = [x for x in xs if x == x]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else nan
def cell(x, w=7, f=".1f"):
    return f"{x:>{w}{f}}" if x == x else f"{'-':>{w}}"
print("bf16 forward, 16k tokens, model dim 2048; median us per run (columns in run order: d = FB_CUDNN_FWD_PROBE=default,")
print("ns = nostats); d/ns = cudnn's default runs' geometric mean / nostats (> 1: the graph without Stats is faster);")
print("sm90 drift = flash-sm90's last run / first (the control); O = cudnn's O against its bound under nostats (its LSE")
print("is unwritten by construction); '-' = not run, failed or (default runs) not verified")
hdr = " ".join(f"{'cud ' + n.split('-')[0] + n.split('-')[1][0]:>7}" for n in names)
hdr_f = " ".join(f"{'fs90 ' + n.split('-')[0] + n.split('-')[1][0]:>7}" for n in names)
print(f'{"case":40} {hdr} {"d/ns":>6} {hdr_f} {"drift":>6} {"O ns":>5}')
ratios = {"causal": [], "full": []}
for k in keys:
    cud = [us.get((n, k, "cudnn"), nan) for n in names]
    fs = [us.get((n, k, "flash-sm90"), nan) for n in names]
    d = gmean([us.get((n, k, "cudnn"), nan) for n in defaults])
    s = us.get((nostats[0], k, "cudnn"), nan) if nostats else nan
    r = d / s if d == d and s == s else nan
    ratios["causal" if "-causal-" in k else "full"].append(r)
    drift = fs[-1] / fs[0] if len(fs) > 1 and fs[0] == fs[0] and fs[-1] == fs[-1] else nan
    o = o_ok.get((nostats[0], k), "-") if nostats else "-"
    print(f"{k:40} " + " ".join(cell(x) for x in cud) + f" {cell(r, 6, '.3f')} " + " ".join(cell(x) for x in fs)
          + f" {cell(drift, 6, '.3f')} {o:>5}")
print("geomean d/ns: " + ", ".join(f"{m} {gmean(x):.3f} ({len([y for y in x if y == y])} rows)" for m, x in ratios.items()))
print("cudnn engine configurations planned (from the runs' stderr; 'same' when the graph without Stats got the default's):")
for k in keys:
    a = sorted(engine.get(("default", k), set()))
    b = sorted(engine.get(("nostats", k), set()))
    a_s = " | ".join(a) or "?"
    b_s = "same" if a and a == b else (" | ".join(b) or "?")
    print(f"  {k:40} default: {a_s}")
    print(f"  {'':40} nostats: {b_s}")
PY
echo "--- steps (total $((SECONDS - t0)) s)"
printf '%s\n' "${summary[@]}"
echo "--- table again"
cat "$out/table.txt"
