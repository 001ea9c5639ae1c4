#!/usr/bin/env bash
# Session 10's device probe of the portable flash backward (issue 13), everything into OUTDIR (~60 s on a
# built tree):
#   1. per probe (FB_FLASH_BWD in PROBES, default "tail"; call A ran "dqmid tail"; the default kernels are checked by the
#      final sweep): the GPU tests of flash's backward (accuracy cases, seq_q != seq_k) and `flashbench
#      verify --pass bwd` on odd shapes (GQA with 144 blocks of 1000 keys, d 128, whose last partial
#      wave of 12 the `tail` probe splits after a whole one; MQA; MHA with 144 blocks, d 64);
#   2. configs/flashbwd-long-h200.json (bf16, d 64/128, N 4k/8k/16k, both masks) as default, probes,
#      [torch-flash], probes reversed, default: the variants interleaved around FlashAttention-2
#      (scripts/peers.py on the same spec), since runs drift 2-3% within a call; each variant's first run
#      verifies every row (VERIFY_DEFAULT=0: only the probes' first runs verify); MASKS=full keeps only
#      the non-causal rows; PAIRS (default 2) runs per variant;
#   3. Nsight Compute on ONE launch each of flash's main kernel (default variant) and FlashAttention-2's
#      backward kernel at d = 128, N = 16k, non-causal: the warp-state (stall) breakdown, issue and
#      tensor-pipe activity, instructions, shared-memory wavefronts, L2 hit rate (NCU=0 skips it; each
#      ncu step runs only if at least 10 s of BUDGET, default 65 s from the script's start, are left, and
#      is cut at what is left, so the script ends within BUDGET + the table's second);
#   4. a table last: TFLOP/s per variant (mean of its 2 runs), FA2 time / flash time, default time /
#      probe time per probe (> 1: the probe is faster), then the ncu comparison.
#     BUILD=build-h200 scripts/flashbwd_s10.sh OUTDIR
set -uo pipefail
step_timeout=40 step_tail=2 step_name_width=16
. "$(dirname "$0")/h200_step.sh"
h200_dirs "${1:?usage: scripts/flashbwd_s10.sh OUTDIR}"
require_build flashbwd_s10.sh
probes=${PROBES:-tail}
spec=configs/flashbwd-long-h200.json
pairs=${PAIRS:-2}
if [ "${MASKS:-both}" = full ]; then
  python3 -c "import json, sys; s = json.load(open(sys.argv[1])); s['causal'] = [False]; json.dump(s, open(sys.argv[2], 'w'))" \
    "$spec" "$out/spec-full.json"
  spec=$out/spec-full.json
fi

for probe in $probes; do
  step "tests-$probe" env FB_FLASH_BWD="$probe" "$tests" \
    "naive meets its dtype tolerance and flash the naive-relative rule vs the fp64 reference,seq_q != seq_k*"
  step "verify-$probe" env FB_FLASH_BWD="$probe" sh -c "
    '$fb' verify -q --seq 1000 --batch 3 --heads 12 --kv-heads 6 --dim 128 --dtype bf16 --causal both --pass bwd &&
    '$fb' verify -q --seq 333 --heads 8 --kv-heads 1 --dim 64 --dtype fp16 --causal both --pass bwd &&
    '$fb' verify -q --seq 1000 --batch 3 --heads 6 --dim 64 --dtype fp16 --causal both --pass bwd"
done
# Run 1 of each variant verifies every row; run 2 times the same cases unverified (the same kernels).
python3 -c "import json, sys; s = json.load(open(sys.argv[1])); s['verify'] = False; json.dump(s, open(sys.argv[2], 'w'))" \
  "$spec" "$out/spec-noverify.json"
run() {  # variant rep
  local s=$spec
  [ "$2" = 1 ] && { [ "$1" != standard ] || [ "${VERIFY_DEFAULT:-1}" = 1 ]; } || s=$out/spec-noverify.json
  step "run-$1-$2" env FB_FLASH_BWD="$1" "$fb" run "$s" --no-ceilings -q -o "$out/flash-$1-$2.json"
}
run standard 1
for probe in $probes; do run "$probe" 1; done
[ "${PEERS:-1}" = 1 ] &&
  step peers python3 scripts/peers.py "$spec" --backends flash --ref-max-seq 0 -o "$out/peers.json"
for probe in $(printf '%s\n' $probes | tac); do run "$probe" 2; done
run standard 2
for r in $(seq 3 "$pairs"); do  # more runs, alternating (unverified)
  run standard "$r"
  for probe in $probes; do run "$probe" "$r"; done
done

