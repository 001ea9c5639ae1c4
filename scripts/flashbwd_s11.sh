#!/usr/bin/env bash
# Session 11's device probe of the portable flash backward (issue 13), everything into OUTDIR (~60 s on a
# built tree):
#   1. checks: per variant in TEST_PROBES (default: every probe; NAME:SPEC runs the Catch test spec SPEC
#      instead) the GPU tests of flash's backward (accuracy cases, seq_q != seq_k, [flash_tail]: d = 128
#      grids of more than a wave, where the default splits the last one) under FB_FLASH_BWD=NAME;
#      per variant in VERIFY_VARIANTS (default:
#      standard and every probe; NAME:K for the first K shapes only) `flashbench verify --pass bwd`, both
#      masks, on odd shapes: GQA with 144 blocks of 1000 keys at d 128 bf16 (a whole wave and a tail of 12 on
#      132 SMs: the default's tail split runs there), MQA d 64 fp16, MHA with 144 blocks at d 64 fp16;
#   2. configs/flashbwd-long-h200.json (bf16, d 64/128, N 4k/8k/16k, both masks) as standard, probes,
#      [torch-flash], probes reversed, standard: the variants interleaved around FlashAttention-2
#      (scripts/peers.py on the same spec), since runs drift 2-3% within a call. PROBES (default
#      "notail dqrows"; call A of session 11 ran "notail:d128-bf16-full dqtile") are FB_FLASH_BWD values, each optionally NAME:REGEX to time only the rows whose key
#      matches (e.g. notail:d128-bf16-full: that probe differs from the default there only). Each probe's
#      first run verifies every row it times; the default's too unless VERIFY_DEFAULT=0. PAIRS (default 2)
#      runs per variant; PEERS=0 skips torch;
#   3. Nsight Compute on ONE launch of flash's main kernel per variant in NCU_VARIANTS (default "standard
#      dqrows") at d = 128, N = 16k, non-causal, and of FlashAttention-2's backward kernel unless NCU_FA2=0
#      (NCU_FA2_LOG=FILE: an earlier FA2 profile shown beside them instead): warp-state stalls, issue and
#      tensor-pipe activity, LSU and L2 load (the dQ reductions), L2 hit rate. NCU=0 skips it; each ncu step
#      runs only if at least 10 s of BUDGET (default 65 s from the script's start) are left, cut at what is
#      left;
#   4. a table last: TFLOP/s per variant (mean of its runs), FA2 time / flash time, standard time / probe
#      time per probe (> 1: the probe is faster), the runs' spread, then the ncu comparison.
# TIMING=0 skips step 2 (with TEST_PROBES= VERIFY_VARIANTS= : the ncu steps alone, ~12 s).
#     BUILD=build-h200 scripts/flashbwd_s11.sh OUTDIR
set -uo pipefail
step_timeout=40 step_tail=2 step_name_width=16
. "$(dirname "$0")/h200_step.sh"
h200_dirs "${1:?usage: scripts/flashbwd_s11.sh OUTDIR}"
require_build flashbwd_s11.sh
spec=configs/flashbwd-long-h200.json
pairs=${PAIRS:-2}
budget=${BUDGET:-65}
left() { echo $((budget - SECONDS - 1)); }
probe_specs=${PROBES:-notail dqrows}
probes=$(for p in $probe_specs; do printf '%s ' "${p%%:*}"; done)
filter_of() {  # variant -> its row filter ('' = every row)
  local p
  for p in $probe_specs; do
    [ "${p%%:*}" = "$1" ] && [ "$p" != "${p#*:}" ] && { echo "${p#*:}"; return; }
  done
  echo ""
}

