# Session 15 round 2, sm90fwd (issue 13; <= 50 s), two questions on d = 64 non-causal rows (configs/sm90fwd-s15r2.json,
# bf16, 8 / 16 / 32 query heads on 8 K/V heads, shapes no config named before), each run beside the in-binary cudnn and
# verified, interleaved default, notailsplit, fullfirst, default, notailsplit, fullfirst, default:
# 1. Round 1's flip: the tail split (the default since call A, parts of at least 8 K/V tiles) against `notailsplit`
#    (the unsplit kernel shipped before it). Plans on 132 SMs (192-row tiles, 128-key K/V tiles):
#      split    b4-h8 N = 4k (44 tiles x 3 parts of 10-11, call A's row), b1-h8 16k (28 x 4 of 32, call A's row),
#               b5-h8 12288 (52 x 2 of 48), b2-h16 8192 (56 x 2 of 32), b8-h32 2048 (44 x 2 of 8: the shortest
#               parts the limit allows)
#      unsplit  b5-h8 3072 (last round 112 of 132), b16-h32 1024 (2 parts of 4 in call A, 0.990 / 0.972x: now below
#               the limit), b32-h32 512 (4 K/V tiles): the same kernel either way, the call's spread
# 2. The probe `fullfirst` (kOptFullFirst): each plane's partial last query tile (128 rows at N = 512 / 2k / 8k, 64 at
#    1k / 4k / 16k) last in its plane group instead of first, so that the launch ends on its cheapest tiles; its
#    target the N = 512 / 1k rows (b32-h32 512, b16-h32 1k: 0.973x vs torch-cudnn, 0.946x vs cudnn in call A); b5-h8
#    3072 (whole tiles: the order changes, no tile's cost) its control. With the tail split where it splits.
# First the GPU tests: [sm90fwd] under the default, the tail split's two ([tailsplit]: seven d = 64 non-causal shapes
# with 2 to 8 parts, split and, given no workspace, unsplit) under fullfirst (the time left goes to its second
# reading; under notailsplit the two run as `FB_SM90_FWD_PROBE=notailsplit flashbench_gpu_tests '[tailsplit]'`).
# The table (OUTDIR/table.txt, last): per row the plan, default/cudnn of the first default run, drift (last default
# run's ratio / first's), each notailsplit run's reading as (default / cudnn) / (notailsplit / cudnn) and each
# fullfirst run's as (fullfirst / cudnn) / (default / cudnn), the default runs around it averaged (geometric mean),
# and the workspace the default's run held beyond notailsplit's (flash-sm90's tracked peak, MB). Time: the tests ~6 +
# 3 s, a flashbench process ~5 s (call A: 11 rows in 5-6 s, the first 9 s); a run other than the last starts only
# while it and the last one still fit in 50 s (the first run not counted as the longest: it pays the device's
# warm-up).
#   BUILD=<build dir> OUTDIR=<dir> bash results/h200/s15/calls/job2-sm90fwd.sh
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rows='b4-h8-kv8-n4096|b1-h8-kv8-n16384|b5-h8-kv8-n12288|b5-h8-kv8-n3072|b2-h16-kv8-n8192'
rows="$rows|b8-h32-kv8-n2048|b16-h32-kv8-n1024|b32-h32-kv8-n512"
filter="^($rows)-d64-bf16-full-fwd\$"
budget=50
t0=$SECONDS
summary=()
step() {  # name, timeout, command... (the timeout cut to what is left of the job's budget)
  local name=$1 max=$2 s=$SECONDS left=$((budget - (SECONDS - t0)))
  shift 2
  if [ "$left" -lt 4 ]; then
    summary+=("$(printf '%-17s skipped (t=%ss)' "$name" "$((SECONDS - t0))")")
    return
  fi
  [ "$max" -gt "$left" ] && max=$left
  timeout "$max" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  summary+=("$(printf '%-17s rc=%-3s %3ss  %s' "$name" "$rc" "$((SECONDS - s))" \
    "$(tail -n 1 "$out/$name.log" | cut -c1-70)")")
  echo "$name rc=$rc $((SECONDS - s))s (t=$((SECONDS - t0))s)"
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
FB_SM90_FWD_PROBE= step tests-default 12 "$build/tests/flashbench_gpu_tests" '[sm90fwd]'
FB_SM90_FWD_PROBE=fullfirst step tests-fullfirst 7 "$build/tests/flashbench_gpu_tests" '[tailsplit]'
runs=()
n=0
longest=4  # the longest run so far but the first (s): a run other than the last starts only if it and the last fit
for v in default notailsplit fullfirst default notailsplit fullfirst default; do
  n=$((n + 1))
  name=$n-$v
  if [ $n -lt 7 ] && [ $((SECONDS - t0 + 2 * longest)) -gt $budget ]; then
    summary+=("$(printf '%-17s skipped (t=%ss, runs take up to %ss)' "$name" "$((SECONDS - t0))" "$longest")")
    continue
  fi
  s=$SECONDS
  FB_SM90_FWD_PROBE=${v#default} step "$name" 12 "$build/flashbench" run configs/sm90fwd-s15r2.json \
    --filter "$filter" --kernels flash-sm90,cudnn --no-ceilings -q -o "$out/$name.json"
  [ $n -gt 1 ] && [ $((SECONDS - s)) -gt "$longest" ] && longest=$((SECONDS - s))
  [ -f "$out/$name.json" ] && runs+=("$name")
done
python3 - "$out" "${runs[@]}" <<'PY' | tee "$out/table.txt"
import json, math, os, sys
out, names = sys.argv[1], sys.argv[2:]
nan = float("nan")
ratio, tf, peak, shape = {}, {}, {}, {}  # (run, key) -> flash-sm90 / cudnn TFLOP/s (nan unless both ok, verified)
keys = []
for n in names:
    try:
        results = json.load(open(os.path.join(out, n + ".json")))["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"({n}.json: {e})")
        continue
    v = {}
    for r in results:
        ok = r["status"] == "ok" and r.get("verified", True) is not False
        v.setdefault(r["key"], {})[r["kernel"]] = r["tflops"] if ok else nan
        if r["kernel"] == "flash-sm90":
            peak[(n, r["key"])] = r.get("memory", {}).get("peak_bytes", nan)
            shape[r["key"]] = r["case"]
    for k, x in v.items():
        if k not in keys:
            keys.append(k)
        a, b = x.get("flash-sm90", nan), x.get("cudnn", nan)
        ratio[(n, k)] = a / b if a == a and b == b and b else nan
        tf[(n, k)] = x
defaults = [n for n in names if n.endswith("-default")]
offs = [n for n in names if n.endswith("-notailsplit")]
ffs = [n for n in names if n.endswith("-fullfirst")]
def plan(c, sms=132, rows=192, keys_=128, min_kv=8, max_units=160):  # flash_sm90_split.h's tail_split_plan
    n = c["batch"] * c["heads"] * -(-c["seq_q"] // rows)
    kv = -(-c["seq_k"] // keys_)
    b = min(n, sms)
    r = n % b
    if n <= b or r == 0:
        return "-"
    s = min(b // r, kv // min_kv, max_units // r)
    return f"{r}x{s} of {kv / s:.0f}" if s >= 2 else "-"
def gmean(xs):
    xs = [x for x in xs if x == x]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else nan
def around(n, k):  # default/cudnn around run n: the geometric mean of the nearest default runs before and after it
    i = names.index(n)
    before = [s for s in defaults if names.index(s) < i]
    after = [s for s in defaults if names.index(s) > i]
    return gmean([ratio.get((s, k), nan) for s in before[-1:] + after[:1]])
print("bf16 d = 64 non-causal; default/cudnn and TFLOP/s from the first default run; drift = last default run's")
print("ratio / first's; d/off: (default / cudnn) / (notailsplit / cudnn), ff/d: (fullfirst / cudnn) / (default /")
print("cudnn), same-process ratios, the default runs before and after averaged; plan on 132 SMs: tiles in the last")
print("round x parts of K/V tiles ('-': unsplit); ws = flash-sm90's tracked peak under the default minus under")
print("notailsplit (MB); '-' = not run, failed or not verified")
cols = [("d/off", o) for o in offs] + [("ff/d", f) for f in ffs]
print(f'{"case":19} {"plan":>10} {"dflt":>5} {"cudnn":>5} {"d/cud":>6} {"drift":>6} '
      + " ".join(f"{h + ' ' + r.split('-')[0]:>8}" for h, r in cols) + f' {"ws MB":>6}')
logs = {"split": [], "unsplit": [], "ff short": [], "ff other": []}
for k in keys:
    first = tf.get((defaults[0], k), {}) if defaults else {}
    r1 = ratio.get((defaults[0], k), nan) if defaults else nan
    r2 = ratio.get((defaults[-1], k), nan) if defaults else nan
    drift = r2 / r1 if r1 == r1 and r2 == r2 and len(defaults) > 1 else nan
    c = shape.get(k)
    p = plan(c) if c else "?"
    cells = []
    for h, r in cols:
        b = around(r, k)
        x = ratio.get((r, k), nan)
        x = (b / x if h == "d/off" else x / b) if b == b else nan
        cells.append(f"{x:>7.3f}x" if x == x else f"{'-':>8}")
        if h == "d/off":
            logs["unsplit" if p == "-" else "split"].append(x)
        else:
            logs["ff short" if c and c["seq_q"] <= 1024 else "ff other"].append(x)
    ws = nan
    if defaults and offs:
        ws = (peak.get((defaults[0], k), nan) - peak.get((offs[0], k), nan)) / 1e6
    print(f"{k.removesuffix('-d64-bf16-full-fwd').replace('-kv8', ''):19} {p:>10} "
          f"{first.get('flash-sm90', nan):>5.0f} {first.get('cudnn', nan):>5.0f} {r1:>5.3f}x {drift:>5.3f}x "
          + " ".join(cells) + f" {ws:>6.2f}")
print("geomeans: " + ", ".join(f"{name} {gmean(x):.3f}x ({len([y for y in x if y == y])})" for name, x in
                               [("default/notailsplit split rows", logs["split"]),
                                ("unsplit rows", logs["unsplit"]),
                                ("fullfirst/default N <= 1k", logs["ff short"]),
                                ("other rows", logs["ff other"])]))
PY
echo "--- steps (total $((SECONDS - t0)) s)"
printf '%s\n' "${summary[@]}"
echo "--- table again"
cat "$out/table.txt"
