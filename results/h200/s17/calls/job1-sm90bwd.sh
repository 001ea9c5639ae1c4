#!/usr/bin/env bash
# Session 17, sm90bwd (issue 13; branch sm90bwds17; <= 60 s on the H200): the probe FB_SM90_BWD128=mcast, the
# non-causal d = 128 80-query backward (the kernel of the N = 1k / 2k / 4k rows; N = 512 and 1536 run the 64-query
# kernel, the default under the word) in 2-block clusters: the two blocks of a cluster take key tiles 2j and 2j + 1 of
# one K/V plane and share each step's Q, dO, LSE and D by TMA multicast (each rank loads one 64-column chunk of Q and
# dO into both blocks), so each Q / dO row is read from L2 once per pair instead of once per key tile. The model
# (docs/perf-notes.md, flash-sm90 backward, "Session 17"): -17.0M of the main kernel's 76.6M L2 sectors at N = 1k
# (-22%), the SMs still receive every row; worth at most +0.6% at the power cap by call A's own clock table. It is
# the direct experiment on the lead's hypothesis that our L2 read traffic costs clock at the cap.
# Steps (each limit cut to what is left of the 60 s budget; a step that does not fit is skipped, the table says so):
#   1. GPU tests '[bwd128]' under mcast and FB_SM90_BWD_SPLIT=1 (every d = 128 backward test, GQA unsplit; the
#      non-causal pair shapes added for it: odd key tiles, seq_q != seq_k both ways, N = 1 / 100 / 300 / 1000 / 1100,
#      GQA 4:1). If they fail, mcast is still timed (verified) and the table says FAILED; if they time out, it is not.
#   2. Five runs, interleaved, separate processes: default + in-binary cudnn (verified), mcast (verified), default,
#      mcast (verified), default, on d = 128 bf16 non-causal N = 512 / 1k / 2k / 4k (16k tokens, 16 heads), fp16 1k,
#      GQA 32 / 8 heads 1k, shapes no config names (b8 x 16 heads N = 1536, b4 x 24 heads N = 3000), and causal 1k
#      (the word changes nothing there: a control, as N = 512 and 1536).
#   3. ncu, one launch of the main kernel each, default and mcast at N = 1k: L2 sectors by operation and source, what
#      the SMs receive, the L2 request coalescer's programmatic / hardware coalescing (if this ncu knows the
#      metrics), LaunchStats (cluster size).
#   4. SM clock and board power while the N = 1k backward runs alone ~2 s (nvidia-smi every 50 ms): default, mcast.
#   5. If time is left, ncu of FB_SM90_BWD128=pairs (the same pairs of key tiles as plain blocks, no cluster: does
#      the hardware coalesce the pair's identical requests on its own?).
# Table last in OUTDIR/table.txt; runs' JSON in OUTDIR/runs/.
#   BUILD=<build dir with flashbench and tests/flashbench_gpu_tests> OUTDIR=<dir> \
#     bash results/h200/s17/calls/job1-sm90bwd.sh
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out/runs"
out=$(cd "$out" && pwd)
fb="$build/flashbench"
tests="$build/tests/flashbench_gpu_tests"
budget=60
t0=$SECONDS
summary=()
step_rc=0
step() {  # name, limit (s), command... (the limit cut to what is left of the budget)
  local name=$1 max=$2 s=$SECONDS left=$((budget - (SECONDS - t0)))
  shift 2
  if [ "$left" -lt 4 ]; then
    summary+=("$(printf '%-20s skipped (t=%ss)' "$name" "$((SECONDS - t0))")")
    step_rc=-1
    return
  fi
  [ "$max" -gt "$left" ] && max=$left
  echo "$name start $(date +%s.%N)" >>"$out/windows.txt"
  timeout -k 2 "$max" "$@" >"$out/$name.log" 2>&1
  step_rc=$?
  echo "$name end $(date +%s.%N) rc=$step_rc" >>"$out/windows.txt"
  summary+=("$(printf '%-20s rc=%-3s %3ss  %s' "$name" "$step_rc" "$((SECONDS - s))" \
    "$(grep -E 'test cases|passed|failed' "$out/$name.log" | tail -n 1 | cut -c1-60)")")
  echo "$name rc=$step_rc $((SECONDS - s))s (t=$((SECONDS - t0))s)" >&2
}
python3 - "$out" <<'PY'
import json, sys
common = {"head_dim": [128], "pass": ["bwd"], "warmup": 3, "reps": 10, "seed": 42,
          "kernels": ["flash-sm90", "cudnn"]}
