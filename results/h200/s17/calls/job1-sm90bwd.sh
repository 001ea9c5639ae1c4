#!/usr/bin/env bash
# Session 17, sm90bwd (issue 13; branch sm90bwds17): NO probe. The brief's `mcast` (2-block clusters sharing Q / dO /
# LSE / D by TMA multicast in the non-causal d = 128 backward) was modelled (docs/perf-notes.md, flash-sm90 backward,
# "Session 17": it removes 17.0M of the main kernel's 76.6M L2 sectors at N = 1k, 22%; worth <= +0.6% by call A's clock
# table), built and compiled (commit 1304ee5), and withdrawn before any device run: the forward's multicast in call B
# halved its L2 reads and then ran 0.72-0.85x (the two blocks of a cluster stall each other), and nothing in the
# backward's design (a 2-stage ring, shared memory full at 226 KB) keeps its pair from the same stalls. This job needs
# no new kernel (any build of main, call B's included) and measures what the backward's L2 question still turns on:
#   (1) SM clock and board power while one backward runs alone ~2 s (ours, the in-binary cudnn, in turn; nvidia-smi
#       every 50 ms): d = 128 bf16 non-causal N = 1k (twice each), 2k, 512, d = 64 N = 1k (16k tokens, model dim 2048).
#       Is the backward at the 692 W cap, and at what clock is each?
#   (2) ncu, one launch of each main backward kernel (ours flash_sm90_bwd_kernel, cudnn's bprop), d = 128 N = 1k and
#       d = 64 N = 1k: L2 sectors by operation and source against the model; tex-source reads against what the SMs
#       receive (l1tex__m_xbar2l1tex_read_sectors: below 1 where requests are coalesced, by multicast or by the L2
#       request coalescer's hardware path), and the coalescer's own counters if this ncu knows them; LaunchStats.
# Every step's limit is cut to what is left of a 60 s budget (~45 s expected); a step that does not fit is skipped and
# the table says so; after an ncu step times out the other ncu steps are skipped. Verification is off (timing and
# counters only; no kernel changed). Table last in OUTDIR/table.txt.
#   BUILD=<build dir with flashbench> OUTDIR=<dir> bash results/h200/s17/calls/job1-sm90bwd.sh
set -uo pipefail
build=${BUILD:?BUILD=<build dir>}
out=${OUTDIR:?OUTDIR=<dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)
fb="$build/flashbench"
budget=60
t0=$SECONDS
summary=()
step_rc=0
step() {  # name, limit (s), command... (the limit cut to what is left of the budget)
  local name=$1 max=$2 s=$SECONDS left=$((budget - (SECONDS - t0)))
  shift 2
  if [ "$left" -lt 4 ]; then
    summary+=("$(printf '%-24s skipped (t=%ss)' "$name" "$((SECONDS - t0))")")
    return
  fi
  [ "$max" -gt "$left" ] && max=$left
  echo "$name start $(date +%s.%N)" >>"$out/windows.txt"
  timeout -k 2 "$max" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  step_rc=$rc
  echo "$name end $(date +%s.%N) rc=$rc" >>"$out/windows.txt"
  summary+=("$(printf '%-24s rc=%-3s %3ss' "$name" "$rc" "$((SECONDS - s))")")
  echo "$name rc=$rc $((SECONDS - s))s (t=$((SECONDS - t0))s)" >&2
}
python3 - "$out/spec.json" <<'PY'
import json, sys
json.dump({"name": "sm90bwd-s17", "description": "the backward alone for seconds (job1-sm90bwd.sh): clocks, power, L2",
           "tokens": [16384], "seq": [512, 1024, 2048], "model_dim": [2048], "head_dim": [64, 128],
           "dtype": ["bf16"], "causal": [False], "pass": ["bwd"], "kernels": ["flash-sm90", "cudnn"],
           "warmup": 5, "reps": 20, "seed": 42, "verify": False}, open(sys.argv[1], "w"), indent=1)
PY
: >"$out/windows.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv,nounits -lms 50 >"$out/smi.csv" 2>&1 &
smi=$!
clock() {  # kernel, row (nNNNN-dDD)
  step "clk-$1-$2-$((++nclk))" 5 "$fb" run "$out/spec.json" --kernels "$1" --filter "$2-" --no-ceilings -q \
    --min-time 1.5 --max-time 2 -o "$out/clk-$1-$2-$nclk.json"
}
metrics="lts__t_sectors.sum,lts__t_requests.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum"
metrics+=",lts__t_sectors_op_atom.sum,lts__t_sectors_op_red.sum,lts__t_sectors_srcunit_tex.sum"
metrics+=",lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_srcunit_tex_op_read.sum"
metrics+=",lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_lookup_hit.sum,lts__t_sectors_lookup_miss.sum"
metrics+=",lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum"
metrics+=",smsp__inst_executed.sum,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum"
metrics+=",l1tex__m_xbar2l1tex_read_sectors.sum,l1tex__m_l1tex2xbar_write_sectors.sum"
timeout 6 ncu --query-metrics --chip gh100 >"$out/ncu-query.txt" 2>&1
for m in lrc__lts2lrc_sectors_op_read.sum lrc__xbar2gpc_sectors_op_read.sum \
  lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum \
  lrc__request_sectors_op_read_coalescing_achieved_type_programmatic.sum; do
  grep -q "^${m%.sum} " "$out/ncu-query.txt" && metrics+=",$m"
