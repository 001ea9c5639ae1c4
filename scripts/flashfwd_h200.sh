#!/usr/bin/env bash
# The portable flash forward's timing probes on an H100/H200 (issue 13), everything into OUTDIR (~45 s on a
# built tree):
#   the GPU tests of the forward as shipped ([flashfwd]: bf16/fp16 d 64/128 around the tiles; flash's accuracy
#   cases; seq_q != seq_k), then [flashfwd] once per probe setting (FB_FLASH_FWD_PROBE is read once per
#   process); CONFIG (default configs/flashfwd-h200.json; several specs separated by spaces, each run once per
#   setting with the same FILTER, e.g. CONFIG="configs/flashfwd-h200.json configs/gqa-h200.json"; only their
#   forward cases: the script runs copies with pass = fwd, OUTDIR/spec*.json) with FILTER
#   (default: the rows that trailed
#   FlashAttention-2 in session 10's final sweep and their neighbours, both 16-bit types: d 128 non-causal
#   N 512/1k/2k, d 64 causal N 1k/2k/4k, d 128 causal N 1k, and d 64 non-causal N 512 (bf16) as a check),
#   verified: the shipped kernels, then the VARIANTs in groups of GROUP (default 4) with the shipped kernels again
#   after each group;
#   torch-flash (FlashAttention-2) on the same spec through scripts/peers.py. Last, a table: TFLOP/s shipped and
#   FA2, FA2 time / shipped time, and per variant its speed over the shipped kernels' (geometric mean of the
#   shipped runs just before and just after it); then fp16 time / bf16 time of each case, ours and FA2's.
#     BUILD=build-h200 scripts/flashfwd_h200.sh OUTDIR [VARIANT...]
# A VARIANT is an FB_FLASH_FWD_PROBE value (comma-separated words; kernels/flash/flash_fwd_config.h lists
# them). BUILD must hold flashbench and tests/flashbench_gpu_tests. A variant starts only while the script has
# run under BUDGET_S seconds (default 55); the summary names the skipped. PEERS=0 skips torch. TESTS (default:
# all) names the settings whose GPU tests run, by the words ship (the shipped kernels' test step) and the
# VARIANTs, separated by spaces (TESTS= runs none: the timed rows are still verified).
# NCU=1 (default 0) adds Nsight Compute on ONE launch of the shipped forward kernel and one of FlashAttention-2's
# (PyTorch's flash backend) on the case NCU_CASE (default b32-h16-kv16-n512-d128-bf16-full-fwd, from
# configs/flashfwd-h200.json; the key's b, h, n, d, dtype and mask set FA2's shape): warp-state stalls, issue and
# tensor-pipe activity, L2 and DRAM; printed side by side after the table (~15 s; NCU_BIN: the ncu binary;
# NCU_BY=S: only when the script has run under S seconds by then). NCU_VARIANT=V (a VARIANT) adds one launch of
# the forward under FB_FLASH_FWD_PROBE=V beside the shipped one (~4 s); NCU_FA2=0 leaves FA2's out (~7 s);
# NCU_TIMEOUT=S (default 25) cuts each ncu step at S seconds.
# REPEAT=R (default 1) runs the whole variant sequence R times, each time followed by a shipped run (ship, V..., ship,
# V..., ship, ...); the K-th repeat's runs are named v-NAME.rK (K > 1), its GPU tests run once. A variant's column is
# then the geometric mean over its repeats of (shipped runs around it / variant), and a section after the table lists
# every repeat's ratio; x is FA2's time over the geometric mean of all shipped runs, `spread` their slowest / fastest.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: scripts/flashfwd_h200.sh OUTDIR [VARIANT...]" >&2; exit 2; }
. "$(dirname "$0")/h200_step.sh"
h200_dirs "$1"
shift
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(band0 nopf)
budget=${BUDGET_S:-55}
group=${GROUP:-4}
read -r -a configs <<<"${CONFIG:-configs/flashfwd-h200.json}"
tests_for=" ${TESTS-ship ${variants[*]}} "
# Output suffix of spec I: NAME.json for the first, NAME.cI.json for I > 0.
sfx() { [ "$1" -gt 0 ] && printf '.c%s' "$1"; }
filter=${FILTER:-'n(512|1024|2048)-d128-(bf16|fp16)-full|n(1024|2048|4096)-d64-(bf16|fp16)-causal|n1024-d128-(bf16|fp16)-causal|n512-d64-bf16-full'}
require_build flashfwd_h200.sh

