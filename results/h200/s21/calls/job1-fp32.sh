# Session 21, call 1 (fp32; issue 15; <= 90 s on the H200), prepared in session 20 (branch fp32s20b): the fp16-pair
# backward at d = 128 non-causal, FB_SM90_FP32_BWD_PROBE=fp16pair128 (kernels/flash_sm90/flash_sm90_fp16pair_bwd_kernel.cuh,
# flash_sm90_fp16pair128_bwd_kernel; docs/perf-notes.md, flash-sm90 fp32 backward, "Session 20, prepared for session 21:
# fp16pair at d = 128"): the d = 64 default's split and GEMM forms at d = 128, one warpgroup of 64 keys a block, dV / dK
# as four m64n64 jobs a tile with fp32 totals in shared memory. Never run before this call.
# Steps: (1) the GPU tests '[sm90tf32]' under fp16pair128 (the runner-judged backward tests against fp64, incl. the new
# d = 128 non-causal case [sm90fp16pair128]: N = 320, 1000 x 777, 777 x 1000, one query, GQA / MQA, input scales 2^-20,
# 2 and 4; and the existing case's d = 128 non-causal shapes 257 and 300 x 1111) under a 30 s timeout: a timed-out run
# (rc 124, a hang) drops fp16pair128 from the timing, failed tests keep it timed and mark the table FAILED;
# (2) flashbench on configs/fp32-fp16pair128-s21.json's five d = 128 non-causal backward rows (16k tokens N = 1024 /
# 4096 / 8192 as configs/fp32-h200.json, and N = 2000 b8, N = 3000 GQA 16/4 b5: shapes no other config names), naive
# (exact FP32, issue 15's baseline and the fixed control: there is no in-binary fp32 peer) in every process so that
# every row is verified against fp64 by the FP32 rule: default, fp16pair128, default, fp16pair128, then a third pair
# while both fit (separate processes); (3) while >= 16 s are left, compute-sanitizer memcheck of one verify run under
# the word (N = 320, d = 128, non-causal, every pass); (4) while >= 12 s are left, ncu's gpu__time_duration of one
# fp16pair128 backward at N = 4k (9 launches: 4 stats, 4 split, the kernel; the pre-pass's share). Table last
# (OUTDIR/table.txt, summary.json): per row naive, the default's and fp16pair128's TFLOP/s, each fp16pair128 reading /
# the mean of the default readings around it, both / naive (same process), verification, and the pre-registered
# rule's verdict.
#   BUILD=<build dir with flashbench and tests/flashbench_gpu_tests> OUTDIR=<dir> bash results/h200/s21/calls/job1-fp32.sh
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
spec=configs/fp32-fp16pair128-s21.json
filter='^(b16-h16-kv16-n1024|b4-h16-kv16-n4096|b2-h16-kv16-n8192|b8-h16-kv16-n2000|b5-h16-kv4-n3000)-d128-fp32-full-bwd$'
budget=${BUDGET:-88}
t0=$SECONDS
left() { echo $((budget - (SECONDS - t0))); }
summary=()
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1

# (1) GPU tests under fp16pair128 (the default's own tests run in the lead's regular test step; without the word the
# new d = 128 case runs the 3xTF32 kernel).
s=$SECONDS
lim=30; [ "$(left)" -lt $lim ] && lim=$(left)
FB_SM90_FP32_BWD_PROBE=fp16pair128 timeout -k 2 "$lim" "$build/tests/flashbench_gpu_tests" '[sm90tf32]' >"$out/tests-fp16pair128.log" 2>&1
trc=$?
echo "tests-fp16pair128 rc=$trc" >"$out/tests-rc.txt"
summary+=("$(printf '%-18s rc=%-3s %3ss  %s' tests-fp16pair128 "$trc" "$((SECONDS - s))" "$(tail -n 1 "$out/tests-fp16pair128.log" | cut -c1-80)")")
echo "tests-fp16pair128 rc=$trc $((SECONDS - s))s (t=$((SECONDS - t0))s)"
dropped=0
[ $trc = 124 ] && dropped=1 && echo "tests timed out: fp16pair128 is not timed" >>"$out/tests-rc.txt"

