# Session 21, call 2 (fp32; issue 15; <= 90 s on the H200), prepared in session 21 (branch fp32s21): the fp16-pair
# backward at d = 128 non-causal with two warpgroups a block, FB_SM90_FP32_BWD_PROBE=fp16pair128w2 and fp16pair128w2a
# (kernels/flash_sm90/flash_sm90_fp16pair_bwd_kernel.cuh, flash_sm90_fp16pair128w2_bwd_kernel; docs/perf-notes.md,
# flash-sm90 fp32 backward, "Session 21: fp16pair128w2"): fp16pair128's pre-pass and workspace, the block's 64 keys
# shared by two warpgroups by role (0: S^T, P^T, dV; 1: dP^T, dS^T, dK; dQ^T split by d's panels), K / V scaled per
# 64-key block by one split kernel that also finds the scales (no stats pass over K, V); w2a also issues the next tile's
# S^T / dP^T before this tile's totals, dQ staging and reduction. Never run before this call. Measured against BOTH the
# default (3xTF32 at this BASE; fp16pair128 if the build has call A's flip) and fp16pair128 (call A's word).
# Steps: (1) the GPU tests '[sm90tf32]' under each word (the runner-judged backward tests against fp64: the new case
# [sm90fp16pair128w2] -- GQA 3 with chunks straddling heads, 2 query tiles, MQA on 63 keys at input scale 3, 4097 queries
# on 130 keys at 2^-10 -- plus fp16pair128's case and the existing case's d = 128 non-causal shapes, which run the new
# kernel under the words) under a 25 s timeout each: a timed-out run (rc 124, a hang) drops that word from the timing;
# failed tests keep it timed and mark the table FAILED; (2) flashbench on configs/fp32-fp16pair128-s21.json's five
# d = 128 non-causal backward rows (16k tokens N = 1024 / 4096 / 8192 as configs/fp32-h200.json, N = 2000 b8 and
# N = 3000 GQA 16/4 b5), naive (exact FP32, issue 15's baseline) in every process so that every row is verified against
# fp64 by the FP32 rule, in separate processes: default, fp16pair128, w2, w2a, w2a, w2, fp16pair128, default;
# (3) while >= 16 s are left, compute-sanitizer memcheck of one verify run under w2a (N = 320, d = 128, non-causal,
# every pass); (4) while >= 12 s are left, ncu's gpu__time_duration of one w2a backward at N = 4k (6 launches: 2 stats,
# 2 split (Q, dO), the K / V split, the kernel); (5) while >= 16 s are left, memcheck under w2. Table last (OUTDIR/table.txt, summary.json): per row naive and the four
# settings' TFLOP/s, each new word's readings / the mean of the default's (and of fp16pair128's) readings around them,
# each / naive (same process), verification, and the pre-registered verdicts.
#   BUILD=<build dir with flashbench and tests/flashbench_gpu_tests> OUTDIR=<dir> bash results/h200/s21/calls/job2-fp32.sh
# P128=0 leaves fp16pair128 out (e.g. if call A found it failing or hanging): rule (1) then asks w/d only.
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
words=(fp16pair128w2 fp16pair128w2a)
p128=${P128:-1}
spec=configs/fp32-fp16pair128-s21.json
filter='^(b16-h16-kv16-n1024|b4-h16-kv16-n4096|b2-h16-kv16-n8192|b8-h16-kv16-n2000|b5-h16-kv4-n3000)-d128-fp32-full-bwd$'
budget=${BUDGET:-88}
t0=$SECONDS
left() { echo $((budget - (SECONDS - t0))); }
summary=()
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1

