# Session 22, job 1 (fp32; issue 15; <= 100 s on the H200): the d = 128 non-causal fp32 backward's probes against
# the default (fp16pair128w2a) under their pre-registered rules (docs/perf-notes.md, flash-sm90 fp32 backward,
# "Session 22: ..."): fp16pair128w2m (w2a with its blocks in plane-major order; the lead), fp16pair128w2p (a
# persistent w2a; branch fp32s22p), fp16pair128w2r / fp16pair128w2pr (w2m / w2p with each block's query tiles rotated;
# the lead), fp16pair128w2f (w2a after one fused pre-pass; branch fp32s22f). WORDS=<list>
# times a subset (a word the build does not know is refused by flashbench: its runs fail and it is dropped).
# Steps: (1) the GPU tests '[sm90tf32]' under each word (25 s each; a timed-out run, a hang, drops the word); (2)
# flashbench on configs/fp32-fp16pair128-s21.json's five d = 128 non-causal backward rows (16k tokens N = 1024 / 4096 /
# 8192, N = 2000 b8, N = 3000 GQA 16/4 b5), naive (exact FP32, issue 15's baseline) in every process so that every row
# is verified against fp64 by the FP32 rule, one process per reading in the order default, the words, default, the
# words reversed, default; (3) while >= 16 s are left, compute-sanitizer memcheck of one verify run under each word
# (N = 320, d = 128, non-causal, every pass); (4) while >= 12 s are left, ncu's gpu__time_duration of one default and
# one fp16pair128w2f backward at N = 1k (every launch of the pass). Table last (OUTDIR/table.txt, summary.json).
#   BUILD=<build dir with flashbench and tests/flashbench_gpu_tests> OUTDIR=<dir> bash results/h200/s22/calls/job1-fp32.sh
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
read -r -a words <<<"${WORDS:-fp16pair128w2m fp16pair128w2r fp16pair128w2p fp16pair128w2pr fp16pair128w2f}"
spec=configs/fp32-fp16pair128-s21.json
filter='^(b16-h16-kv16-n1024|b4-h16-kv16-n4096|b2-h16-kv16-n8192|b8-h16-kv16-n2000|b5-h16-kv4-n3000)-d128-fp32-full-bwd$'
budget=${BUDGET:-100}
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
rev=(); for ((i = ${#words[@]} - 1; i >= 0; i--)); do rev+=("${words[$i]}"); done
for v in default "${words[@]}" default "${rev[@]}" default; do run_one $v; done

# (3) While >= 16 s are left: memcheck of one verify run under each word; (4) while >= 12 s are left, ncu of one
# backward at N = 1k (every launch of the pass: the pre-pass kernels and the main kernel) under the default and under
# fp16pair128w2f when it is a word here.
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
for w in "${words[@]}"; do memcheck $w; done
ncu_one() {  # setting
  local v=$1 probe=$1; [ "$v" = default ] && probe=
  if [ "$(left)" -ge 12 ]; then
    local s=$SECONDS
    FB_SM90_FP32_BWD_PROBE=$probe timeout -k 2 10 ncu --csv --metrics gpu__time_duration.sum -c 12 \
      "$build/flashbench" run $spec --filter '^b16-h16-kv16-n1024-d128-fp32-full-bwd$' --kernels flash-sm90 \
      --no-ceilings -q --warmup 0 --reps 1 --warmup-time 0 >"$out/ncu-$v.log" 2>&1
    local rc=$?
    summary+=("$(printf '%-20s rc=%-3s %3ss' "ncu-$v" "$rc" "$((SECONDS - s))")")
    echo "ncu-$v rc=$rc $((SECONDS - s))s (t=$((SECONDS - t0))s)"
  else
    summary+=("ncu-$v skipped (t=$((SECONDS - t0))s)")
  fi
}
ncu_one default
for w in "${words[@]}"; do [ "$w" = fp16pair128w2f ] && ncu_one $w; done

python3 - "$out" "${words[*]}" "${runs[@]}" <<'PY' | tee "$out/table.txt"
import csv, json, math, os, sys
out, words, names = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
nan = float("nan")
short = {"default": "dflt", "fp16pair128w2m": "w2m", "fp16pair128w2r": "w2r", "fp16pair128w2p": "w2p",
         "fp16pair128w2pr": "w2pr", "fp16pair128w2f": "w2f"}
for w in words:
    short.setdefault(w, w[-6:])
# The pre-registered rules (docs/perf-notes.md, flash-sm90 fp32 backward, "Session 22: <word>"): W/d (the word's
# readings over the default's around them, geomean) >= need on the named rows, >= floor on every other row.
rules = {"fp16pair128w2m": ({1024: 1.02}, 0.99), "fp16pair128w2r": ({1024: 1.02}, 0.99),
         "fp16pair128w2p": ({1024: 1.03, 2000: 1.03}, 0.99), "fp16pair128w2pr": ({1024: 1.03, 2000: 1.03}, 0.99),
         "fp16pair128w2f": ({1024: 1.01}, 0.995)}
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
settings = ["default"] + words
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
def field(k, p):
    for part in k.split("-"):
        if part.startswith(p) and part[len(p):].isdigit():
            return int(part[len(p):])
    return 0
for v in settings:  # ncu: every launch of one backward at N = 1k
    durs = []
    try:
        for r in csv.reader(open(os.path.join(out, f"ncu-{v}.log"))):
            if len(r) > 14 and r[0].strip('"').isdigit() and r[12].startswith("gpu__time_duration"):
                unit = r[13].strip().lower()
                x = float(r[14].replace(",", ""))
                durs.append((r[4].split("(")[0].split("<")[0][-40:], x / 1000 if unit == "ns" else x * 1000 if unit == "ms" else x))
    except (OSError, ValueError):
        continue
    if durs:
        tot = sum(x for _, x in durs)
        print(f"ncu, one {v} fp32 backward at N = 1k b16-h16 d = 128 ({len(durs)} launches, {tot:.0f} us): " +
              ", ".join(f"{n} {x:.1f}" for n, x in durs))
print("flash-sm90 fp32 backward, d = 128 non-causal: TFLOP/s (mean of the readings; every cell verified against fp64 by")
print("the FP32 rule, naive in the same process); W/d = each reading of word W / the mean of the default's (w2a's)")
print("readings around it, geomean; x/n = the setting / naive in the same process, geomean over its readings")
print(f'{"case":34} {"naive":>6} ' + " ".join(f"{short[v]:>6}" for v in settings) + " " +
      " ".join(f"{short[w] + '/d':>7}" for w in words) + " " + " ".join(f"{short[v] + '/n':>7}" for v in settings))
wd, xn, unver = {}, {}, {}
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
        if sv[w] != sv[w] and of[w]:
            unver[(w, k)] = mean([raw.get((n, k, "flash-sm90"), nan) for n in of[w]])
        xs = [tf.get((n, k, "flash-sm90"), nan) / around(n, k, "default") for n in of[w]]
        wd[(w, k)] = gmean(xs) if xs and all(x == x for x in xs) else nan
        line += f" {cell(wd[(w, k)])}"
    print(line + " " + " ".join(cell(xn[k][v]) for v in settings))
print("rows not ok or not verified: " + ("; ".join(b for _, b in bad) if bad else "none"))
for (w, k), x in unver.items():
    print(f"  ({w} unverified on {k.removesuffix('-bwd')}: {x:.1f} TFLOP/s, a speed reading only)")
print("rules (pre-registered, docs/perf-notes.md fp32 backward \"Session 22: <word>\"; for a word: every row of its and")
print("the default's processes verified, '[sm90tf32]' passed under it, its memcheck (when it ran) clean, >= 2 readings")
print("of it and of the default; W/d >= the named rows' need, >= the floor on every other row); issue 15's target:")
print("W / naive >= 2.00x on every row")
verdict = {}
for w in words:
    need, floor = rules.get(w, ({}, 1.0))
    why = []
    if len(of[w]) < 2 or len(of["default"]) < 2:
        why.append(f"fewer than 2 readings each ({len(of['default'])} default, {len(of[w])} {w})")
    if [b for n, b in bad if tag(n) in ("default", w)]:
        why.append("rows not ok / not verified")
    if not tests_ok[w]:
        why.append(f"GPU tests under {w} FAILED")
    if mrc[w] not in ("rc=0", "not-run"):
        why.append(f"memcheck {mrc[w]}")
    if not keys:
        why.append("no rows read")
    low = [f"{k.removesuffix('-bwd')} {wd[(w, k)]:.3f}x (< {need.get(field(k, 'n'), floor)})" for k in keys
           if not wd[(w, k)] >= need.get(field(k, "n"), floor)]
    if low:
        why.append("below its rule on: " + ", ".join(low))
    sh = [f"{k.removesuffix('-bwd')} {xn[k][w]:.3f}x" for k in keys if not xn[k][w] >= 2.0]
    g = gmean([wd[(w, k)] for k in keys])
    verdict[w] = {"ships": not why, "why_not": why, "geomean_over_default": g, "below_2x_naive": sh}
    print(f"  {w}: " + ("SHIPS" if not why else "does not ship (" + "; ".join(why) + ")") +
          f"; geomean W/d {g:.3f}x; " + ("every row >= 2x naive" if not sh else "< 2x naive on: " + ", ".join(sh)))
sh_d = [f"{k.removesuffix('-bwd')} {xn[k]['default']:.3f}x" for k in keys if not xn[k]["default"] >= 2.0]
print("  default (w2a): " + ("every row >= 2x naive" if not sh_d else "< 2x naive on: " + ", ".join(sh_d)))
json.dump({"runs": names, "rows": {k: {"over_naive": xn[k], **{f"{w}_over_default": wd[(w, k)] for w in words}}
                                   for k in keys},
           "tests_ok": tests_ok, "worst_err_over_bound": {w: (worst[w][0] if worst[w] else None) for w in words},
           "memcheck": mrc, "bad": [b for _, b in bad], "verdict": verdict,
           "ships": [w for w in words if verdict[w]["ships"]]},
          open(os.path.join(out, "summary.json"), "w"), indent=1)
PY
echo "--- steps (total $((SECONDS - t0)) s)"
printf '%s\n' "${summary[@]}"
echo "--- table again"
cat "$out/table.txt"