# (2) Timing, interleaved, each process naive + flash-sm90 (verified), 20 s at most each.
runs=()
longest=12  # guess before the first reading (call B of session 20: five d = 64 rows of the same FLOPs in 5-6 s)
n=0
plan=(default fp16pair128 default fp16pair128 default fp16pair128)
for v in "${plan[@]}"; do
  n=$((n + 1))
  name=$n-$v
  if [ "$v" = fp16pair128 ] && [ $dropped = 1 ]; then summary+=("$(printf '%-18s dropped (tests timed out)' "$name")"); continue; fi
  # Readings 5 and 6 only as a pair, and only if both fit.
  need=$longest; [ $n -eq 5 ] && need=$((2 * longest))
  if [ $n -gt 4 ] && [ "$(left)" -lt $((need + 3)) ]; then
    summary+=("$(printf '%-18s skipped (t=%ss, runs take up to %ss)' "$name" "$((SECONDS - t0))" "$longest")"); continue
  fi
  lim=20; [ "$(left)" -lt $lim ] && lim=$(left)
  [ "$lim" -lt 3 ] && { summary+=("$(printf '%-18s skipped (t=%ss)' "$name" "$((SECONDS - t0))")"); continue; }
  s=$SECONDS
  if [ "$v" = fp16pair128 ]; then
    FB_SM90_FP32_BWD_PROBE=fp16pair128 timeout -k 2 "$lim" "$build/flashbench" run $spec --filter "$filter" \
      --kernels naive,flash-sm90 --no-ceilings -q -o "$out/$name.json" >"$out/$name.log" 2>&1
  else
    FB_SM90_FP32_BWD_PROBE= timeout -k 2 "$lim" "$build/flashbench" run $spec --filter "$filter" \
      --kernels naive,flash-sm90 --no-ceilings -q -o "$out/$name.json" >"$out/$name.log" 2>&1
  fi
  rc=$?
  d=$((SECONDS - s)); [ $d -gt $longest ] && longest=$d
  [ $n -eq 1 ] && longest=$d
  summary+=("$(printf '%-18s rc=%-3s %3ss  %s' "$name" "$rc" "$d" "$(tail -n 1 "$out/$name.log" | cut -c1-80)")")
  echo "$name rc=$rc ${d}s (t=$((SECONDS - t0))s)"
  [ -f "$out/$name.json" ] && runs+=("$name")
done

# (3) While >= 16 s are left: memcheck of one verify run under the word (the new kernel's bulk copies, stmatrix and
# bulk reductions; call B ran the same for fp16pair at d = 64).
if [ $dropped = 0 ] && [ "$(left)" -ge 16 ]; then
  s=$SECONDS
  FB_SM90_FP32_BWD_PROBE=fp16pair128 timeout -k 2 14 compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$build/flashbench" verify --seq 320 --batch 1 --heads 2 --dim 128 --dtype fp32 --causal no --pass all \
    >"$out/memcheck-fp16pair128.log" 2>&1
  rc=$?
  echo "memcheck rc=$rc" >"$out/memcheck-rc.txt"
  summary+=("$(printf '%-18s rc=%-3s %3ss  %s' memcheck "$rc" "$((SECONDS - s))" "$(grep -m1 'ERROR SUMMARY' "$out/memcheck-fp16pair128.log" | cut -c1-60)")")
  echo "memcheck rc=$rc $((SECONDS - s))s (t=$((SECONDS - t0))s)"
else
  summary+=("memcheck           skipped (t=$((SECONDS - t0))s)")
fi

# (4) While >= 12 s are left: ncu, one fp16pair128 backward at N = 4k (its 9 launches: 4 stats, 4 split, the kernel),
# gpu__time_duration each: the pre-pass's share of the time.
if [ $dropped = 0 ] && [ "$(left)" -ge 12 ]; then
  s=$SECONDS
  FB_SM90_FP32_BWD_PROBE=fp16pair128 timeout -k 2 10 ncu --csv --metrics gpu__time_duration.sum -k regex:fp16pair -c 9 \
    "$build/flashbench" run $spec --filter '^b4-h16-kv16-n4096-d128-fp32-full-bwd$' --kernels flash-sm90 --no-ceilings \
    -q --warmup 0 --reps 1 --warmup-time 0 >"$out/ncu-fp16pair128.log" 2>&1
  rc=$?
  summary+=("$(printf '%-18s rc=%-3s %3ss' ncu-fp16pair128 "$rc" "$((SECONDS - s))")")
  echo "ncu-fp16pair128 rc=$rc $((SECONDS - s))s (t=$((SECONDS - t0))s)"
