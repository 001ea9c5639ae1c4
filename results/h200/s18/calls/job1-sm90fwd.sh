# Session 18, sm90fwd (redirected after call A to the portable `flash` kernel's grid order; issue 13; <= 60 s on the
# H200): the probe `desc2` (FB_FLASH_BWD=desc2, flash_bwd_common.cuh) against the default, beside the in-binary cudnn.
# Why: call A's `pairq` showed that blocks which read the same tile at about the same time get their L2 reads merged by
# the L2 request coalescer (flash-sm90 forward: 0.7M -> 18M hardware-coalesced sectors, L2 -> LRC reads halved, the
# clock at the 692 W cap 1710 -> 1785 MHz). The portable forward's order already allows it (d = 128 non-causal: one
# plane's query tiles on consecutive blocks since session 9; d = 64 in that order measured level in session 13; causal
# in bands of 4 / 8 adjacent query tiles of a plane). The backward's grid is plane-major too (consecutive blocks = one
# plane's key tiles), but each block walks its query tiles from its own diagonal tile, wrapping (non-causal), or from
# its first visible one up (causal), so the blocks of a plane read different Q / dO tiles at any time: nothing to
# merge. desc2 runs the default's tiled-dQ kernels with kDescend (every block from the last query tile down, no
# rotation: FlashAttention-2's walk), so they read the same Q / dO / LSE / D tile together, and add into the same dQ
# rows together (the rotation's reason). Session 7's `desc` (kDescend on the kernels of then) was level.
# desc2 has no tail split (the default's at d = 128 non-causal: +2.2-2.7%) and no GQA head split; `notail` (the
# default without the tail split) is its baseline on the non-causal d = 128 rows.
# Steps: (1) `flashbench verify --pass bwd` under desc2, two processes side by side: d = 128 bf16 N = 1025 (4 heads,
# both masks) and d = 64 fp16 seq_q 700 / seq_k 1300 (both masks); a failure is printed in the table (FAILED) and the
# timings run all the same; (2) flashbench default, desc2, notail, default, desc2, default (a run other than the
# last starts only while it and the last fit beside the ncu step) on results/h200/s18/calls/job1-sm90fwd.json's 5
# rows (d = 128 bf16 non-causal N = 1k / 4k / 1536, causal 1k / 4k; 16k tokens), flash beside cudnn, every row
# verified (d = 64 only in the verify step: its non-causal desc2 kernel spills 12 B, the default's none); (3) ncu,
# one launch each of the main kernel, default and desc2 at d = 128 N = 1k non-causal: L2 read sectors of the SMs'
# loads, hardware-coalesced and L2 -> LRC read sectors, time, DRAM bytes.
# The table (OUTDIR/table.txt, last) prints the pre-registered rule's verdict (docs/perf-notes.md, flash backward,
# session 18).
#   BUILD=<build dir with flashbench> OUTDIR=<dir> bash results/h200/s18/calls/job1-sm90fwd.sh
# Ran in session 18's call B on fdff104 (results/h200/s18/callB/sm90fwd/). Since 857e11b desc2's walk is the default on
# d = 128 non-causal MHA passes, so on a later build the `default` runs here are desc2's there (`nodesc2`: the default
# this job measured against).
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
spec=results/h200/s18/calls/job1-sm90fwd.json
rows='b16-h16-kv16-n1024-d128-bf16-full|b4-h16-kv16-n4096-d128-bf16-full|b11-h16-kv16-n1536-d128-bf16-full'
rows="$rows|b16-h16-kv16-n1024-d128-bf16-causal|b4-h16-kv16-n4096-d128-bf16-causal"
filter="^($rows)-bwd\$"
one='^b16-h16-kv16-n1024-d128-bf16-full-bwd$'
budget=60
t0=$SECONDS
summary=()
env_of() {  # setting -> FB_FLASH_BWD
  case $1 in
    default) echo "" ;;
    *) echo "$1" ;;
  esac
}
step() {  # name, timeout, command... (the timeout cut to what is left of the job's budget)
  local name=$1 max=$2 s=$SECONDS left=$((budget - (SECONDS - t0)))
  shift 2
  if [ "$left" -lt 4 ]; then
    summary+=("$(printf '%-17s skipped (t=%ss)' "$name" "$((SECONDS - t0))")")
    return 1
  fi
  [ "$max" -gt "$left" ] && max=$left
  timeout "$max" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  summary+=("$(printf '%-17s rc=%-3s %3ss  %s' "$name" "$rc" "$((SECONDS - s))" \
    "$(tail -n 1 "$out/$name.log" | cut -c1-70)")")
  echo "$name rc=$rc $((SECONDS - s))s (t=$((SECONDS - t0))s)"
  return $rc
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
# (1) correctness under desc2 first, two verify processes side by side (correctness only: sharing the GPU costs only
# time), ncu's metric list beside them (no GPU).
s=$SECONDS
(FB_FLASH_BWD=desc2 timeout 14 "$build/flashbench" verify --seq 1025 --heads 4 --dim 128 --dtype bf16 --causal both \
  --pass bwd -q >"$out/verify-d128.log" 2>&1
 echo "verify-d128 rc=$?" >"$out/verify-rc-d128.txt") &
(FB_FLASH_BWD=desc2 timeout 14 "$build/flashbench" verify --seq-q 700 --seq-k 1300 --heads 4 --dim 64 --dtype fp16 \
  --causal both --pass bwd -q >"$out/verify-d64.log" 2>&1
 echo "verify-d64 rc=$?" >"$out/verify-rc-d64.txt") &
(timeout 8 ncu --query-metrics --chip gh100 >"$out/ncu-query.txt" 2>&1) &
wait
cat "$out/verify-rc-d128.txt" "$out/verify-rc-d64.txt" >"$out/verify-rc.txt" 2>/dev/null
summary+=("$(printf '%-17s %3ss  %s' "verify (desc2)" "$((SECONDS - s))" "$(tr '\n' ' ' <"$out/verify-rc.txt")")")
echo "verify: $(tr '\n' ' ' <"$out/verify-rc.txt") $((SECONDS - s))s (t=$((SECONDS - t0))s)"
# A timed-out verify may be a hang of the probe's kernels: then no further desc2 process.
dropped=""
grep -q "rc=124" "$out/verify-rc.txt" && dropped=desc2 && echo "verify timed out: desc2 not run further" >>"$out/verify-rc.txt"
# (2) the timed runs
runs=()
n=0
longest=8   # the longest run so far but the first (s); a run other than the last starts only if it and the last fit
reserve=9   # seconds kept for the two ncu launches
plan=(default desc2 notail default desc2 default)
for v in "${plan[@]}"; do
  n=$((n + 1))
  name=$n-$v
  [ "$v" = "$dropped" ] && { summary+=("$(printf '%-17s dropped (verify timed out)' "$name")"); continue; }
  if [ $n -lt ${#plan[@]} ] && [ $((SECONDS - t0 + 2 * longest + reserve)) -gt $budget ]; then
    summary+=("$(printf '%-17s skipped (t=%ss, runs take up to %ss)' "$name" "$((SECONDS - t0))" "$longest")")
    continue
  fi
  s=$SECONDS
  FB_FLASH_BWD=$(env_of "$v") step "$name" 16 "$build/flashbench" run $spec --filter "$filter" --kernels flash,cudnn \
    --no-ceilings -q -o "$out/$name.json"
  [ $n -gt 1 ] && [ $((SECONDS - s)) -gt "$longest" ] && longest=$((SECONDS - s))
  [ -f "$out/$name.json" ] && runs+=("$name")
done
# (3) ncu: one launch of the main kernel each, default and desc2; only the metric names this ncu knows.
want="lts__t_sectors_srcunit_tex_op_read.sum l1tex__m_xbar2l1tex_read_sectors.sum
lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum lrc__lts2lrc_sectors_op_read.sum
gpu__time_duration.sum dram__bytes_read.sum sm__cycles_elapsed.avg"
metrics=""
for m in $want; do b=${m%.*}; grep -q "^$b " "$out/ncu-query.txt" 2>/dev/null && metrics="$metrics${metrics:+,}$m"; done
[ -n "$metrics" ] || metrics=lts__t_sectors_srcunit_tex_op_read.sum,l1tex__m_xbar2l1tex_read_sectors.sum,gpu__time_duration.sum
for v in default desc2; do
  [ "$v" = "$dropped" ] && continue
  [ $((budget - (SECONDS - t0))) -lt 5 ] && { summary+=("ncu-$v skipped (t=$((SECONDS - t0))s)"); continue; }
  FB_FLASH_BWD=$(env_of $v) step ncu-$v 6 ncu --csv --metrics "$metrics" -k 'regex:bwd_main_tc' -c 1 \
    "$build/flashbench" run $spec --filter "$one" --kernels flash --no-ceilings -q --warmup 1 --reps 1 --warmup-time 0
done
python3 - "$out" "${runs[@]}" <<'PY' | tee "$out/table.txt"
import csv, json, math, os, sys
out, names = sys.argv[1], sys.argv[2:]
nan = float("nan")
ratio, tf, bad, keys = {}, {}, [], []  # (run, key) -> flash / cudnn time ratio as speed (nan unless ok and verified)
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
        if r["kernel"] == "flash" and not ok:
            bad.append(f"{n}: {r['key']} {r['status']} verified={r.get('verified')}")
    for k, x in v.items():
        if k not in keys:
            keys.append(k)
        a, b = x.get("flash", nan), x.get("cudnn", nan)
        ratio[(n, k)] = a / b if a == a and b == b and b else nan
        tf[(n, k)] = x
def gmean(xs):
    xs = [x for x in xs if x == x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else nan
tag = lambda n: n.split("-", 1)[1]
defaults = [n for n in names if tag(n) == "default"]
settings = [t for t in ("desc2", "notail") if any(tag(n) == t for n in names)]
def around(n, k):  # default/cudnn around run n: the geometric mean of the nearest default runs before and after it
    i = names.index(n)
    before = [s for s in defaults if names.index(s) < i]
    after = [s for s in defaults if names.index(s) > i]
    return gmean([ratio.get((s, k), nan) for s in before[-1:] + after[:1]])
def cls(k):
    if "-d64-" in k:
        return "d64 non-causal"
    return "d128 causal" if "-causal" in k else "d128 non-causal"
def cell(x, w=7):
    return f"{x:>{w - 1}.3f}x" if x == x else f"{'-':>{w}}"
vrc = {}
try:
    for line in open(os.path.join(out, "verify-rc.txt")):
        p = line.split()
        if len(p) == 2 and p[1].startswith("rc="):
            vrc[p[0]] = p[1] == "rc=0"
except OSError:
    pass
for t in ("verify-d128", "verify-d64"):
    try:
        tail = open(os.path.join(out, t + ".log")).read().strip().splitlines()[-1:]
    except OSError:
        tail = ["no log"]
    print(f"flashbench {t} --pass bwd under desc2: {'PASSED' if vrc.get(t) else 'FAILED'}; {' '.join(tail)[:90]}")
verified = all(vrc.get(t) for t in ("verify-d128", "verify-d64"))
print("flash backward: default vs desc2 (every block of a plane walks its query tiles from the last down, no rotation)")
print("and notail (the default without the tail split: desc2's baseline on d = 128 non-causal grids); dflt/cudnn TFLOP/s")
print("from the first default run; drift = last default run's ratio / first's; each reading (setting / cudnn) /")
print("(default / cudnn), the default runs before and after averaged; mean = geometric mean; d/n = desc2's mean over")
print("notail's; '-' = not run, failed or not verified")
hdr = []
for t in settings:
    hdr += [f"{t[:4]} {n.split('-')[0]}" for n in names if tag(n) == t] + [f"{t[:4]} mean"]
print(f'{"case":40} {"dflt":>5} {"cudnn":>5} {"d/cud":>6} {"drift":>6} ' + " ".join(f"{h:>9}" for h in hdr)
      + f' {"d/n":>7}')
logs, means = {}, {}
for k in keys:
    first = tf.get((defaults[0], k), {}) if defaults else {}
    r1 = ratio.get((defaults[0], k), nan) if defaults else nan
    r2 = ratio.get((defaults[-1], k), nan) if defaults else nan
    drift = r2 / r1 if r1 == r1 and r2 == r2 and len(defaults) > 1 else nan
    cells = []
    for t in settings:
        xs = []
        for r in [n for n in names if tag(n) == t]:
            b = around(r, k)
            xs.append(ratio.get((r, k), nan) / b if b == b else nan)
        means[(t, k)] = gmean(xs)
        logs.setdefault((t, cls(k)), []).extend(xs)
        cells += [cell(x, 9) for x in xs] + [cell(means[(t, k)], 9)]
    dn = means.get(("desc2", k), nan) / means.get(("notail", k), nan)
    logs.setdefault(("d/n", cls(k)), []).append(dn)
    print(f"{k.removesuffix('-bwd'):40} {first.get('flash', nan):>5.0f} {first.get('cudnn', nan):>5.0f} "
          f"{r1:>5.3f}x {drift:>5.3f}x " + " ".join(cells) + f" {cell(dn)}")
classes = ["d128 non-causal", "d128 causal", "d64 non-causal"]
print("geomeans over all readings (setting / default; d/n: desc2 / notail, per row):")
for t in settings + ["d/n"]:
    print(f"  {t:7} " + "  ".join(f"{c} {cell(gmean(logs.get((t, c), [])), 6)} "
                                  f"({len([y for y in logs.get((t, c), []) if y == y])})" for c in classes))
print("flash rows not ok or not verified: " + ("; ".join(bad) if bad else "none"))
# The pre-registered rule (docs/perf-notes.md, flash backward, session 18).
print("rule (pre-registered): desc2 becomes the causal default (d = 128; the walk only, no split involved) if its")
print("geomean over the d = 128 causal rows >= 1.010x, no causal row's mean < 0.990x, every row verified and both")
print("verify runs passed; the non-causal d = 128 default only if its geomean there >= 1.010x over the default (it")
print("drops the tail split) with no row < 0.990x. desc2 / notail >= 1.015x there but below the default: not shipped;")
print("the tail split's units walk kDescend's order next (a device change). d = 64: verified, not timed (its")
print("non-causal desc2 kernel spills 12 B)")
def verdict(c):
    g = gmean(logs.get(("desc2", c), []))
    rows = [k for k in keys if cls(k) == c]
    low = [k.removesuffix("-bwd") for k in rows if means.get(("desc2", k), nan) < 0.99]
    unread = [k.removesuffix("-bwd") for k in rows if means.get(("desc2", k), nan) != means.get(("desc2", k), nan)]
    why = []
    if not g >= 1.01:
        why.append(f"geomean {g:.3f}x < 1.010x")
    if low:
        why.append("rows < 0.990x: " + ", ".join(low))
    if unread:
        why.append("rows without a reading: " + ", ".join(unread))
    if bad:
        why.append("rows not ok / not verified")
    if not verified:
        why.append("a verify run failed")
    return "SHIPS" if not why else "does not ship (" + "; ".join(why) + ")"
print(f"  d128 causal:     {verdict('d128 causal')}")
nc = verdict("d128 non-causal")
dn = gmean(logs.get(("d/n", "d128 non-causal"), []))
if not nc.startswith("SHIPS") and dn == dn and dn >= 1.015:
    nc += f"; desc2 / notail {dn:.3f}x >= 1.015x: the walk itself gains, the tail split should take it next"
print(f"  d128 non-causal: {nc}")
print("\nncu, one launch of the main kernel each, d = 128 bf16 non-causal N = 1k (b16-h16); the flash-sm90 forward in")
print("call A: hardware-coalesced 0.7M -> 18M sectors with pairq. Prediction (perf-notes): default < 1M coalesced,")
print("desc2 a quarter to half of its Q / dO / LSE / D read sectors coalesced, L2 -> LRC reads 15-40% fewer")
vals = {}
tags = ["default", "desc2"]
for t in tags:
    p = os.path.join(out, f"ncu-{t}.log")
    if not os.path.exists(p):
        continue
    for r in csv.reader(open(p)):
        if len(r) > 14 and r[0].strip('"').isdigit():
            vals.setdefault(r[12], {})[t] = r[14]
            vals.setdefault("(grid, block)", {})[t] = f"{r[8]} {r[7]}"
def num(s):
    try:
        return float(str(s).replace(",", ""))
    except ValueError:
        return nan
print(f"{'metric':68s} " + " ".join(f"{t:>16s}" for t in tags) + f" {'desc2/dflt':>10s}")
for m, v in sorted(vals.items()):
    d = num(v.get("default", "nan"))
    q = num(v.get("desc2", "nan")) / d if d == d and d else nan
    print(f"{m:68s} " + " ".join(f"{v.get(t, '-'):>16s}" for t in tags) + f" {q:>10.3f}")
if not vals:
    print("(not run or no CSV)")
PY
echo "--- steps (total $((SECONDS - t0)) s)"
printf '%s\n' "${summary[@]}"
echo "--- table again"
cat "$out/table.txt"