done
echo "metrics: $metrics" >"$out/ncu-metrics.txt"
ncu_dead=0  # an ncu step that ran out of time: the rest of them are skipped (their time goes to the clock runs)
prof() {  # kernel, row, kernel regex
  if [ "$ncu_dead" = 1 ]; then summary+=("$(printf '%-24s skipped (an ncu step timed out)' "ncu-$1-$2")"); return; fi
  step "ncu-$1-$2" 9 ncu --csv --metrics "$metrics" --section LaunchStats -k "regex:$3" -c 1 \
    "$fb" run "$out/spec.json" --kernels "$1" --filter "$2-" --no-ceilings -q --warmup 1 --reps 1 --warmup-time 0
  [ "$step_rc" = 124 ] || [ "$step_rc" = 137 ] && ncu_dead=1
}
nclk=0
clock flash-sm90 n1024-d128; clock cudnn n1024-d128; clock flash-sm90 n1024-d128; clock cudnn n1024-d128
prof flash-sm90 n1024-d128 flash_sm90_bwd_kernel
prof cudnn n1024-d128 bprop
clock flash-sm90 n2048-d128; clock cudnn n2048-d128
clock flash-sm90 n1024-d64; clock cudnn n1024-d64
prof flash-sm90 n1024-d64 flash_sm90_bwd_kernel
prof cudnn n1024-d64 bprop
clock flash-sm90 n512-d128; clock cudnn n512-d128
kill "$smi" 2>/dev/null
wait "$smi" 2>/dev/null
printf '%s\n' "${summary[@]}" | tee "$out/steps.txt"

