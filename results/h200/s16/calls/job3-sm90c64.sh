# Session 16 round 3, sm90c64 (issue 13; <= 60 s on the H200): flash-sm90's forward at d = 64, causal, small N.
# Prepared in session 16, unmeasured (no device after its call B): for session 17's call A on a build of main.
# Two probes (FB_SM90_FWD_PROBE; d = 64 causal launches on the shipped variant, non-causal launches and other head
# dims run as shipped), for the warpgroups whose last K/V tile shows their 64 rows at most 64 of its 128 keys (the
# causal diagonal through the tile's first half: at seq_q == seq_k every warpgroup whose rows start on a multiple of
# 128, half of them):
#   `halfdiag` (kOptHalfDiag | kOptHalfSoftmax): that tile's S as m64n64, its softmax and mask on those 64 keys, its
#     P V over 4 k16 steps instead of 8 (where it is the warpgroup's only tile: its P V only);
#   `halfgemm` (kOptHalfDiag): the same GEMMs halved, the softmax on the whole tile (the mask clears the rest).
# Tests: '[sm90fwd]' under halfdiag (causal N = 512 / 1024 / 300 / 700 / 100 / 576 and seq_q != seq_k both ways, GQA),
# its first case ('[sm90fwd]~[tailsplit]') under halfgemm (last: dropped first when time runs short). Then flashbench
# processes default, halfdiag, halfgemm, nolazyres, halfdiag, halfgemm, default on configs/sm90c64-s16.json (12 rows:
# d = 64 bf16 causal N = 384 / 512 / 640 / 768 / 1000 / 1024 at ~16k tokens, fp16 causal 512, GQA 32/8 causal 1024,
# causal 2048 / 4096 (long controls), non-causal 512 / 1024 (the probes change nothing there: this call's noise)), each
# flash-sm90 run beside the in-binary cudnn, every row verified. A run other than the last starts only while it and
# the last still fit in the budget. `nolazyres` is the d = 64 kernel before sm90fwd's lazy rescale (its default since
# session 16's call A, when this job's build has it; otherwise the word is ignored: the default again): the probes run
# on that kernel (their dispatch adds kOptHalfDiag to the ustage variant, not to lazyres), so probe / nolazyres is the
# half tile's own effect and probe / default what a flip would give against the shipped forward.
# The table (OUTDIR/table.txt, last): per row default/cudnn of the first default run, drift (last default run's ratio
# / first's), each probe reading as (probe / cudnn) / (default / cudnn) with the default runs before and after
# averaged (geometric mean; the nolazyres run in the middle is not a default run), each probe's mean, nolazyres the
# same way, and geometric means per row class, against the default and against the nolazyres run. Any flash-sm90 row
# not verified is listed.
#   BUILD=<build dir> OUTDIR=<dir> bash results/h200/s16/calls/job3-sm90c64.sh
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rows='b42-h32-kv32-n384-d64-bf16-causal|b32-h32-kv32-n512-d64-bf16-causal|b25-h32-kv32-n640-d64-bf16-causal'
rows="$rows|b21-h32-kv32-n768-d64-bf16-causal|b16-h32-kv32-n1000-d64-bf16-causal|b16-h32-kv32-n1024-d64-bf16-causal"
rows="$rows|b32-h32-kv32-n512-d64-fp16-causal|b16-h32-kv8-n1024-d64-bf16-causal"
rows="$rows|b8-h32-kv32-n2048-d64-bf16-causal|b4-h32-kv32-n4096-d64-bf16-causal"
rows="$rows|b32-h32-kv32-n512-d64-bf16-full|b16-h32-kv32-n1024-d64-bf16-full"
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
FB_SM90_FWD_PROBE=halfdiag step tests-halfdiag 15 "$build/tests/flashbench_gpu_tests" '[sm90fwd]'
runs=()
n=0
longest=5  # the longest run so far but the first (s): a run other than the last starts only if it and the last fit
plan=(default halfdiag halfgemm nolazyres halfdiag halfgemm default)
for v in "${plan[@]}"; do
  n=$((n + 1))
  name=$n-$v
  if [ $n -lt ${#plan[@]} ] && [ $((SECONDS - t0 + 2 * longest)) -gt $budget ]; then
    summary+=("$(printf '%-17s skipped (t=%ss, runs take up to %ss)' "$name" "$((SECONDS - t0))" "$longest")")
    continue
  fi
  s=$SECONDS
  FB_SM90_FWD_PROBE=${v#default} step "$name" 15 "$build/flashbench" run configs/sm90c64-s16.json \
    --filter "$filter" --kernels flash-sm90,cudnn --no-ceilings -q -o "$out/$name.json"
  [ $n -gt 1 ] && [ $((SECONDS - s)) -gt "$longest" ] && longest=$((SECONDS - s))
  [ -f "$out/$name.json" ] && runs+=("$name")
done
FB_SM90_FWD_PROBE=halfgemm step tests-halfgemm 10 "$build/tests/flashbench_gpu_tests" '[sm90fwd]~[tailsplit]'
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
words = ("halfdiag", "halfgemm", "nolazyres")
probes = {w: [n for n in names if n.endswith("-" + w)] for w in words}
def around(n, k):  # default/cudnn around run n: the geometric mean of the nearest default runs before and after it
    i = names.index(n)
    before = [s for s in defaults if names.index(s) < i]
    after = [s for s in defaults if names.index(s) > i]
    return gmean([ratio.get((s, k), nan) for s in before[-1:] + after[:1]])
def cls(k):
    if "-full-" in k:
        return "non-causal control"
    n = int(k.split("-n")[1].split("-")[0])
    return "causal N <= 1024" if n <= 1024 else "causal N >= 2048"
def cell(x, w=7):
    return f"{x:>{w - 1}.3f}x" if x == x else f"{'-':>{w}}"
cols = [(w, r) for w in words for r in probes[w]]
short = {"halfdiag": "hd", "halfgemm": "hg", "nolazyres": "nolz"}
iso = {}  # (word, class) -> probe run's ratio / the nolazyres run's ratio (the half tile's own effect)
print("flash-sm90 forward d = 64, default vs halfdiag (hd), halfgemm (hg), nolazyres (nolz); dflt/cudnn TFLOP/s from")
print("the first default run; drift = last default run's ratio / first's; each reading (probe / cudnn) / (default /")
print("cudnn), same-process ratios, the default runs before and after averaged; mean = geometric mean of a probe's")
print("readings; '-' = not run, failed or not verified")
print(f'{"case":36} {"dflt":>5} {"cudnn":>5} {"d/cud":>6} {"drift":>6} '
      + " ".join(f"{short[w] + ' ' + r.split('-')[0]:>7}" for w, r in cols)
      + f' {"hd mean":>7} {"hg mean":>7}')
logs = {}
for k in keys:
    first = tf.get((defaults[0], k), {}) if defaults else {}
    r1 = ratio.get((defaults[0], k), nan) if defaults else nan
    r2 = ratio.get((defaults[-1], k), nan) if defaults else nan
    drift = r2 / r1 if r1 == r1 and r2 == r2 and len(defaults) > 1 else nan
    xs = {w: [] for w in words}
    for w, r in cols:
        b = around(r, k)
        xs[w].append(ratio.get((r, k), nan) / b if b == b else nan)
    for w in words:
        logs.setdefault((w, cls(k)), []).extend(xs[w])
        for r in probes[w] if w != "nolazyres" else []:
            for z in probes["nolazyres"]:
                iso.setdefault((w, cls(k)), []).append(ratio.get((r, k), nan) / ratio.get((z, k), nan))
    print(f"{k.removesuffix('-fwd'):36} {first.get('flash-sm90', nan):>5.0f} {first.get('cudnn', nan):>5.0f} "
          f"{r1:>5.3f}x {drift:>5.3f}x " + " ".join(cell(x) for w in words for x in xs[w])
          + f" {cell(gmean(xs['halfdiag']))} {cell(gmean(xs['halfgemm']))}")
print("geomeans over all readings, against the default runs around them:")
for (w, c), x in sorted(logs.items()):
    print(f"  {w:9} {c:18} {gmean(x):.3f}x ({len([y for y in x if y == y])} readings)")
print("geomeans against the nolazyres run (the half tile alone):")
for (w, c), x in sorted(iso.items()):
    print(f"  {w:9} {c:18} {gmean(x):.3f}x ({len([y for y in x if y == y])} readings)")
print("flash-sm90 rows not ok or not verified: " + ("; ".join(bad) if bad else "none"))
PY
echo "--- steps (total $((SECONDS - t0)) s)"
printf '%s\n' "${summary[@]}"
echo "--- table again"
cat "$out/table.txt"