# (1) GPU tests under each word (the default's and fp16pair128's own runs are the lead's regular test step / call A).
declare -A dropped
for w in "${words[@]}"; do
  s=$SECONDS
  lim=25; [ "$(left)" -lt $lim ] && lim=$(left)
  FB_SM90_FP32_BWD_PROBE=$w timeout -k 2 "$lim" "$build/tests/flashbench_gpu_tests" '[sm90tf32]' >"$out/tests-$w.log" 2>&1
  trc=$?
  echo "tests-$w rc=$trc" >"$out/tests-rc-$w.txt"
  summary+=("$(printf '%-20s rc=%-3s %3ss  %s' "tests-$w" "$trc" "$((SECONDS - s))" "$(tail -n 1 "$out/tests-$w.log" | cut -c1-80)")")
  echo "tests-$w rc=$trc $((SECONDS - s))s (t=$((SECONDS - t0))s)"
  dropped[$w]=0
  [ $trc = 124 ] && dropped[$w]=1 && echo "tests timed out: $w is not timed" >>"$out/tests-rc-$w.txt"
done

# (2) Timing: one process per reading, naive + flash-sm90 (verified), 20 s at most each.
runs=()
longest=8  # guess before the first reading (session 20 call B: five rows of the same FLOPs at d = 64 in 5-6 s)
n=0
run_one() {  # setting
  local v=$1
  n=$((n + 1))
  local name=$n-$v
  if [ "${dropped[$v]:-0}" = 1 ]; then summary+=("$(printf '%-20s dropped (tests timed out)' "$name")"); return; fi
  if [ "$v" = fp16pair128 ] && [ "$p128" = 0 ]; then summary+=("$(printf '%-20s left out (P128=0)' "$name")"); return; fi
  local lim=20; [ "$(left)" -lt $lim ] && lim=$(left)
  [ "$lim" -lt 3 ] && { summary+=("$(printf '%-20s skipped (t=%ss)' "$name" "$((SECONDS - t0))")"); return; }
  local s=$SECONDS
  local probe=$v; [ "$v" = default ] && probe=
  FB_SM90_FP32_BWD_PROBE=$probe timeout -k 2 "$lim" "$build/flashbench" run $spec --filter "$filter" \
    --kernels naive,flash-sm90 --no-ceilings -q -o "$out/$name.json" >"$out/$name.log" 2>&1
  local rc=$?
  local d=$((SECONDS - s)); [ $d -gt $longest ] && longest=$d
  [ $n -eq 1 ] && longest=$d
  summary+=("$(printf '%-20s rc=%-3s %3ss  %s' "$name" "$rc" "$d" "$(tail -n 1 "$out/$name.log" | cut -c1-80)")")
  echo "$name rc=$rc ${d}s (t=$((SECONDS - t0))s)"
  [ -f "$out/$name.json" ] && runs+=("$name")
}
for v in default fp16pair128 "${words[@]}" fp16pair128w2a fp16pair128w2 fp16pair128 default; do run_one $v; done

# (3) While >= 16 s are left: memcheck of one verify run under w2a (the new kernel's bulk copies, stmatrix, the P
# hand-over words and the bulk reductions); (4) while >= 12 s are left, ncu, one w2a backward at N = 4k (6 launches:
# 2 stats, 2 split, the K / V split, the kernel); (5) while >= 16 s are left, memcheck under w2.
memcheck() {  # word
  local w=$1
  if [ "${dropped[$w]}" = 0 ] && [ "$(left)" -ge 16 ]; then
    local s=$SECONDS
    FB_SM90_FP32_BWD_PROBE=$w timeout -k 2 14 compute-sanitizer --tool memcheck --error-exitcode 3 \
      "$build/flashbench" verify --seq 320 --batch 1 --heads 2 --dim 128 --dtype fp32 --causal no --pass all \
      >"$out/memcheck-$w.log" 2>&1
    local rc=$?
    echo "memcheck rc=$rc" >"$out/memcheck-rc-$w.txt"
    summary+=("$(printf '%-20s rc=%-3s %3ss  %s' "memcheck-$w" "$rc" "$((SECONDS - s))" "$(grep -m1 'ERROR SUMMARY' "$out/memcheck-$w.log" | cut -c1-60)")")
    echo "memcheck-$w rc=$rc $((SECONDS - s))s (t=$((SECONDS - t0))s)"
  else
    summary+=("memcheck-$w skipped (t=$((SECONDS - t0))s)")
  fi
}
memcheck fp16pair128w2a
w=fp16pair128w2a
if [ "${dropped[$w]}" = 0 ] && [ "$(left)" -ge 12 ]; then
  s=$SECONDS
  FB_SM90_FP32_BWD_PROBE=$w timeout -k 2 10 ncu --csv --metrics gpu__time_duration.sum -k regex:fp16pair -c 6 \
    "$build/flashbench" run $spec --filter '^b4-h16-kv16-n4096-d128-fp32-full-bwd$' --kernels flash-sm90 --no-ceilings \
    -q --warmup 0 --reps 1 --warmup-time 0 >"$out/ncu-$w.log" 2>&1
  rc=$?
  summary+=("$(printf '%-20s rc=%-3s %3ss' "ncu-$w" "$rc" "$((SECONDS - s))")")
  echo "ncu-$w rc=$rc $((SECONDS - s))s (t=$((SECONDS - t0))s)"