mha = dict(common, name="sm90bwd-s17-mha", description="mcast rows (job1-sm90bwd.sh)", batch=[4, 8, 16, 32],
           heads=[16, 24], seq=[512, 1024, 1536, 2048, 3000, 4096], dtype=["bf16", "fp16"], causal=[False, True])
gqa = dict(common, name="sm90bwd-s17-gqa", description="mcast GQA row (job1-sm90bwd.sh)", batch=[16], heads=[32],
           kv_heads=[8], seq=[1024], dtype=["bf16"], causal=[False])
for name, spec in (("mha", mha), ("gqa", gqa)):
    for verify in (True, False):
        json.dump(dict(spec, verify=verify), open(f"{sys.argv[1]}/spec-{name}{'' if verify else '-nv'}.json", "w"),
                  indent=1)
PY
rows='b32-h16-kv16-n512-d128-bf16-full|b16-h16-kv16-n1024-d128-bf16-full|b8-h16-kv16-n2048-d128-bf16-full'
rows+='|b4-h16-kv16-n4096-d128-bf16-full|b16-h16-kv16-n1024-d128-fp16-full|b8-h16-kv16-n1536-d128-bf16-full'
rows+='|b4-h24-kv24-n3000-d128-bf16-full|b16-h16-kv16-n1024-d128-bf16-causal'
mha_filter="^($rows)-bwd\$"
gqa_filter='^b16-h32-kv8-n1024-d128-bf16-full-bwd$'
: >"$out/windows.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv,nounits -lms 50 >"$out/smi.csv" 2>&1 &
smi=$!

# FB_SM90_BWD_SPLIT=1: no GQA head split, so that the GQA test shapes run the mcast kernel (the split kernels are the
# default's under the word). Failed tests: mcast is still timed (every run verifies) and the table says FAILED; tests
# that ran out of time (a hang): mcast is not run again.
FB_SM90_BWD128=mcast FB_SM90_BWD_SPLIT=1 step tests-mcast 14 "$tests" '[bwd128]'
tests_rc=$step_rc
echo "$tests_rc" >"$out/tests-mcast.rc"
probe_ok=$([ "$tests_rc" -eq 124 ] || [ "$tests_rc" -eq 137 ] && echo 0 || echo 1)
[ "$tests_rc" -eq 0 ] || echo "mcast: tests FAILED (rc=$tests_rc)$([ "$probe_ok" = 1 ] || echo ': not timed')" >&2

run() {  # name, word ("" = the default), verify (1/0), kernels
  local sfx=$([ "$3" = 1 ] && echo "" || echo "-nv")
  FB_SM90_BWD128=$2 step "$1" 12 "$fb" run "$out/spec-mha$sfx.json" --kernels "$4" --filter "$mha_filter" \
    --no-ceilings -q -o "$out/runs/$1.json"
  FB_SM90_BWD128=$2 step "$1-gqa" 5 "$fb" run "$out/spec-gqa$sfx.json" --kernels "$4" --filter "$gqa_filter" \
    --no-ceilings -q -o "$out/runs/$1-gqa.json"
}
run default-1 "" 1 flash-sm90,cudnn
[ "$probe_ok" = 1 ] && run mcast-1 mcast 1 flash-sm90
run default-2 "" 0 flash-sm90
[ "$probe_ok" = 1 ] && run mcast-2 mcast 1 flash-sm90
run default-3 "" 0 flash-sm90

# ncu: the L2 request coalescer's metrics only where this ncu knows them (one unknown name would void the run)
metrics="lts__t_sectors.sum,lts__t_requests.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum"
metrics+=",lts__t_sectors_op_atom.sum,lts__t_sectors_op_red.sum,lts__t_sectors_srcunit_tex.sum"
metrics+=",lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_srcunit_tex_op_read.sum"
metrics+=",lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum"
metrics+=",sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,l1tex__m_xbar2l1tex_read_sectors.sum"
timeout 6 ncu --query-metrics --chip gh100 >"$out/ncu-query.txt" 2>&1
for m in lrc__lts2lrc_sectors_op_read.sum lrc__xbar2gpc_sectors_op_read.sum \
  lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum \
  lrc__request_sectors_op_read_coalescing_achieved_type_programmatic.sum; do
  grep -q "^${m%.sum} " "$out/ncu-query.txt" && metrics+=",$m"