test_spec="naive meets its dtype tolerance and flash the naive-relative rule vs the fp64 reference,seq_q != seq_k*,[flash_tail]"
for tp in ${TEST_PROBES-$probes}; do  # NAME or NAME:SPEC (a Catch test spec in place of test_spec)
  v=${tp%%:*} spec_t=$test_spec
  [ "$tp" != "$v" ] && spec_t=${tp#*:}
  step "tests-$v" env FB_FLASH_BWD="$v" "$tests" "$spec_t"
done
verify_shapes=("--seq 1000 --batch 3 --heads 12 --kv-heads 6 --dim 128 --dtype bf16"
               "--seq 333 --heads 8 --kv-heads 1 --dim 64 --dtype fp16"
               "--seq 1000 --batch 3 --heads 6 --dim 64 --dtype fp16")
for vs in ${VERIFY_VARIANTS-standard $probes}; do  # NAME or NAME:K (only the first K shapes)
  v=${vs%%:*} n=${#verify_shapes[@]}
  [ "$vs" != "$v" ] && n=${vs#*:}
  cmd="true"
  for shape in "${verify_shapes[@]:0:$n}"; do cmd+=" && '$fb' verify -q $shape --causal both --pass bwd"; done
  step "verify-$v" env FB_FLASH_BWD="$v" sh -c "$cmd"
done
# Run 1 of each variant verifies every row it times; later runs time the same cases unverified.
python3 -c "import json, sys; s = json.load(open(sys.argv[1])); s['verify'] = False; json.dump(s, open(sys.argv[2], 'w'))" \
  "$spec" "$out/spec-noverify.json"
run() {  # variant rep
  local s=$spec f
  [ "$2" = 1 ] && { [ "$1" != standard ] || [ "${VERIFY_DEFAULT:-1}" = 1 ]; } || s=$out/spec-noverify.json
  f=$(filter_of "$1")
  step "run-$1-$2" env FB_FLASH_BWD="$1" "$fb" run "$s" --no-ceilings -q ${f:+--filter "$f"} \
    -o "$out/flash-$1-$2.json"
}
if [ "${TIMING:-1}" = 1 ]; then
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
fi

ncu_variants=${NCU_VARIANTS-standard dqrows}
if [ "${NCU:-1}" = 1 ]; then
  ncu=${NCU_BIN:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
  sections=(--section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis
            --section MemoryWorkloadAnalysis --section SpeedOfLight)
  for v in $ncu_variants; do
    [ "$(left)" -ge 10 ] && STEP_TIMEOUT=$(( $(left) < 25 ? $(left) : 25 )) step "ncu-$v" env FB_FLASH_BWD="$v" \
      "$ncu" --kernel-name regex:bwd_main_tc_grid_kernel --launch-count 1 "${sections[@]}" \
      --page raw --csv "$fb" run configs/flashbwd-h200.json --filter 'n16384-d128-bf16-full' \
      --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q
  done
  if [ "${NCU_FA2:-1}" = 1 ]; then
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
fi

python3 - "$out" "$pairs" "${NCU_FA2_LOG:-}" "$ncu_variants" $probes <<'PY' | tee "$out/table.txt"
import csv, io, json, os, sys
out, pairs, fa2_log, ncu_variants, probes = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].split(), sys.argv[5:]
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
unverified = [f"{v}:{k}" for v in checked for k in keys if first(v, k)
              and not any((r.get(k) or {}).get("verified") for r in runs[v])]
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
    sp = [max(m) / min(m) - 1 for v in variants
          for m in [[r[k]["time_ms"]["median"] for r in runs[v] if k in r]] if len(m) >= 2]
    row += f"{100 * max(sp):>7.1f}%" if sp else f'{"-":>8}'
    print(row)

def ncu(path):
    try:
        text = open(path).read()
    except OSError:
        return {}
    lines = [l for l in text.splitlines() if l.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if len(rows) < 3:
        return {}
    head, units, vals = rows[0], rows[1], rows[2]  # --page raw --csv: names, units, one launch
    return {h: (v, u) for h, u, v in zip(head, units, vals)}
cols = [(v, ncu(os.path.join(out, f"ncu-{v}.log"))) for v in ncu_variants]
fa2_path = os.path.join(out, "ncu-fa2.log") if os.path.exists(os.path.join(out, "ncu-fa2.log")) else fa2_log
cols.append(("FA2" if fa2_path != fa2_log else "FA2 (earlier)", ncu(fa2_path) if fa2_path else {}))
cols = [(n, d) for n, d in cols if d]
if cols:
    def num(d, k):
        try:
            return float(d[k][0].replace(",", ""))
        except (KeyError, ValueError):
            return None
    want = ["gpu__time_duration.sum", "smsp__inst_executed.sum",
            "smsp__issue_active.avg.pct_of_peak_sustained_active", "smsp__warps_eligible.avg.per_cycle_active",
            "smsp__average_warp_latency_per_inst_issued.ratio",
            "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
            "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
            "l1tex__lsuin_requests.avg.pct_of_peak_sustained_elapsed",
            "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed",
            "lts__throughput.avg.pct_of_peak_sustained_elapsed", "lts__t_sectors.avg.pct_of_peak_sustained_elapsed",
            "lts__d_atomic_input_cycles_active.avg.pct_of_peak_sustained_elapsed",
            "lts__t_sector_hit_rate.pct", "launch__registers_per_thread", "launch__grid_size"]
    stalls = sorted({k for _, d in cols for k in d
                     if "issue_stalled" in k and k.endswith("per_issue_active.ratio") and "not_issued" not in k},
                    key=lambda k: -(num(cols[0][1], k) or 0))[:12]
    print(f"ncu, one launch each, d = 128 N = 16k non-causal bf16: " + " | ".join(n for n, _ in cols))
    for k in want + stalls:
        vals = [num(d, k) for _, d in cols]
        if all(x is None for x in vals):
            continue
        name = k.replace("smsp__average_warps_issue_stalled_", "stall ").replace("_per_issue_active.ratio", "")
        print(f"  {name:70}" + "".join(f"{x:>14.4g}" if x is not None else f'{"-":>14}' for x in vals))
PY
printf '%s\n' "${summary[@]}"
exit "$failed"
