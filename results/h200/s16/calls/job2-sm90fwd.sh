# Session 16 round 2, sm90fwd (issue 13; <= 60 s on the H200), two questions in one A/B on configs/sm90fwd-s16r2.json
# (13 rows at shapes no other config names, each flash-sm90 run beside the in-binary cudnn, every row verified):
# 1. Round 1's flip: the lazy rescale (kOptLazyRescale, d = 64's default since call A) against `nolazyres` (the kernel
#    shipped before it) on seven d = 64 rows: GQA 32/8 N = 1024 / 4096, MQA 16/1 N = 1000, fp16 N = 3000 (non-causal),
#    causal 16/16 N = 2048, 32/8 N = 16384 and N = 1000.
# 2. The probe `lazyres128` (kOptLazyRescale on d = 128's shipped variant: xtile, early, trec) against d = 128's
#    default on six rows: non-causal N = 512 / 1024 / 4096 / 16384, causal 1024 / 16384 (16 heads).
# The words act on disjoint head dims, so one process carries both: X = `nolazyres,lazyres128` (d = 64 rows: the old
# default; d = 128 rows: the probe). Steps: the GPU tests '[sm90fwd]' under the default and under X (the sharp-softmax
# case at d = 64 and 128 included), then flashbench default, X, default, X, default (a run other than the last starts
# only while it and the last still fit: the 2nd X reading is the first thing dropped if short).
# The table (OUTDIR/table.txt, last): per row default/cudnn of the first default run, drift (last default run's ratio /
# first's), each X reading turned into the question's ratio (d = 64: default / nolazyres; d = 128: lazyres128 /
# default; both as same-process ratios to cudnn, the default runs before and after X averaged), their geometric mean;
# geometric means per question and mask; any flash-sm90 row not verified is listed.
#   BUILD=<build dir> OUTDIR=<dir> bash results/h200/s16/calls/job2-sm90fwd.sh
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rows='b16-h32-kv8-n1024-d64-bf16-full|b4-h32-kv8-n4096-d64-bf16-full|b16-h16-kv1-n1000-d64-bf16-full'
rows="$rows|b5-h16-kv16-n3000-d64-fp16-full|b8-h16-kv16-n2048-d64-bf16-causal|b1-h32-kv8-n16384-d64-bf16-causal"
rows="$rows|b16-h32-kv8-n1000-d64-bf16-causal|b32-h16-kv16-n512-d128-bf16-full|b16-h16-kv16-n1024-d128-bf16-full"
rows="$rows|b4-h16-kv16-n4096-d128-bf16-full|b1-h16-kv16-n16384-d128-bf16-full|b16-h16-kv16-n1024-d128-bf16-causal"
rows="$rows|b1-h16-kv16-n16384-d128-bf16-causal"
filter="^($rows)-fwd\$"
xword=nolazyres,lazyres128
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
FB_SM90_FWD_PROBE= step tests-default 12 "$build/tests/flashbench_gpu_tests" '[sm90fwd]'
FB_SM90_FWD_PROBE=$xword step tests-x 12 "$build/tests/flashbench_gpu_tests" '[sm90fwd]'
runs=()
n=0
longest=5  # the longest run so far but the first (s): a run other than the last starts only if it and the last fit
plan=(default x default x default)
for v in "${plan[@]}"; do
  n=$((n + 1))
  name=$n-$v
  if [ $n -lt ${#plan[@]} ] && [ $((SECONDS - t0 + 2 * longest)) -gt $budget ]; then
    summary+=("$(printf '%-17s skipped (t=%ss, runs take up to %ss)' "$name" "$((SECONDS - t0))" "$longest")")
    continue
  fi
  s=$SECONDS
  word=
  [ "$v" = x ] && word=$xword
  FB_SM90_FWD_PROBE=$word step "$name" 14 "$build/flashbench" run configs/sm90fwd-s16r2.json \
    --filter "$filter" --kernels flash-sm90,cudnn --no-ceilings -q -o "$out/$name.json"
  [ $n -gt 1 ] && [ $((SECONDS - s)) -gt "$longest" ] && longest=$((SECONDS - s))
  [ -f "$out/$name.json" ] && runs+=("$name")
done
python3 - "$out" "${runs[@]}" <<'PY' | tee "$out/table.txt"
import json, math, os, sys
out, names = sys.argv[1], sys.argv[2:]
nan = float("nan")
ratio, tf, bad, keys = {}, {}, [], []  # (run, key) -> flash-sm90 / cudnn (nan unless both ok and verified); TFLOP/s
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
    for k, x in v.items():
        if k not in keys:
            keys.append(k)
        a, b = x.get("flash-sm90", nan), x.get("cudnn", nan)
        ratio[(n, k)] = a / b if a == a and b == b and b else nan
        tf[(n, k)] = x
def gmean(xs):
    xs = [x for x in xs if x == x]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else nan
defaults = [n for n in names if n.endswith("-default")]
xs_runs = [n for n in names if n.endswith("-x")]
def around(n, k):  # default/cudnn around run n: the geometric mean of the nearest default runs before and after it
    i = names.index(n)
    before = [s for s in defaults if names.index(s) < i]
    after = [s for s in defaults if names.index(s) > i]
    return gmean([ratio.get((s, k), nan) for s in before[-1:] + after[:1]])
def cell(x, w=7):
    return f"{x:>{w - 1}.3f}x" if x == x else f"{'-':>{w}}"
print("flash-sm90 forward; X = FB_SM90_FWD_PROBE=nolazyres,lazyres128; dflt/cudnn TFLOP/s from the first default run;")
print("drift = last default run's ratio / first's; per X reading: d64 rows default / nolazyres (the flip), d128 rows")
print("lazyres128 / default (the probe), same-process ratios to cudnn, the default runs before and after X averaged;")
print("mean = geometric mean of the readings; '-' = not run, failed or not verified")
print(f'{"case":38} {"dflt":>5} {"cudnn":>5} {"d/cud":>6} {"drift":>6} '
      + " ".join(f"{'X ' + r.split('-')[0]:>7}" for r in xs_runs) + f' {"mean":>7}')
logs = {}
for k in keys:
    first = tf.get((defaults[0], k), {}) if defaults else {}
    r1 = ratio.get((defaults[0], k), nan) if defaults else nan
    r2 = ratio.get((defaults[-1], k), nan) if defaults else nan
    drift = r2 / r1 if r1 == r1 and r2 == r2 and len(defaults) > 1 else nan
    d128 = "-d128-" in k
    xs = []
    for r in xs_runs:
        b, x = around(r, k), ratio.get((r, k), nan)
        xs.append((x / b if d128 else b / x) if b == b and x == x and x else nan)
    q = ("lazyres128 / default" if d128 else "default / nolazyres") + (" causal" if "-causal-" in k else " non-causal")
    logs.setdefault(q, []).extend(xs)
    print(f"{k.removesuffix('-fwd'):38} {first.get('flash-sm90', nan):>5.0f} {first.get('cudnn', nan):>5.0f} "
          f"{r1:>5.3f}x {drift:>5.3f}x " + " ".join(cell(x) for x in xs) + f" {cell(gmean(xs))}")
print("geomeans over all readings:")
for q, x in logs.items():
    print(f"  {q:32} {gmean(x):.3f}x ({len([y for y in x if y == y])} readings)")
print("flash-sm90 rows not ok or not verified: " + ("; ".join(bad) if bad else "none"))
PY
echo "--- steps (total $((SECONDS - t0)) s)"
printf '%s\n' "${summary[@]}"
echo "--- table again"
cat "$out/table.txt"