done
echo "metrics: $metrics" >"$out/ncu-metrics.txt"
ncu_dead=0
prof() {  # name, word
  if [ "$ncu_dead" = 1 ]; then summary+=("$(printf '%-20s skipped (an ncu step timed out)' "$1")"); return; fi
  FB_SM90_BWD128=$2 step "$1" 9 ncu --csv --metrics "$metrics" --section LaunchStats -k regex:flash_sm90_bwd_kernel \
    -c 1 "$fb" run "$out/spec-mha-nv.json" --kernels flash-sm90 --filter '^b16-h16-kv16-n1024-d128-bf16-full-bwd$' \
    --no-ceilings -q --warmup 1 --reps 1 --warmup-time 0
  [ "$step_rc" = 124 ] || [ "$step_rc" = 137 ] && ncu_dead=1
}
prof ncu-default ""
[ "$probe_ok" = 1 ] && prof ncu-mcast mcast
clock() {  # name, word
  FB_SM90_BWD128=$2 step "$1" 5 "$fb" run "$out/spec-mha-nv.json" --kernels flash-sm90 \
    --filter '^b16-h16-kv16-n1024-d128-bf16-full-bwd$' --no-ceilings -q --min-time 1.5 --max-time 2 \
    -o "$out/runs/$1.json"
}
clock clk-default ""
[ "$probe_ok" = 1 ] && clock clk-mcast mcast
[ "$probe_ok" = 1 ] && prof ncu-pairs pairs
kill "$smi" 2>/dev/null
wait "$smi" 2>/dev/null
printf '%s\n' "${summary[@]}" | tee "$out/steps.txt"

python3 - "$out" <<'PY' | tee "$out/table.txt"
import csv, glob, json, math, os, re, statistics, sys
from datetime import datetime
out = sys.argv[1]
def records(path):
    try:
        return json.load(open(path))["results"]
    except (OSError, ValueError, KeyError):
        pass
    try:
        return [r for r in map(json.loads, open(path + ".journal.jsonl")) if "key" in r]
    except (OSError, ValueError):
        return []
try:
    rc = int(open(os.path.join(out, "tests-mcast.rc")).read())
except (OSError, ValueError):
    rc = -1
print("(1) GPU tests '[bwd128]' under FB_SM90_BWD128=mcast (FB_SM90_BWD_SPLIT=1): " +
      ("passed" if rc == 0 else f"FAILED (rc={rc}{': timed out, mcast not timed' if rc in (124, 137) else ''})"))
runs = {}  # (row, column) -> [(run index, tflops, verified or None)]
order = ["default-1", "mcast-1", "default-2", "mcast-2", "default-3"]
for i, name in enumerate(order):
    for part in (name, name + "-gqa"):
        for r in records(os.path.join(out, "runs", part + ".json")):
            col = name.split("-")[0] if r["kernel"] == "flash-sm90" else r["kernel"]
            ok = r.get("status") == "ok" and r.get("verified") is not False
            runs.setdefault((r["key"].replace("-bwd", ""), col), []).append(
                (i, r.get("tflops") or 0.0, r.get("verified"), ok))
def q80(key):  # q80_kernel(): whole 80-query tiles pad at most 3% over 64-query tiles (non-causal)
    n = int(re.search(r"-n(\d+)", key).group(1))
    return "-full" in key and math.ceil(n / 80) * 80 <= 1.03 * math.ceil(n / 64) * 64
def vals(k, c): return [v[1] for v in runs.get((k, c), []) if v[1]]
def mean(x): return sum(x) / len(x) if x else 0.0
keys = sorted({k for k, _ in runs}, key=lambda k: (not q80(k), "causal" in k, k))
print("(2) TFLOP/s (FlashAttention's count), each run; mcast readings over the mean of the default runs; "
      "'!' = a run that did not verify; kernel = what mcast runs there")
print(f"{'row':36} {'under mcast':>12} {'def-1':>6} {'mc-1':>6} {'def-2':>6} {'mc-2':>6} {'def-3':>6} {'cudnn':>6}"
      f" {'mc-1/def':>8} {'mc-2/def':>8} {'mean':>6} {'def/cudnn':>9}")
