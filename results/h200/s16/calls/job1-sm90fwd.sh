# Session 16 round 1, sm90fwd (issue 13; <= 60 s on the H200).
# 1. Round 1's host change (launch_fwd takes fwd_tail_split's plan from launch_fwd_ship instead of planning again;
#    the kernels' PTX unchanged): the GPU tests '[sm90fwd]' under the default, which include the tail split's
#    '[tailsplit]' pair (workspace == plan, in the run's tracked peak, the unsplit kernel without a workspace).
# 2. Two probes, d = 64 only (other head dims ignore the words), on d = 64's shipped variant with its tail split:
#    `lazyres` (kOptLazyRescale): a warp moves its rows' running max only when one rises more than 2^8 above it, so
#      most K/V tiles skip O's 32 FMUL a thread;
#    `lazyres2` (kOptLazyRescale | kOptLazyLane): the same, the warp's vote on its lanes' partial maxima before the
#      quad's shuffles, which (with alpha's two exponentials) then run only where the max moves.
#    Tests: '[sm90fwd]' under lazyres (with the new sharp-softmax case, Q and K x 3, where the rescale branch runs
#    too), '[lazyres],[tailsplit]' under lazyres2. Then flashbench processes default, lazyres, lazyres2, default,
#    lazyres, lazyres2, default on configs/sm90fwd-s16.json (11 rows: d = 64 bf16 non-causal N = 512 / 768 / 1024 /
#    1536 / 6144 / 33 heads x 12288, causal N = 512 / 768 / 1024, fp16 causal N = 512, and a d = 128 control the words
#    leave as it is), each flash-sm90 run beside the in-binary cudnn, every row verified. A run other than the last
#    starts only while it and the last still fit in the budget (the 2nd lazyres2 reading is the first thing dropped).
# The table (OUTDIR/table.txt, last): per row default/cudnn of the first default run, drift (last default run's ratio
# / first's), each probe reading as (probe / cudnn) / (default / cudnn) with the default runs before and after
# averaged (geometric mean), each probe's mean over its readings, and lazyres2's mean / lazyres's. Any flash-sm90 row
# not verified is listed.
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
FB_SM90_FWD_PROBE= step tests-default 12 "$build/tests/flashbench_gpu_tests" '[sm90fwd]'
FB_SM90_FWD_PROBE=lazyres step tests-lazyres 12 "$build/tests/flashbench_gpu_tests" '[sm90fwd]'
FB_SM90_FWD_PROBE=lazyres2 step tests-lazyres2 8 "$build/tests/flashbench_gpu_tests" '[lazyres],[tailsplit]'
runs=()
n=0
longest=4  # the longest run so far but the first (s): a run other than the last starts only if it and the last fit
plan=(default lazyres lazyres2 default lazyres lazyres2 default)
for v in "${plan[@]}"; do
  n=$((n + 1))
  name=$n-$v
  if [ $n -lt ${#plan[@]} ] && [ $((SECONDS - t0 + 2 * longest)) -gt $budget ]; then
    summary+=("$(printf '%-17s skipped (t=%ss, runs take up to %ss)' "$name" "$((SECONDS - t0))" "$longest")")
    continue
  fi
  s=$SECONDS
  FB_SM90_FWD_PROBE=${v#default} step "$name" 12 "$build/flashbench" run configs/sm90fwd-s16.json \
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
probes = {w: [n for n in names if n.endswith("-" + w)] for w in ("lazyres", "lazyres2")}
def around(n, k):  # default/cudnn around run n: the geometric mean of the nearest default runs before and after it
    i = names.index(n)
    before = [s for s in defaults if names.index(s) < i]
    after = [s for s in defaults if names.index(s) > i]
    return gmean([ratio.get((s, k), nan) for s in before[-1:] + after[:1]])
def cls(k):
    if "-d128-" in k:
        return "d128 control"
    return "d64 causal" if "-causal-" in k else "d64 non-causal"
def cell(x, w=7):
    return f"{x:>{w - 1}.3f}x" if x == x else f"{'-':>{w}}"
cols = [(w, r) for w in probes for r in probes[w]]
print("flash-sm90 forward, default vs lazyres (l1) and lazyres2 (l2); dflt/cudnn TFLOP/s from the first default run;")
print("drift = last default run's ratio / first's; each reading (probe / cudnn) / (default / cudnn), same-process")
print("ratios, the default runs before and after averaged; m1, m2 = geometric means of each probe's readings;")
print("l2/l1 = m2 / m1; '-' = not run, failed or not verified")
print(f'{"case":36} {"dflt":>5} {"cudnn":>5} {"d/cud":>6} {"drift":>6} '
      + " ".join(f"{('l1 ' if w == 'lazyres' else 'l2 ') + r.split('-')[0]:>7}" for w, r in cols)
      + f' {"m1":>7} {"m2":>7} {"l2/l1":>7}')
logs = {}
for k in keys:
    first = tf.get((defaults[0], k), {}) if defaults else {}
    r1 = ratio.get((defaults[0], k), nan) if defaults else nan
    r2 = ratio.get((defaults[-1], k), nan) if defaults else nan
    drift = r2 / r1 if r1 == r1 and r2 == r2 and len(defaults) > 1 else nan
    xs = {w: [] for w in probes}
    for w, r in cols:
        b = around(r, k)
        xs[w].append(ratio.get((r, k), nan) / b if b == b else nan)
    m1, m2 = gmean(xs["lazyres"]), gmean(xs["lazyres2"])
    for w in probes:
        logs.setdefault((w, cls(k)), []).extend(xs[w])
    print(f"{k.removesuffix('-fwd'):36} {first.get('flash-sm90', nan):>5.0f} {first.get('cudnn', nan):>5.0f} "
          f"{r1:>5.3f}x {drift:>5.3f}x " + " ".join(cell(x) for w in probes for x in xs[w])
          + f" {cell(m1)} {cell(m2)} {cell(m2 / m1 if m1 == m1 and m2 == m2 else nan)}")
print("geomeans over all readings:")
for (w, c), x in logs.items():
    print(f"  {w:8} {c:15} {gmean(x):.3f}x ({len([y for y in x if y == y])} readings)")
print("flash-sm90 rows not ok or not verified: " + ("; ".join(bad) if bad else "none"))
PY
echo "--- steps (total $((SECONDS - t0)) s)"
printf '%s\n' "${summary[@]}"
echo "--- table again"
cat "$out/table.txt"