else
  summary+=("ncu-$w skipped (t=$((SECONDS - t0))s)")
fi
memcheck fp16pair128w2

python3 - "$out" "$p128" "${words[*]}" "${runs[@]}" <<'PY' | tee "$out/table.txt"
import csv, json, math, os, sys
out, p128, words, names = sys.argv[1], sys.argv[2] != "0", sys.argv[3].split(), sys.argv[4:]
nan = float("nan")
short = {"default": "dflt", "fp16pair128": "p128", "fp16pair128w2": "w2", "fp16pair128w2a": "w2a"}
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
            bad.append((n, f"{n}: {k} {r['kernel']} {r.get('status')} verified={r.get('verified')}"))
def gmean(xs):
    xs = [x for x in xs if x == x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else nan
def mean(xs):
    xs = [x for x in xs if x == x]
    return sum(xs) / len(xs) if xs else nan
def readfirst(path, default=""):
    try:
        return open(path).readline()
    except OSError:
        return default
tag = lambda n: n.split("-", 1)[1]
settings = ["default", "fp16pair128"] + words
of = {v: [n for n in names if tag(n) == v] for v in settings}
def around(n, k, v):  # setting v's TFLOP/s around reading n: mean of its nearest readings before and after n
    i = names.index(n)
    b = [s for s in of[v] if names.index(s) < i][-1:]
    a = [s for s in of[v] if names.index(s) > i][:1]
    return mean([tf.get((s, k, "flash-sm90"), nan) for s in b + a])
tests_ok, worst, mrc = {}, {}, {}
for w in words:
    trc = (readfirst(os.path.join(out, f"tests-rc-{w}.txt"), "x none").split() + ["none"])[1]
    tests_ok[w] = trc == "rc=0"
    try:
        lines = open(os.path.join(out, f"tests-{w}.log")).read().splitlines()
    except OSError:
        lines = []
    tail = [l for l in lines if "test cases" in l or "All tests passed" in l][-1:] or lines[-1:] or ["no log"]
    print(f"GPU tests '[sm90tf32]' under {w}: {'PASSED' if tests_ok[w] else 'FAILED'} ({trc}); {' '.join(tail)}")
    ws = []  # the backward's worst err / bound per line of the tests' own printout (flash-sm90 under the word)
    for l in lines:  # flash-sm90-tf32x1 is the 1xTF32 diagnostic: it must fail (the test checks that it does)
        if l.startswith("sm90-fp32-bwd") and "FAILED" in l and "tf32x1" not in l:
            print("  " + l[:400])
        if l.startswith("sm90-fp32-bwd") and " flash-sm90 " in l and "{" in l:
            try:
                e = json.loads(l[l.index("{"):])
                ws.append(max((t["ref"] / t["bound"], name, l.split()[1]) for name, t in e.items()
                              if isinstance(t, dict) and name in ("dQ", "dK", "dV") and t.get("bound")))
            except (ValueError, KeyError, TypeError):
                pass
    worst[w] = max(ws) if ws else None
    if ws:
        print(f"  flash-sm90 under {w}: worst gradient err / bound in the tests {worst[w][0]:.3f} ({worst[w][1]}, "
              f"{worst[w][2]})")
    mrc[w] = (readfirst(os.path.join(out, f"memcheck-rc-{w}.txt"), "x not-run").split() + ["not-run"])[1]
    mlog = ""
    try:
        mlog = next((l for l in open(os.path.join(out, f"memcheck-{w}.log")) if "ERROR SUMMARY" in l), "").strip()
    except OSError:
        pass
    print(f"  memcheck under {w} (verify N = 320 d = 128, every pass): {mrc[w]} {mlog}")
print("flash-sm90 fp32 backward, d = 128 non-causal: TFLOP/s (mean of the readings; every cell verified against fp64 by")
print("the FP32 rule, naive in the same process); W/d, W/p = each reading of word W / the mean of the default's")
print("(fp16pair128's) readings around it, geomean; x/n = the setting / naive in the same process, geomean over its readings")
cols = [f"{short[v]:>6}" for v in settings]
rat = [f"{short[w] + '/' + r:>7}" for w in words for r in ("d", "p")]
print(f'{"case":34} {"naive":>6} ' + " ".join(cols) + " " + " ".join(rat) + " " +
      " ".join(f"{short[v] + '/n':>7}" for v in settings))
wd, wp, xn, unver = {}, {}, {}, {}
def field(k, p):
    for part in k.split("-"):
        if part.startswith(p) and part[len(p):].isdigit():
            return int(part[len(p):])
    return 0
keys.sort(key=lambda k: (field(k, "n") not in (1024, 4096, 8192), field(k, "n")))
cell = lambda x, w=7: f"{x:>{w - 1}.3f}x" if x == x else f"{'-':>{w}}"
tfc = lambda x: f"{x:>6.1f}" if x == x else f"{'-':>6}"
for k in keys:
    nv = mean([tf.get((n, k, "naive"), nan) for n in names])
    sv = {v: mean([tf.get((n, k, "flash-sm90"), nan) for n in of[v]]) for v in settings}
    xn[k] = {v: gmean([tf.get((n, k, "flash-sm90"), nan) / tf.get((n, k, "naive"), nan) for n in of[v]])
             for v in settings}
    line = f"{k.removesuffix('-bwd'):34} {tfc(nv)} " + " ".join(tfc(sv[v]) for v in settings)
    for w in words:
        if sv[w] != sv[w] and of[w]:  # no verified reading: the unverified time, marked (a speed reading only, never a result)
            unver[(w, k)] = mean([raw.get((n, k, "flash-sm90"), nan) for n in of[w]])
        def ratio(v):
            xs = [tf.get((n, k, "flash-sm90"), nan) / around(n, k, v) for n in of[w]]
            return gmean(xs) if xs and all(x == x for x in xs) else nan
        wd[(w, k)], wp[(w, k)] = ratio("default"), ratio("fp16pair128")
        line += f" {cell(wd[(w, k)])} {cell(wp[(w, k)])}"
    print(line + " " + " ".join(cell(xn[k][v]) for v in settings))
print("rows not ok or not verified: " + ("; ".join(b for _, b in bad) if bad else "none"))
for (w, k), x in unver.items():
    print(f"  ({w} unverified on {k.removesuffix('-bwd')}: {x:.1f} TFLOP/s, a speed reading only)")
durs = {}
try:
    for r in csv.reader(open(os.path.join(out, "ncu-fp16pair128w2a.log"))):
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
    print("ncu, one fp16pair128w2a backward at N = 4k b4-h16 d = 128 (us): " + ", ".join(f"{k} {len(v)}x {sum(v):.1f}"
          for k, v in durs.items()) + f"; pre-pass {pre:.1f} = {pre / tot:.1%} of these launches (the shared LSE / D "
          "pre-pass not counted)")
else:
    print("ncu: not run or no CSV")
main = [k for k in keys if field(k, "n") in (1024, 4096, 8192)]
print("rules (pre-registered, docs/perf-notes.md fp32 backward \"Session 21: fp16pair128w2\"; for a word: every row of")
print("every process verified, '[sm90tf32]' passed under it, its memcheck (when it ran) clean, >= 2 readings of it, of")
print("the default and of fp16pair128):")
print("  (1) a word qualifies for the d = 128 non-causal default if W/p >= 1.05x AND W/d >= 1.05x on EVERY row" +
      ("" if p128 else " (P128=0: fp16pair128 left out, W/d only)") + " (p: fp16pair128,")
print("      call A's winner; d: the build's default, 3xTF32 or fp16pair128); of two that qualify, the one with the")
print("      higher geomean W/p (W/d if P128=0) over the rows becomes the default")
print("  (2) issue 15's d = 128 non-causal target: W / naive >= 2.00x on the N = 1k, 4k and 8k rows")
verdict = {}
for w in words:
    common = []
    if len(of[w]) < 2 or len(of["default"]) < 2 or (p128 and len(of["fp16pair128"]) < 2):
        common.append(f"fewer than 2 readings each ({len(of['default'])} default, {len(of['fp16pair128'])} "
                      f"fp16pair128, {len(of[w])} {w})")
    mine = [b for n, b in bad if tag(n) in ("default", "fp16pair128", w)]  # its own, the default's, fp16pair128's runs
    if mine:
        common.append("rows not ok / not verified")
    if not tests_ok[w]:
        common.append(f"GPU tests under {w} FAILED")
    if mrc[w] not in ("rc=0", "not-run"):
        common.append(f"memcheck {mrc[w]}")
    if not keys:
        common.append("no rows read")
    why1 = list(common)
    low = [k.removesuffix("-bwd") for k in keys if not (wd[(w, k)] >= 1.05 and (wp[(w, k)] >= 1.05 or not p128))]
    if low:
        why1.append("W/d or W/p < 1.05x (or unread) on: " + ", ".join(low))
    why2 = list(common)
    sh = [f"{k.removesuffix('-bwd')} {xn[k][w]:.3f}x" for k in main if not xn[k][w] >= 2.0]
    if sh:
        why2.append("W/naive < 2.00x on: " + ", ".join(sh))
    if len(main) < 3:
        why2.append(f"{len(main)} of the 3 target rows read")
    g = gmean([(wp if p128 else wd)[(w, k)] for k in keys])
    verdict[w] = {"qualifies": not why1, "why_not_qualify": why1, "meets_target": not why2, "why_not_target": why2,
                  "geomean_over_ref": g}
qual = sorted((w for w in words if verdict[w]["qualifies"]), key=lambda w: -verdict[w]["geomean_over_ref"])
for w in words:
    v = verdict[w]
    print(f"  {w}: (1) " + ("qualifies" if v["qualifies"] else "does not qualify (" + "; ".join(v["why_not_qualify"]) +
          ")") + f"; geomean W/{'p' if p128 else 'd'} {v['geomean_over_ref']:.3f}x")
    print(f"  {w}: (2) " + ("MEETS the target" if v["meets_target"] else "does not meet it (" +
          "; ".join(v["why_not_target"]) + ")"))
print("  default at d = 128 non-causal: " + (f"{qual[0]} FLIPS the default" if qual else "unchanged (no word qualifies)"))
json.dump({"ncu_us": durs, "runs": names, "rows": {k: {"over_naive": xn[k], **{f"{w}_over_default": wd[(w, k)]
                                                                              for w in words},
                                                  **{f"{w}_over_fp16pair128": wp[(w, k)] for w in words}} for k in keys},
           "tests_ok": tests_ok, "worst_err_over_bound": {w: (worst[w][0] if worst[w] else None) for w in words},
           "memcheck": mrc, "bad": [b for _, b in bad], "verdict": verdict, "new_default": qual[0] if qual else None},
          open(os.path.join(out, "summary.json"), "w"), indent=1)
PY
echo "--- steps (total $((SECONDS - t0)) s)"
printf '%s\n' "${summary[@]}"
echo "--- table again"
cat "$out/table.txt"