step_timeout=30 step_tail=2 step_name_width=20
t_start=$SECONDS

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1
[[ "$tests_for" == *" ship "* ]] && step tests "$tests" \
  "[flashfwd],naive meets its dtype tolerance and flash the naive-relative rule vs the fp64 reference,seq_q != seq_k*"
# The specs' forward cases (a spec may list bwd too; gqa-h200.json does): OUTDIR/spec.json, spec.cI.json.
for i in "${!configs[@]}"; do
  python3 - "${configs[$i]}" "$out/spec$(sfx "$i").json" <<'PY' || { echo "flashfwd_h200.sh: cannot read ${configs[$i]}" >&2; exit 2; }
import json, sys
spec = json.load(open(sys.argv[1]))
spec["pass"] = ["fwd"]
json.dump(spec, open(sys.argv[2], "w"), indent=1)
PY
  configs[$i]=$out/spec$(sfx "$i").json
done
# The run order: ship-1, a group of variants, ship-2, the next group, ..., a last ship run.
order=(ship)
for ((r = 1; r <= ${REPEAT:-1}; r++)); do
  n=0
  for v in "${variants[@]}"; do
    order+=("$v@$r")
    n=$((n + 1))
    [ $((n % group)) -eq 0 ] && [ "$n" -lt ${#variants[@]} ] && order+=(ship)
  done
  order+=(ship)
done
ran=()
ships=0
for v in "${order[@]}"; do
  if [ "$v" = ship ]; then
    ships=$((ships + 1))
    name=ship-$ships v=
  else
    r=${v##*@} v=${v%@*}
    name="v-${v//,/+}"
    [ "$r" -gt 1 ] && name+=".r$r"
    if [ $((SECONDS - t_start)) -ge "$budget" ]; then
      summary+=("$(printf "%-20s skipped (budget %ss)" "$name" "$budget")")
      continue
    fi
    [ "$r" = 1 ] && [[ "$tests_for" == *" $v "* ]] && FB_FLASH_FWD_PROBE=$v step "test-$name" "$tests" "[flashfwd]"
  fi
  for i in "${!configs[@]}"; do
    FB_FLASH_FWD_PROBE=$v step "$name$(sfx "$i")" "$fb" run "${configs[$i]}" --kernels flash --no-ceilings -q \
      --filter "$filter" -o "$out/$name$(sfx "$i").json"
  done
  ran+=("$name")
done
if [ "${PEERS:-1}" = 1 ]; then
  # FA2 on the same (forward) cases, timed only (the flash rows are verified; peers are measured, not judged).
  for i in "${!configs[@]}"; do
    python3 - "${configs[$i]}" "$out/peers-spec$(sfx "$i").json" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["verify"] = False
spec["name"] += "-peers"
json.dump(spec, open(sys.argv[2], "w"), indent=1)
PY
    step_timeout=45 step "peers$(sfx "$i")" python3 scripts/peers.py "$out/peers-spec$(sfx "$i").json" \
      --backends flash -o "$out/peers$(sfx "$i").json"
  done
fi

ncu_case=${NCU_CASE:-b32-h16-kv16-n512-d128-bf16-full-fwd}
if [ "${NCU:-0}" = 1 ] && [ $((SECONDS - t_start)) -lt "${NCU_BY:-100000}" ]; then
  ncu=${NCU_BIN:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
  sections=(--section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis
            --section MemoryWorkloadAnalysis --section SpeedOfLight --page raw --csv)
  STEP_TIMEOUT=${NCU_TIMEOUT:-25} step ncu-flash "$ncu" --kernel-name regex:flash_fwd_tc_kernel --launch-count 1 \
    "${sections[@]}" \
    "$fb" run "${configs[0]}" --kernels flash --filter "^$ncu_case\$" --warmup 0 --reps 1 --warmup-time 0 \
    --no-ceilings -q
  if [ -n "${NCU_VARIANT:-}" ]; then
    FB_FLASH_FWD_PROBE=$NCU_VARIANT STEP_TIMEOUT=${NCU_TIMEOUT:-25} step ncu-var "$ncu" --kernel-name regex:flash_fwd_tc_kernel \
      --launch-count 1 "${sections[@]}" "$fb" run "${configs[0]}" --kernels flash --filter "^$ncu_case\$" \
      --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q
  fi
  # FA2's shape from the key: batch, heads, N, d, dtype, mask.
  key_re='^b([0-9]+)-h([0-9]+)-kv[0-9]+-n([0-9]+)-d([0-9]+)-([a-z0-9]+)-([a-z]+)-fwd$'
  read -r b h n d dt mask < <(echo "$ncu_case" | sed -E "s/$key_re/\\1 \\2 \\3 \\4 \\5 \\6/")
  [ "$dt" = bf16 ] && tdt=bfloat16 || tdt=float16
  [ "$mask" = causal ] && is_causal=True || is_causal=False
  [ "${NCU_FA2:-1}" = 1 ] && STEP_TIMEOUT=30 step ncu-fa2 "$ncu" --kernel-name regex:flash_fwd_kernel \
    --launch-count 1 "${sections[@]}" python3 -c "
import torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
q, k, v = [torch.randn($b, $h, $n, $d, device='cuda', dtype=torch.$tdt) for _ in range(3)]
with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    F.scaled_dot_product_attention(q, k, v, is_causal=$is_causal)
torch.cuda.synchronize()"
elif [ "${NCU:-0}" = 1 ]; then
  summary+=("$(printf "%-20s skipped (NCU_BY %ss)" ncu "${NCU_BY:-}")")
fi

python3 - "$out" "$filter" "$ncu_case" "${NCU_VARIANT:-}" "${ran[@]}" <<'PY' | tee "$out/table.txt"
import csv, io, json, math, os, re, sys
out, filt, ncu_case, ncu_var, names = sys.argv[1], re.compile(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
nan = float("nan")
def load(name, kernel):
    # NAME.json and the other specs' NAME.cI.json, merged.
    rows = {}
    for f in sorted(os.listdir(out)):
        if f != name + ".json" and not re.fullmatch(re.escape(name) + r"\.c\d+\.json", f):
            continue
        try:
            res = json.load(open(os.path.join(out, f)))["results"]
        except (OSError, ValueError, KeyError) as e:
            print(f"({f}: {e})")
            continue
        # Unverified or failed rows count as missing (nan): every flash row must verify.
        rows.update({r["key"]: r for r in res if r["kernel"] == kernel and r["status"] == "ok"
                     and (kernel != "flash" or r.get("verified") is True)})
    return rows
runs = {n: load(n, "flash") for n in names}
fa2 = load("peers", "torch-flash")
dim = lambda k: int(re.search(r"-d(\d+)-", k).group(1))
seq = lambda k: int(re.search(r"-n(\d+)-", k).group(1))
keys = sorted({k for r in runs.values() for k in r if filt.search(k)} |
              {k for k in fa2 if filt.search(k) and k.endswith("-fwd")},
              key=lambda k: (dim(k), "causal" in k, seq(k), "fp16" in k, k))
t = lambda n, k: runs[n][k]["time_ms"]["median"] if k in runs.get(n, {}) else nan
# Each variant run against the shipped runs just before and just after it (the run order is the names' order); a
# variant's repeats (NAME.rK, REPEAT) are runs of one variant.
ships = [i for i, n in enumerate(names) if n.startswith("ship-")]
occ = [n for n in names if not n.startswith("ship-")]
var = list(dict.fromkeys(re.sub(r"\.r\d+$", "", n) for n in occ))
reps = {v: [n for n in occ if re.sub(r"\.r\d+$", "", n) == v] for v in var}
around = {}
for i, n in enumerate(names):
    if n in occ:
        before = max((j for j in ships if j < i), default=None)
        after = min((j for j in ships if j > i), default=None)
        around[n] = [names[j] for j in (before, after) if j is not None]
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else nan
def base(n, k):
    return gm([t(s, k) for s in around[n] if t(s, k) == t(s, k)])
def ratios(v, k):  # one per repeat: shipped around it / variant
    return [base(n, k) / t(n, k) for n in reps[v] if base(n, k) / t(n, k) == base(n, k) / t(n, k)]
first, last = names[ships[0]], names[ships[-1]]
ship_ts = lambda k: [t(names[j], k) for j in ships if t(names[j], k) == t(names[j], k)]
print("flash forward: TFLOP/s (ship = first shipped run), x = FA2 time / shipped time (geometric mean of every shipped")
print("run); spread = slowest shipped run / fastest; variant columns: shipped time (geometric mean of the shipped runs")
print("just before and after it) / variant time (> 1: faster), geometric mean over the variant's repeats;")
print("drift = first shipped time / last; '-' = missing or not verified")
print(f'{"case":40}{"ship":>6}{"FA2":>6}{"x":>7}{"drift":>7}{"spread":>7}' + "".join(f"{v[2:][:14]:>15}" for v in var))
logs = {v: [] for v in var}
for k in keys:
    a, b = t(first, k), t(last, k)
    st = ship_ts(k)
    ship_tf = runs.get(first, {}).get(k, {}).get("tflops", nan)
    f = fa2.get(k)
    x = f["time_ms"]["median"] / gm(st) if f and st else nan
    spread = max(st) / min(st) if st else nan
    row = (f"{k:40}{ship_tf:>6.0f}{(f['tflops'] if f else nan):>6.0f}{x:>7.3f}"
           f"{a / b if a == a and b == b else nan:>7.3f}{spread:>7.3f}")
    for v in var:
        rs = ratios(v, k)
        if rs:
            r = gm(rs)
            logs[v].append(math.log(r))
            vt = gm([t(n, k) for n in reps[v] if t(n, k) == t(n, k)])
            fx = f" ({f['time_ms']['median'] / vt:.3f})" if f else ""
            row += f"{r:>7.3f}{fx:>8}"
        else:
            row += f'{"-":>15}'
    print(row)
print("in brackets: FA2 time / variant time (geometric mean of its repeats). geomean variant speed over shipped: " +
      ", ".join(f"{v[2:]} {math.exp(sum(l) / len(l)):.3f}" for v, l in logs.items() if l))
if any(len(r) > 1 for r in reps.values()):
    print("each repeat: shipped around it / variant, in run order")
    for k in keys:
        print(f"  {k:40}" + "".join(f"  {v[2:][:10]:>10} " + " ".join(f"{r:.3f}" for r in ratios(v, k)) for v in var))
# fp16 against bf16 on the same case, same process: ours (all shipped runs) and FA2's.
print("fp16 time / bf16 time (> 1: fp16 slower): ours (geomean of the shipped runs), FA2")
for k in keys:
    if "-bf16-" not in k:
        continue
    k16 = k.replace("-bf16-", "-fp16-")
    ours = [t(s, k16) / t(s, k) for s in (names[j] for j in ships) if t(s, k16) == t(s, k16) and t(s, k) == t(s, k)]
    if not ours:
        continue
    o = math.exp(sum(map(math.log, ours)) / len(ours))
    f = fa2[k16]["time_ms"]["median"] / fa2[k]["time_ms"]["median"] if k in fa2 and k16 in fa2 else nan
    print(f"  {k.replace('-bf16-', '-*-'):40} ours {o:.3f}  FA2 {f:.3f}")
# Nsight Compute (NCU=1): one launch each, ours (shipped; NCU_VARIANT's) and FA2's, side by side.
def ncu(path):
    try:
        lines = [l for l in open(path).read().splitlines() if l.startswith('"')]
    except OSError:
        return {}
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    return {h: v for h, v in zip(rows[0], rows[2])} if len(rows) >= 3 else {}  # names, units, one launch
titles = {"flash": "flash", "var": ncu_var, "fa2": "FA2"}
cols = [(n, ncu(os.path.join(out, f"ncu-{n}.log"))) for n in ("flash", "var", "fa2")]
cols = [(n, d) for n, d in cols if d]
if len(cols) >= 2 and cols[0][0] == "flash":
    def num(d, k):
        try:
            return float(d[k].replace(",", ""))
        except (KeyError, ValueError):
            return None
    want = ["gpu__time_duration.sum", "launch__grid_size", "launch__registers_per_thread", "inst_executed",
            "smsp__issue_active.avg.pct_of_peak_sustained_active", "smsp__warps_eligible.avg.per_cycle_active",
            "smsp__warps_active.avg.per_cycle_active",
            "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
            "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
            "l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed",
            "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
            "lts__t_sector_hit_rate.pct", "lts__throughput.avg.pct_of_peak_sustained_elapsed",
            "dram__cycles_active.avg.pct_of_peak_sustained_elapsed", "dram__bytes.sum.per_second",
            "sm__throughput.avg.pct_of_peak_sustained_elapsed"]
    stalls = sorted({k for _, d in cols for k in d
                     if "issue_stalled" in k and k.endswith("per_issue_active.ratio") and "not_issued" not in k},
                    key=lambda k: -(num(cols[0][1], k) or 0))[:14]
    print(f"ncu, one launch each, {ncu_case}: " + " | ".join(titles[n] for n, _ in cols))
    for k in want + stalls:
        vals = [num(d, k) for _, d in cols]
        if all(x is None for x in vals):
            continue
        name = k.replace("smsp__average_warps_issue_stalled_", "stall ").replace("_per_issue_active.ratio", "")
        print(f"  {name:70}" + "".join(f"{x:>14.4g}" if x is not None else f'{"-":>14}' for x in vals))
PY
echo "--- steps (total $((SECONDS - t_start)) s)"
printf '%s\n' "${summary[@]}"
exit "$failed"
