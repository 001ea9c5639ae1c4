# Session 16 round 1, sm90fwd (issue 13; <= 60 s on the H200).
# 1. Round 1's host change (launch_fwd takes fwd_tail_split's plan from launch_fwd_ship instead of planning again;
#    the kernels' PTX unchanged): the GPU tests '[sm90fwd]' under the default, which include the tail split's
#    '[tailsplit]' pair (workspace == plan, in the run's tracked peak, the unsplit kernel without a workspace).
# 2. The probe `lazyres` (kOptLazyRescale, d = 64: a warp rescales O only when one of its rows' max rises more than
#    2^8 above the kept max; most K/V tiles then skip O's 32 FMUL a thread): '[sm90fwd]' under it (with the new
#    sharp-softmax case, Q and K x 3, where the rescale branch runs too), then flashbench processes default, lazyres,
#    sharp default, sharp lazyres, default, lazyres, default on configs/sm90fwd-s16.json (11 rows: d = 64 bf16
#    non-causal N = 512 / 768 / 1024 / 1536 / 6144 / 33 heads x 12288, causal N = 512 / 768 / 1024, fp16 causal
#    N = 512, and a d = 128 control that the word leaves as it is) and configs/sm90fwd-s16-sharp.json (input_scale
#    3, d = 64 N = 6144 non-causal and causal): each flash-sm90 run beside the in-binary cudnn, every row verified.
#    A run other than the last starts only while it and the last still fit in the budget (the 2nd lazyres reading
#    is the first thing dropped if short).
# The table (OUTDIR/table.txt, last): per row default/cudnn of the first default run, drift (last default run's
# ratio / first's), each lazyres reading as (lazyres / cudnn) / (default / cudnn) with the default runs before and
# after averaged (geometric mean), their mean; the sharp rows as lazyres / default flash-sm90 TFLOP/s (adjacent runs;
# cudnn's own verification at input_scale 3 does not enter). Any flash-sm90 row not verified is listed.
#   BUILD=<build dir> OUTDIR=<dir> bash results/h200/s16/calls/job1-sm90fwd.sh
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rows='b32-h32-kv32-n512-d64-bf16-full|b16-h32-kv32-n1024-d64-bf16-full|b24-h32-kv32-n768-d64-bf16-full'
rows="$rows|b12-h32-kv32-n1536-d64-bf16-full|b3-h32-kv32-n6144-d64-bf16-full|b1-h33-kv33-n12288-d64-bf16-full"
rows="$rows|b32-h32-kv32-n512-d64-bf16-causal|b16-h32-kv32-n1024-d64-bf16-causal|b24-h32-kv32-n768-d64-bf16-causal"
rows="$rows|b32-h32-kv32-n512-d64-fp16-causal|b12-h32-kv32-n1536-d128-bf16-full"
filter="^($rows)-fwd\$"
budget=60
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
FB_SM90_FWD_PROBE= step tests-default 14 "$build/tests/flashbench_gpu_tests" '[sm90fwd]'
FB_SM90_FWD_PROBE=lazyres step tests-lazyres 14 "$build/tests/flashbench_gpu_tests" '[sm90fwd]'
runs=()
n=0
longest=4  # the longest run so far but the first (s): a run other than the last starts only if it and the last fit
plan=(default lazyres sharp-default sharp-lazyres default lazyres default)
for v in "${plan[@]}"; do
  n=$((n + 1))
  name=$n-$v
  if [ $n -lt ${#plan[@]} ] && [ $((SECONDS - t0 + 2 * longest)) -gt $budget ]; then
    summary+=("$(printf '%-17s skipped (t=%ss, runs take up to %ss)' "$name" "$((SECONDS - t0))" "$longest")")
    continue
  fi
  s=$SECONDS
  word=${v#sharp-}
  if [ "$v" = "$word" ]; then
    FB_SM90_FWD_PROBE=${word#default} step "$name" 12 "$build/flashbench" run configs/sm90fwd-s16.json \
      --filter "$filter" --kernels flash-sm90,cudnn --no-ceilings -q -o "$out/$name.json"
  else
    FB_SM90_FWD_PROBE=${word#default} step "$name" 8 "$build/flashbench" run configs/sm90fwd-s16-sharp.json \
      --kernels flash-sm90,cudnn --no-ceilings -q -o "$out/$name.json"
  fi
  [ $n -gt 1 ] && [ $((SECONDS - s)) -gt "$longest" ] && longest=$((SECONDS - s))
  [ -f "$out/$name.json" ] && runs+=("$name")
done
python3 - "$out" "${runs[@]}" <<'PY' | tee "$out/table.txt"
import json, math, os, sys
out, names = sys.argv[1], sys.argv[2:]
nan = float("nan")
ratio, tf, bad = {}, {}, []  # (run, key) -> flash-sm90 / cudnn (nan unless both ok and verified); TFLOP/s
keys = {"main": [], "sharp": []}
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
        if r["kernel"] == "flash-sm90" and not ok:
            bad.append(f"{n}: {r['key']} {r['status']} verified={r.get('verified')}")
    group = "sharp" if "sharp" in n else "main"
    for k, x in v.items():
        if k not in keys[group]:
            keys[group].append(k)
        a, b = x.get("flash-sm90", nan), x.get("cudnn", nan)
        ratio[(n, k)] = a / b if a == a and b == b and b else nan
        tf[(n, k)] = x
def gmean(xs):
    xs = [x for x in xs if x == x]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else nan
defaults = [n for n in names if n.endswith("-default") and "sharp" not in n]
lazies = [n for n in names if n.endswith("-lazyres") and "sharp" not in n]
def around(n, k):  # default/cudnn around run n: the geometric mean of the nearest default runs before and after it
    i = names.index(n)
    before = [s for s in defaults if names.index(s) < i]
    after = [s for s in defaults if names.index(s) > i]
    return gmean([ratio.get((s, k), nan) for s in before[-1:] + after[:1]])
def cls(k):
    if "-d128-" in k:
        return "d128 control"
    return "d64 causal" if "-causal-" in k else "d64 non-causal"
print("flash-sm90 forward, default vs lazyres; dflt/cudnn TFLOP/s from the first default run; drift = last default")
print("run's ratio / first's; lz: (lazyres / cudnn) / (default / cudnn), same-process ratios, the default runs before")
print("and after averaged; mean = geometric mean of the lz readings; '-' = not run, failed or not verified")
print(f'{"case":36} {"dflt":>5} {"cudnn":>5} {"d/cud":>6} {"drift":>6} '
      + " ".join(f"{'lz ' + r.split('-')[0]:>7}" for r in lazies) + f' {"mean":>7}')
logs = {}
for k in keys["main"]:
    first = tf.get((defaults[0], k), {}) if defaults else {}
    r1 = ratio.get((defaults[0], k), nan) if defaults else nan
    r2 = ratio.get((defaults[-1], k), nan) if defaults else nan
    drift = r2 / r1 if r1 == r1 and r2 == r2 and len(defaults) > 1 else nan
    cells, xs = [], []
    for r in lazies:
        b = around(r, k)
        x = ratio.get((r, k), nan) / b if b == b else nan
        xs.append(x)
        cells.append(f"{x:>6.3f}x" if x == x else f"{'-':>7}")
    m = gmean(xs)
    logs.setdefault(cls(k), []).extend(xs)
    print(f"{k.removesuffix('-fwd'):36} {first.get('flash-sm90', nan):>5.0f} {first.get('cudnn', nan):>5.0f} "
          f"{r1:>5.3f}x {drift:>5.3f}x " + " ".join(cells) + (f" {m:>6.3f}x" if m == m else f" {'-':>7}"))
sd = [n for n in names if n.endswith("sharp-default")]
sl = [n for n in names if n.endswith("sharp-lazyres")]
for k in keys["sharp"]:
    a = tf.get((sd[0], k), {}).get("flash-sm90", nan) if sd else nan
    b = tf.get((sl[0], k), {}).get("flash-sm90", nan) if sl else nan
    x = b / a if a == a and b == b and a else nan
    logs.setdefault("sharp x3", []).append(x)
    print(f"{k.removesuffix('-fwd') + ' x3':36} {a:>5.0f} {'':>5} {'':>6} {'':>6} "
          f"lazyres/default flash-sm90 TFLOP/s {x:.3f}x" if x == x else f"{k} x3: -")
print("geomeans over both readings: " + ", ".join(f"{c} {gmean(x):.3f}x ({len([y for y in x if y == y])})"
                                                for c, x in logs.items()))
print("flash-sm90 rows not ok or not verified: " + ("; ".join(bad) if bad else "none"))
PY
echo "--- steps (total $((SECONDS - t0)) s)"
printf '%s\n' "${summary[@]}"
echo "--- table again"
cat "$out/table.txt"