else
  summary+=("ncu-fp16pair128    skipped (t=$((SECONDS - t0))s)")
fi

python3 - "$out" "${runs[@]}" <<'PY' | tee "$out/table.txt"
import json, math, os, sys
out, names = sys.argv[1], sys.argv[2:]
nan = float("nan")
tf, raw, bad, keys = {}, {}, [], []  # (run, key, kernel) -> TFLOP/s (nan unless ok and verified); raw: any status
for n in names:
    try:
        results = json.load(open(os.path.join(out, n + ".json")))["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"({n}.json: {e})")
        continue
    for r in results:
        k = r["key"]
        if k not in keys:
            keys.append(k)
        ok = r.get("status") == "ok" and r.get("verified") is True
        tf[(n, k, r["kernel"])] = r.get("tflops", nan) if ok else nan
        raw[(n, k, r["kernel"])] = r.get("tflops", nan) if r.get("tflops") is not None else nan
        if not ok:
            bad.append(f"{n}: {k} {r['kernel']} {r.get('status')} verified={r.get('verified')}")
def gmean(xs):
    xs = [x for x in xs if x == x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else nan
def mean(xs):
    xs = [x for x in xs if x == x]
    return sum(xs) / len(xs) if xs else nan
tag = lambda n: n.split("-", 1)[1]
dflt = [n for n in names if tag(n) == "default"]
pair = [n for n in names if tag(n) == "fp16pair128"]
def around(n, k):  # the default's TFLOP/s around reading n: mean of the nearest default runs before and after it
    i = names.index(n)
    b = [s for s in dflt if names.index(s) < i][-1:]
    a = [s for s in dflt if names.index(s) > i][:1]
    return mean([tf.get((s, k, "flash-sm90"), nan) for s in b + a])
trc = "none"
try:
    trc = open(os.path.join(out, "tests-rc.txt")).readline().split()[1]
except (OSError, IndexError):
    pass
tests_ok = trc == "rc=0"
try:
    lines = open(os.path.join(out, "tests-fp16pair128.log")).read().splitlines()
except OSError:
    lines = []
tail = [l for l in lines if "test cases" in l or "All tests passed" in l][-1:] or lines[-1:] or ["no log"]
print(f"GPU tests '[sm90tf32]' under fp16pair128: {'PASSED' if tests_ok else 'FAILED'} ({trc}); {' '.join(tail)}")
for l in lines:  # flash-sm90-tf32x1 is the 1xTF32 diagnostic: it must fail (the test checks that it does)
    if l.startswith("sm90-fp32-bwd") and "FAILED" in l and "tf32x1" not in l:
        print("  " + l[:400])
print("flash-sm90 fp32 backward, d = 128 non-causal: TFLOP/s (mean of the readings; every cell verified against fp64 by")
print("the FP32 rule, naive in the same process); p/d = each fp16pair128 reading / the mean of the default readings around")
print("it; p/naive = fp16pair128 / naive (same process, mean); d/naive likewise for the default")
print(f'{"case":40} {"naive":>6} {"dflt":>6} {"pair":>6} ' + " ".join(f"{'p/d ' + n.split('-')[0]:>8}" for n in pair) +
      f' {"p/d mean":>8} {"d/naive":>8} {"p/naive":>8}')
means, dn, pn, unver = {}, {}, {}, {}
def field(k, p):
    for part in k.split("-"):
        if part.startswith(p) and part[len(p):].isdigit():
            return int(part[len(p):])
    return 0
keys.sort(key=lambda k: (field(k, "n") not in (1024, 4096, 8192), field(k, "n")))
for k in keys:
    nv = mean([tf.get((n, k, "naive"), nan) for n in names])
    dv = mean([tf.get((n, k, "flash-sm90"), nan) for n in dflt])
    pv = mean([tf.get((n, k, "flash-sm90"), nan) for n in pair])
    if pv != pv:  # no verified reading: the unverified time, marked (a speed reading only, never a result)
        pv_raw = mean([raw.get((n, k, "flash-sm90"), nan) for n in pair])
        unver[k] = pv_raw
    xs = [tf.get((n, k, "flash-sm90"), nan) / around(n, k) for n in pair]
    means[k] = gmean(xs) if all(x == x for x in xs) else nan
    dn[k] = gmean([tf.get((n, k, "flash-sm90"), nan) / tf.get((n, k, "naive"), nan) for n in dflt])
    pn[k] = gmean([tf.get((n, k, "flash-sm90"), nan) / tf.get((n, k, "naive"), nan) for n in pair])
    cell = lambda x: f"{x:>7.3f}x" if x == x else f"{'-':>8}"
    print(f"{k.removesuffix('-bwd'):40} {nv:>6.1f} {dv:>6.1f} {pv:>6.1f} " + " ".join(cell(x) for x in xs) +
          f" {cell(means[k])} {cell(dn[k])} {cell(pn[k])}")
print("rows not ok or not verified: " + ("; ".join(bad) if bad else "none"))
for k, x in unver.items():
    print(f"  (fp16pair128 unverified on {k.removesuffix('-bwd')}: {x:.1f} TFLOP/s, a speed reading only)")
mrc = "not run"
try:
    mrc = open(os.path.join(out, "memcheck-rc.txt")).readline().split()[1]
except (OSError, IndexError):
    pass
mlog = ""
try:
    mlog = next((l for l in open(os.path.join(out, "memcheck-fp16pair128.log")) if "ERROR SUMMARY" in l), "").strip()
except OSError:
    pass
print(f"memcheck under fp16pair128 (verify N = 320 d = 128, every pass): {mrc} {mlog}")
print("rule (pre-registered, docs/perf-notes.md fp32 backward \"Session 20, prepared for session 21: fp16pair at d = 128\"):")
print("fp16pair128 becomes the d = 128 non-causal default if its p/d mean is >= 1.10x on EVERY row (each of >= 2 readings")
print("against the default runs around it), every row of every process verified (naive's and both settings'),")
print("'[sm90tf32]' passed under fp16pair128 and memcheck (when it ran) reported no error")
why = []
low = [k.removesuffix("-bwd") for k in keys if not means[k] >= 1.10]
if low:
    why.append("p/d mean < 1.10x (or unread) on: " + ", ".join(low))
if len(pair) < 2 or len(dflt) < 2:
    why.append(f"fewer than 2 readings each ({len(dflt)} default, {len(pair)} fp16pair128)")
if bad:
    why.append("rows not ok / not verified")
if not tests_ok:
    why.append("GPU tests under fp16pair128 FAILED")
if mrc not in ("rc=0", "not run"):
    why.append(f"memcheck {mrc}")
if not keys:
    why.append("no rows read")
print("  fp16pair128 at d = 128 non-causal: " + ("FLIPS the default" if not why else "does not flip (" + "; ".join(why) + ")"))
import csv
durs = {}
try:
    for r in csv.reader(open(os.path.join(out, "ncu-fp16pair128.log"))):
        if len(r) > 14 and r[0].strip('"').isdigit() and r[12].startswith("gpu__time_duration"):
            name = "stats" if "stats_kernel" in r[4] else "split" if "split_kernel" in r[4] else "kernel"
            unit = r[13].strip().lower()
            x = float(r[14].replace(",", ""))
            x = x / 1000 if unit == "ns" else x * 1000 if unit == "ms" else x  # -> us
            durs.setdefault(name, []).append(x)
except (OSError, ValueError):
    pass
if durs:
    tot = sum(sum(v) for v in durs.values())
    pre = sum(durs.get("stats", [])) + sum(durs.get("split", []))
    print("ncu, one fp16pair128 backward at N = 4k b4-h16 d = 128 (us): " + ", ".join(f"{k} {len(v)}x {sum(v):.1f}" for k, v in
          durs.items()) + f"; pre-pass {pre:.1f} = {pre / tot:.1%} of these launches (the shared LSE / D pre-pass not counted)")
else:
    print("ncu: not run or no CSV")
json.dump({"ncu_us": durs, "runs": names, "rows": {k: {"pair_over_default": means[k], "default_over_naive": dn[k],
                                       "pair_over_naive": pn[k]} for k in keys},
           "tests_ok": tests_ok, "memcheck": mrc, "bad": bad, "verdict": not why, "why_not": why},
          open(os.path.join(out, "summary.json"), "w"), indent=1)
PY
echo "--- steps (total $((SECONDS - t0)) s)"
printf '%s\n' "${summary[@]}"
echo "--- table again"
cat "$out/table.txt"