if [ "${NCU:-1}" = 1 ]; then
  ncu=${NCU_BIN:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
  sections=(--section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis
            --section MemoryWorkloadAnalysis --section SpeedOfLight)
  budget=${BUDGET:-65}
  left() { echo $((budget - SECONDS - 1)); }
  [ "$(left)" -ge 10 ] && STEP_TIMEOUT=$(( $(left) < 25 ? $(left) : 25 )) step ncu-flash "$ncu" --kernel-name regex:bwd_main_tc_grid_kernel --launch-count 1 "${sections[@]}" \
    --page raw --csv "$fb" run configs/flashbwd-h200.json --filter 'n16384-d128-bf16-full' \
    --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q
  [ "$(left)" -ge 10 ] && STEP_TIMEOUT=$(( $(left) < 30 ? $(left) : 30 )) step ncu-fa2 "$ncu" --kernel-name regex:flash_bwd_dq_dk_dv --launch-count 1 "${sections[@]}" \
    --page raw --csv python3 -c "
import torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
x = [torch.randn(1, 16, 16384, 128, device='cuda', dtype=torch.bfloat16, requires_grad=True) for _ in range(3)]
with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    o = F.scaled_dot_product_attention(*x)
o.backward(torch.randn_like(o))
torch.cuda.synchronize()"
fi

python3 - "$out" "$pairs" $probes <<'PY' | tee "$out/table.txt"
import csv, io, json, os, sys
out, pairs, probes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
variants = ["standard"] + probes
def load(name, kernel):
    try:
        return {r["key"]: r for r in json.load(open(os.path.join(out, name)))["results"]
                if r["status"] == "ok" and r["kernel"] == kernel}
    except (OSError, ValueError, KeyError) as e:
        print(f"({name}: {e})")
        return {}
runs = {v: [load(f"flash-{v}-{i}.json", "flash") for i in range(1, pairs + 1)] for v in variants}
fa2 = load("peers.json", "torch-flash")
def mean_time(v, k):
    ts = [r[k]["time_ms"]["median"] for r in runs[v] if k in r]
    return sum(ts) / len(ts) if ts else None
def first(v, k):
    return next((r[k] for r in runs[v] if k in r), None)
keys = sorted({k for v in variants for r in runs[v] for k in r},
              key=lambda k: next((x["case"]["head_dim"], x["case"]["causal"], x["case"].get("seq_q", x["case"].get("seq")))
                                 for v in variants for x in [first(v, k)] if x))
checked = [v for v in variants if v != "standard" or os.environ.get("VERIFY_DEFAULT", "1") == "1"]
unverified = [f"{v}:{k}" for v in checked for k in keys
              if not any((r.get(k) or {}).get("verified") for r in runs[v])]
print(f"TFLOP/s (mean of {pairs} runs, interleaved); x = FA2 time / flash time; r:P = standard time / P's time "
      f"(> 1: P faster); spread: the largest max/min - 1 of a variant's runs; "
      f"unverified rows of {' '.join(checked)}: {len(unverified)} {' '.join(unverified[:4])}")
print(f'{"case":40}' + "".join(f"{v:>16}" for v in variants) + f'{"FA2":>7}'
      + "".join(f'{"r:" + p:>10}' for p in probes) + f'{"spread":>8}')
for k in keys:
    row = f"{k:40}"
    for v in variants:
        t = mean_time(v, k)
        if t is None:
            row += f'{"-":>16}'
            continue
        x = first(v, k)
        tf = x["tflops"] * x["time_ms"]["median"] / t
        ratio = f" {fa2[k]['time_ms']['median'] / t:.3f}x" if k in fa2 else ""
        row += f"{tf:>8.0f}{ratio:>8}"
    row += f'{fa2[k]["tflops"]:>7.0f}' if k in fa2 else f'{"-":>7}'
    ts = mean_time("standard", k)
    for p in probes:
        tp = mean_time(p, k)
        row += f"{ts / tp:>10.3f}" if ts and tp else f'{"-":>10}'
    # the largest of the variants' run-to-run spreads (max/min - 1 of their 2 medians)
    sp = [max(m) / min(m) - 1 for v in variants
          for m in [[r[k]["time_ms"]["median"] for r in runs[v] if k in r]] if len(m) >= 2]
    row += f"{100 * max(sp):>7.1f}%" if sp else f'{"-":>8}'
    print(row)

def ncu(name):
    try:
        text = open(os.path.join(out, name + ".log")).read()
    except OSError:
        return {}
    lines = [l for l in text.splitlines() if l.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if len(rows) < 2:
        return {}
    if "Metric Name" in rows[0]:  # one row per metric (the details page's layout)
        h = rows[0]
        i, u, v = h.index("Metric Name"), h.index("Metric Unit"), h.index("Metric Value")
        return {r[i]: (r[v], r[u]) for r in rows[1:] if len(r) == len(h)}
    if len(rows) < 3:
        return {}
    head, units, vals = rows[0], rows[1], rows[2]  # --page raw --csv: names, units, one launch
    return {h: (v, u) for h, u, v in zip(head, units, vals)}
a, b = ncu("ncu-flash"), ncu("ncu-fa2")
if a or b:
    def num(d, k):
        try:
            return float(d[k][0].replace(",", ""))
        except (KeyError, ValueError):
            return None
    want = ["gpu__time_duration.sum", "sm__cycles_elapsed.avg", "smsp__inst_executed.sum",
            "smsp__issue_active.avg.pct_of_peak_sustained_active", "smsp__warps_eligible.avg.per_cycle_active",
            "smsp__average_warp_latency_per_inst_issued.ratio",
            "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
            "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active",
            "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
            "lts__t_sector_hit_rate.pct", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
            "launch__registers_per_thread", "launch__grid_size"]
    # Stall reasons: warps stalled per issued instruction, by reason (WarpStateStats), largest first.
    stalls = sorted({k for d in (a, b) for k in d
                     if "issue_stalled" in k and k.endswith("per_issue_active.ratio") and "not_issued" not in k},
                    key=lambda k: -(num(a, k) or 0))[:16]
    print(f"ncu, one launch each, d = 128 N = 16k non-causal bf16 ({len(a)} / {len(b)} metrics): flash | FA2")
    for k in want + stalls:
        va, vb = num(a, k), num(b, k)
        if va is None and vb is None:
            continue
        name = k.replace("smsp__average_warps_issue_stalled_", "stall ").replace("smsp__average_warp_latency_issue_stalled_", "stall ").replace("_per_issue_active.ratio", "")
        fmt = lambda x: f"{x:>14.4g}" if x is not None else f'{"-":>14}'
        print(f"  {name:66}{fmt(va)}{fmt(vb)}")
PY
printf '%s\n' "${summary[@]}"
exit "$failed"