python3 - "$out" <<'PY' | tee "$out/table.txt"
import csv, glob, json, os, re, statistics, sys
from datetime import datetime
out = sys.argv[1]
smi = []
try:
    for r in csv.reader(open(os.path.join(out, "smi.csv"))):
        try:
            smi.append((datetime.strptime(r[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp(), float(r[1]),
                        float(r[2]), float(r[3]), r[4].strip()))
        except (ValueError, IndexError):
            pass
except OSError as e:
    print(f"(no nvidia-smi samples: {e})")
win = {}
for line in open(os.path.join(out, "windows.txt")):
    p = line.split()
    if len(p) >= 3:
        win.setdefault(p[0], {})[p[1]] = float(p[2])
print("(1) each backward alone ~2 s (bf16 non-causal, 16k tokens, model dim 2048); SM clock, board power, temperature:")
print("    medians of the nvidia-smi samples inside the run after its first 0.7 s; reasons 0x4 = SW power cap")
print(f"{'run':28s} {'median us':>9s} {'samples':>7s} {'SM MHz':>7s} {'W':>6s} {'C':>4s}  reasons")
clk = {}
for name in sorted((n for n in win if n.startswith("clk-")), key=lambda n: int(n.rsplit("-", 1)[1])):
    w = win[name]
    us = float("nan")
    try:
        us = 1000 * json.load(open(os.path.join(out, name + ".json")))["results"][0]["time_ms"]["median"]
    except Exception:
        pass
    s = [x for x in smi if w.get("start", 0) + 0.7 <= x[0] <= w.get("end", 0) - 0.2]
    tag = name[4:]
    if not s:
        print(f"{tag:28s} {us:9.1f} {0:7d}")
        continue
    mhz = statistics.median(x[1] for x in s)
    kernel, row = tag.split("-n", 1)[0], "n" + tag.split("-n", 1)[1].rsplit("-", 1)[0]
    clk.setdefault((row, kernel), []).append((us, mhz))
    print(f"{tag:28s} {us:9.1f} {len(s):7d} {mhz:7.0f} {statistics.median(x[2] for x in s):6.1f} "
          f"{statistics.median(x[3] for x in s):4.0f}  {sorted(set(x[4] for x in s))}")
print(f"\n{'row':12s} {'ours us':>8s} {'cudnn us':>8s} {'ours/cudnn time':>15s} {'ours MHz':>8s} {'cudnn MHz':>9s}"
      f" {'clock ratio':>11s} {'cycles ratio':>12s}")
for row in sorted({r for r, _ in clk}):
    o, c = clk.get((row, "flash-sm90"), []), clk.get((row, "cudnn"), [])
    if not o or not c:
        continue
    ou, om = statistics.mean(x[0] for x in o), statistics.mean(x[1] for x in o)
    cu, cm = statistics.mean(x[0] for x in c), statistics.mean(x[1] for x in c)
    print(f"{row:12s} {ou:8.1f} {cu:8.1f} {ou / cu:15.3f} {om:8.0f} {cm:9.0f} {om / cm:11.3f} "
          f"{ou * om / (cu * cm):12.3f}")

# The model (docs/perf-notes.md, Session 17): L2 sectors of our main kernel, 32-byte sectors, tex source.
model = {"n1024-d128": {"Q, dO reads": 33.55e6, "LSE, D reads": 0.53e6, "K, V reads": 4.19e6,
                        "dQ reductions": 34.08e6, "dK, dV writes": 4.19e6},
         "n1024-d64": {"Q, dO reads": 33.55e6, "LSE, D reads": 1.05e6, "K, V reads": 4.19e6,
                       "dQ reductions": 33.55e6, "dK, dV writes": 4.19e6}}
vals, launch = {}, {}
for p in sorted(glob.glob(os.path.join(out, "ncu-*.log"))):
    tag = os.path.basename(p)[4:-4]
    for r in csv.reader(open(p, errors="replace")):
        if len(r) > 14 and r[0].strip('"').isdigit():
            if r[11] == "Launch Statistics":
                launch.setdefault(tag, {})[r[12]] = r[14]
                launch[tag]["kernel"] = r[4][:90]
            else:
                vals.setdefault(r[12], {})[tag] = r[14]
print("\n(2) ncu, one launch of each main backward kernel (ncu's default clock and cache control)")
tags = sorted({t for v in vals.values() for t in v})
print(f"{'metric':52s} " + " ".join(f"{t[:24]:>24s}" for t in tags))
for m, v in sorted(vals.items()):
    print(f"{m:52s} " + " ".join(f"{v.get(t, '-'):>24s}" for t in tags))
def num(m, t):
    try:
        return float(vals[m][t].replace(",", ""))
    except (KeyError, ValueError):
        return float("nan")
print("\nmodel vs measured (ours) and the multicast signature (tex-source L2 reads / sectors the SMs receive;"
      " ~1.0 when nothing is coalesced, ~0.5 when every read is shared by two SMs)")
for row, parts in model.items():
    t = f"flash-sm90-{row}"
    rd = parts["Q, dO reads"] + parts["LSE, D reads"] + parts["K, V reads"]
    print(f"  {row}: model tex reads {rd / 1e6:.1f}M (Q, dO {parts['Q, dO reads'] / 1e6:.1f}M, LSE, D "
          f"{parts['LSE, D reads'] / 1e6:.2f}M, K, V {parts['K, V reads'] / 1e6:.1f}M), dQ reductions "
          f"{parts['dQ reductions'] / 1e6:.1f}M, dK/dV writes {parts['dK, dV writes'] / 1e6:.1f}M; "
          f"mcast would remove {(parts['Q, dO reads'] + parts['LSE, D reads']) / 2e6:.1f}M")
    print(f"    measured tex read {num('lts__t_sectors_srcunit_tex_op_read.sum', t) / 1e6:.1f}M "
          f"(/ model {num('lts__t_sectors_srcunit_tex_op_read.sum', t) / rd:.3f}), red "
          f"{num('lts__t_sectors_op_red.sum', t) / 1e6:.1f}M, atom {num('lts__t_sectors_op_atom.sum', t) / 1e6:.1f}M, "
          f"tex write {num('lts__t_sectors_srcunit_tex_op_write.sum', t) / 1e6:.1f}M, all "
          f"{num('lts__t_sectors.sum', t) / 1e6:.1f}M")
for t in tags:
    a, b = num("lts__t_sectors_srcunit_tex_op_read.sum", t), num("l1tex__m_xbar2l1tex_read_sectors.sum", t)
    print(f"  {t:28s} tex reads / SM-received reads = {a / b:.3f}   "
          f"all L2 sectors {num('lts__t_sectors.sum', t) / 1e6:.1f}M"
          f"   {num('gpu__time_duration.sum', t) / 1e3:.1f} us")
print("\n(3) launch statistics")
for t, d in sorted(launch.items()):
    keep = {k: v for k, v in d.items() if re.search(r"Cluster|Grid Size|Block Size|Registers|Shared Memory Config", k)}
    print(f"  {t}: {d.get('kernel', '?')}")
    print("     " + "; ".join(f"{k} = {v}" for k, v in keep.items()))
print("\nsteps:")
print(open(os.path.join(out, "steps.txt")).read().rstrip())
PY