for k in keys:
    cells = {}
    for c in ("default", "mcast", "cudnn"):
        for (i, t, v, ok) in runs.get((k, c), []):
            cells[(c, i)] = f"{t:.0f}" + ("" if ok else "!")
    row = [cells.get(("default", 0), "-"), cells.get(("mcast", 1), "-"), cells.get(("default", 2), "-"),
           cells.get(("mcast", 3), "-"), cells.get(("default", 4), "-"), cells.get(("cudnn", 0), "-")]
    d = mean(vals(k, "default"))
    m = vals(k, "mcast") + [0.0, 0.0]
    r = [f"{x / d:.3f}" if x and d else "-" for x in m[:2]]
    mm = f"{mean(vals(k, 'mcast')) / d:.3f}" if d and vals(k, "mcast") else "-"
    cu = mean(vals(k, "cudnn"))
    kind = "mcast" if q80(k) else "default"
    print(f"{k:36} {kind:>12} " + " ".join(f"{x:>6}" for x in row) + f" {r[0]:>8} {r[1]:>8} {mm:>6} "
          + (f"{d / cu:9.3f}" if d and cu else f"{'-':>9}"))
bad = [f"{k} {c}" for (k, c), v in runs.items() if any(x[2] is False for x in v)]
print("not verified: " + (", ".join(bad) if bad else "none") +
      "; verified runs: default-1 (with cudnn), mcast-1, mcast-2 (default-2 / -3 time only)")

smi = []
try:
    for r in csv.reader(open(os.path.join(out, "smi.csv"))):
        try:
            smi.append((datetime.strptime(r[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp(), float(r[1]),
                        float(r[2]), float(r[3]), r[4].strip()))
        except (ValueError, IndexError):
            pass
except OSError:
    pass
win = {}
for line in open(os.path.join(out, "windows.txt")):
    p = line.split()
    if len(p) >= 3:
        win.setdefault(p[0], {})[p[1]] = float(p[2])
print("\n(4) the N = 1k backward alone ~2 s: SM clock, board power (medians after the first 0.7 s; 0x4 = SW power cap)")
for name in ("clk-default", "clk-mcast"):
    w = win.get(name)
    if not w:
        print(f"  {name}: not run")
        continue
    us = float("nan")
    try:
        us = 1000 * json.load(open(os.path.join(out, "runs", name + ".json")))["results"][0]["time_ms"]["median"]
    except Exception:
        pass
    s = [x for x in smi if w.get("start", 0) + 0.7 <= x[0] <= w.get("end", 0) - 0.2]
    if s:
        print(f"  {name:12s} {us:8.1f} us  {len(s):3d} samples  {statistics.median(x[1] for x in s):6.0f} MHz  "
              f"{statistics.median(x[2] for x in s):6.1f} W  {statistics.median(x[3] for x in s):3.0f} C  "
              f"{sorted(set(x[4] for x in s))}")
    else:
        print(f"  {name:12s} {us:8.1f} us  no samples")

vals_n, launch = {}, {}
for p in sorted(glob.glob(os.path.join(out, "ncu-*.log"))):
    tag = os.path.basename(p)[4:-4]
    for r in csv.reader(open(p, errors="replace")):
        if len(r) > 14 and r[0].strip('"').isdigit():
            if r[11] == "Launch Statistics":
                launch.setdefault(tag, {})[r[12]] = r[14]
            else:
                vals_n.setdefault(r[12], {})[tag] = r[14]
print("\n(3) ncu, one launch of the main kernel, b16 x 16 heads N = 1k bf16 (ncu's default clock and cache control)")
tags = sorted({t for v in vals_n.values() for t in v})
print(f"{'metric':68s} " + " ".join(f"{t:>14s}" for t in tags))
for m, v in sorted(vals_n.items()):
    print(f"{m:68s} " + " ".join(f"{v.get(t, '-'):>14s}" for t in tags))
for t, d in sorted(launch.items()):
    print(f"  {t}: " + "; ".join(f"{k} = {v}" for k, v in d.items() if re.search(r"Cluster|Grid Size", k)))
print("  model (tex-source sectors, default): reads 38.3M (Q, dO 33.6M; LSE, D 0.53M; K, V 4.2M), dQ reductions 34.1M,"
      " dK / dV writes 4.2M; mcast: reads 21.3M (-17.0M), the SMs still receive 38.3M")
for f in sorted(glob.glob(os.path.join(out, "*.log"))):
    for line in open(f, errors="replace"):
        if "clusters of" in line:
            print(f"  {os.path.basename(f)}: {line.strip()}")
            break
print("\nsteps:")
print(open(os.path.join(out, "steps.txt")).read().rstrip())
PY
