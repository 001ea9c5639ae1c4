# Session 15, sm90fwd (issue 13; <= 65 s): flash-sm90's 16-bit forward as shipped beside two probes, each run beside
# the in-binary cudnn and verified, interleaved (ship, tailsplit, qahead, ship, tailsplit, qahead, ship):
#   tailsplit  (kOptTailSplit, d = 64 non-causal) the launch's last, partial round of 192-row work tiles split along
#              K/V into about as many parts as there are idle SMs, the parts' O and LSE merged by a second kernel.
#              Target: 8 query heads at N = 4k / 16k (704 / 688 tiles on 132 SMs: 5.3 / 5.2 rounds run as 6;
#              0.90 / 0.89x cudnn in session 14's final sweep, results/h200/s14/final/sum-gqa-d64-h200.txt).
#              32 heads at N = 1k / 4k split 36 / 44 tiles (2 / 3 parts); at 16k (112 of 132 in the last round) and
#              causal it runs the shipped kernel (controls).
#   qahead     (session 14's probe, re-measured) d = 128 non-causal N 512 / 1k / 2k / 4k, here on 32 query heads over
#              8 K/V heads (the GQA 32/8 row at 1k); it also runs on the d = 64 non-causal rows (level in session 14).
# Rows (configs/sm90fwd-s15.json, bf16, 16k tokens per batch): d = 64 non-causal h8-kv8 N 4k/16k, h32-kv8 N 1k/4k/16k;
# d = 64 causal h8-kv8 16k, h32-kv8 1k (controls); d = 128 non-causal h32-kv8 N 512/1k/2k/4k.
# First the GPU tests [sm90fwd] (three tail-split shapes added) and [sched] under tailsplit. The table (OUTDIR/table.txt:
# per row ship/cudnn of the first shipped run, drift, and each variant reading's (variant/cudnn) / (ship/cudnn), ship's
# the geometric mean of the shipped runs around it) is printed last. Time: the tests ~7 s, a run ~6 s (session 14's
# call B); a run other than the last starts only while it and the last shipped one still fit in 63 s.
#   BUILD=<build dir> OUTDIR=<dir> bash results/h200/s15/calls/job-sm90fwd.sh
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
filter='h8-kv8-n(4096|16384)-d64-bf16-full|h32-kv8-n(1024|4096|16384)-d64-bf16-full|h8-kv8-n16384-d64-bf16-causal|h32-kv8-n1024-d64-bf16-causal|h32-kv8-n(512|1024|2048|4096)-d128-bf16-full'
t0=$SECONDS
summary=()
step() {  # name, timeout, command... (the timeout cut to what is left of the job's 63 s)
  local name=$1 max=$2 s=$SECONDS left=$((63 - (SECONDS - t0)))
  shift 2
  if [ "$left" -lt 4 ]; then
    summary+=("$(printf '%-16s skipped (t=%ss)' "$name" "$((SECONDS - t0))")")
    return
  fi
  [ "$max" -gt "$left" ] && max=$left
  timeout "$max" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  summary+=("$(printf '%-16s rc=%-3s %3ss  %s' "$name" "$rc" "$((SECONDS - s))" "$(tail -n 1 "$out/$name.log" | cut -c1-70)")")
  echo "$name rc=$rc $((SECONDS - s))s (t=$((SECONDS - t0))s)"
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
FB_SM90_FWD_PROBE=tailsplit step tests-tailsplit 14 "$build/tests/flashbench_gpu_tests" '[sm90fwd],[sched]'
runs=()
n=0
longest=8  # the longest run so far (s): a run other than the last starts only if it and the last one fit
for v in ship tailsplit qahead ship tailsplit qahead ship; do
  n=$((n + 1))
  name=$n-$v
  if [ $n -lt 7 ] && [ $((SECONDS - t0 + 2 * longest)) -gt 63 ]; then
    summary+=("$(printf '%-16s skipped (t=%ss, runs take up to %ss)' "$name" "$((SECONDS - t0))" "$longest")")
    continue
  fi
  s=$SECONDS
  FB_SM90_FWD_PROBE=${v#ship} step "$name" 12 "$build/flashbench" run configs/sm90fwd-s15.json --filter "$filter" \
    --kernels flash-sm90,cudnn --no-ceilings -q -o "$out/$name.json"
  [ $((SECONDS - s)) -gt "$longest" ] && longest=$((SECONDS - s))
  [ -f "$out/$name.json" ] && runs+=("$name")
done
python3 - "$out" "${runs[@]}" <<'PY' | tee "$out/table.txt"
import json, math, os, sys
out, names = sys.argv[1], sys.argv[2:]
nan = float("nan")
ratio = {}  # (run, key) -> flash-sm90 / cudnn TFLOP/s (nan unless both ok and verified)
tf = {}
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
    for k, x in v.items():
        if k not in keys:
            keys.append(k)
        a, b = x.get("flash-sm90", nan), x.get("cudnn", nan)
        ratio[(n, k)] = a / b if a == a and b == b and b else nan
        tf[(n, k)] = x
ships = [n for n in names if n.endswith("-ship")]
variants = [n for n in names if not n.endswith("-ship")]
def base(n, k):
    # ship/cudnn around run n: the geometric mean of the nearest shipped runs before and after it
    i = names.index(n)
    before = [s for s in ships if names.index(s) < i]
    after = [s for s in ships if names.index(s) > i]
    xs = [ratio.get((s, k), nan) for s in (before[-1:] + after[:1])]
    xs = [x for x in xs if x == x]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else nan
print("bf16, 16k tokens; ship/cudnn and TFLOP/s from the first shipped run; drift = last shipped run's ratio / first's;")
print("variant columns: (variant / cudnn) / (ship / cudnn), same-process ratios, ship's the geometric mean of the shipped")
print("runs before and after; '-' = not run, failed or not verified. tailsplit splits only d64 non-causal rows whose")
print("last round is partial (h8 4k/16k, h32 1k/4k); qahead changes non-causal rows only")
print(f'{"case":34} {"ship":>5} {"cudnn":>5} {"s/cud":>6} {"drift":>6} ' + " ".join(f"{v:>12}" for v in variants))
logs = {v: [] for v in variants}
for k in keys:
    first = tf.get((ships[0], k), {}) if ships else {}
    r1 = ratio.get((ships[0], k), nan) if ships else nan
    r2 = ratio.get((ships[-1], k), nan) if ships else nan
    drift = r2 / r1 if r1 == r1 and r2 == r2 and len(ships) > 1 else nan
    cells = []
    for v in variants:
        b = base(v, k)
        x = ratio.get((v, k), nan) / b if b == b else nan
        cells.append(f"{x:>11.3f}x" if x == x else f"{'-':>12}")
        if x == x:
            logs[v].append(math.log(x))
    print(f"{k.removesuffix('-fwd'):34} {first.get('flash-sm90', nan):>5.0f} {first.get('cudnn', nan):>5.0f} "
          f"{r1:>5.3f}x {drift:>5.3f}x " + " ".join(cells))
gm = lambda l: math.exp(sum(l) / len(l)) if l else nan
print("geomean over all rows: " + ", ".join(f"{v} {gm(logs[v]):.3f}x" for v in variants))
PY
echo "--- steps (total $((SECONDS - t0)) s)"
printf '%s\n' "${summary[@]}"
echo "--- table again"
cat "$out/table.txt"
