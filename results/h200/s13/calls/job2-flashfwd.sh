#!/usr/bin/env bash
# Session 13 round 2, flashfwd (call B; data for session 14, no default changes; ~30 s, <= 40 s by its guards;
# env BUILD, OUTDIR): where the shipped d = 128 forward's warps wait, instruction by instruction, beside
# FlashAttention-2's kernel on the same shape. Call A's expv / expv2 (the exponentials moved after the V barrier)
# lost 1-6% on every d = 128 row, so the next change should come from a measured stall map, not another reordering.
# Session 12's ncu pair (results/h200/s12/final/r2-flashfwd/) gave only kernel-wide figures: issue active 31% vs
# FA2's 44%, stalls per issued instruction `wait` 2.37 vs 1.33, short_scoreboard 0.89 vs 0.35.
# Nsight Compute, one launch each, b32-h16-kv16-n512-d128-bf16-full-fwd (the row furthest behind FA2: 0.975x in
# call A): the shipped flash kernel (through flashbench, the row verified) and FA2's flash_fwd_kernel (PyTorch's
# flash backend), sections SourceCounters (warp-state sampling per SASS instruction), WarpStateStats,
# SchedulerStats, SpeedOfLight; then each report's SASS page as CSV (ncu-*-sass.csv) and its details page
# (ncu-*-details.txt), the reports themselves removed (size). table.txt (printed last): per kernel the samples by
# stall reason, by opcode, and the 24 SASS instructions with the most samples; the details' key lines.
set -uo pipefail
: "${BUILD:?BUILD}" "${OUTDIR:?OUTDIR}"
mkdir -p "$OUTDIR" && out=$(cd "$OUTDIR" && pwd) || exit 2
cd "$(dirname "$0")/../../../.." || exit 2
fb=$BUILD/flashbench
ncu=${NCU_BIN:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
t0=$SECONDS
case_key=b32-h16-kv16-n512-d128-bf16-full-fwd
python3 - configs/flashfwd-h200.json "$out/spec.json" <<'PY' || exit 2
import json, sys
s = json.load(open(sys.argv[1]))
s.update(name="flashfwd-s13-r2", seq=[512], head_dim=[128], dtype=["bf16"], causal=[False],
         description="configs/flashfwd-h200.json's d = 128 N = 512 bf16 non-causal row (job2-flashfwd.sh, s13)")
s["pass"] = ["fwd"]
json.dump(s, open(sys.argv[2], "w"), indent=1)
PY
sections=(--section SourceCounters --section WarpStateStats --section SchedulerStats --section SpeedOfLight
          --import-source no -f)
# flash: the first launch of the forward kernel (warm-up 0, one rep), the row verified against the fp64 reference.
timeout 14 "$ncu" --kernel-name regex:flash_fwd_tc_kernel --launch-count 1 "${sections[@]}" -o "$out/ncu-flash" \
  "$fb" run "$out/spec.json" --kernels flash --filter "^$case_key\$" --warmup 0 --reps 1 --warmup-time 0 \
  --no-ceilings -q -o "$out/ncu-run-flash.json" >"$out/ncu-flash.log" 2>&1
echo "ncu-flash rc=$? t=$((SECONDS - t0))s"
# FA2 (PyTorch's flash backend) on the same shape: (B, H, N, d) = (32, 16, 512, 128), bf16, non-causal.
if [ $((SECONDS - t0)) -lt 20 ]; then
  timeout 16 "$ncu" --kernel-name regex:flash_fwd_kernel --launch-count 1 "${sections[@]}" -o "$out/ncu-fa2" \
    python3 -c "
import torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
q, k, v = [torch.randn(32, 16, 512, 128, device='cuda', dtype=torch.bfloat16) for _ in range(3)]
with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    F.scaled_dot_product_attention(q, k, v)
torch.cuda.synchronize()" >"$out/ncu-fa2.log" 2>&1
  echo "ncu-fa2 rc=$? t=$((SECONDS - t0))s"
else
  echo "ncu-fa2 skipped (t=$((SECONDS - t0))s)"
fi
for n in flash fa2; do
  rep=$out/ncu-$n.ncu-rep
  [ -f "$rep" ] || { echo "ncu-$n: no report"; continue; }
  timeout 6 "$ncu" --import "$rep" --page source --print-source sass --csv >"$out/ncu-$n-sass.csv" 2>&1
  timeout 4 "$ncu" --import "$rep" --page details >"$out/ncu-$n-details.txt" 2>&1
  rm -f "$rep"
done
python3 - "$out" "$case_key" <<'PY' | tee "$out/table.txt"
import csv, io, json, os, re, sys
from collections import defaultdict
out, key = sys.argv[1], sys.argv[2]
try:
    run = [r for r in json.load(open(os.path.join(out, "ncu-run-flash.json")))["results"] if r["key"] == key]
    print(f"flash row {key} under ncu: status {run[0]['status']}, verified {run[0].get('verified')}" if run
          else f"flash row {key}: missing from ncu-run-flash.json")
except (OSError, ValueError, KeyError) as e:
    print(f"flash row {key}: no run record ({e})")
def load(path):
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return "", []
    start = next((i for i, l in enumerate(lines) if l.startswith('"Address","Source"')), None)
    if start is None:
        return "", []
    name = next((l for l in lines[:start] if l.startswith('"Kernel Name"')), "")
    return name, list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))
def num(r, k):
    try:
        return float((r.get(k) or "0").replace(",", ""))
    except ValueError:
        return 0.0
def opclass(src):
    s = re.sub(r"^\s*@!?U?P\w+\s+", "", src.strip())
    return (s.split(" ")[0] if s else "?").split(".")[0]
S = "Warp Stall Sampling (All Samples)"
for n in ("flash", "fa2"):
    name, rows = load(os.path.join(out, f"ncu-{n}-sass.csv"))
    print(f"== {n}: {name[15:150]}")
    if not rows:
        print("  (no SASS page)")
        continue
    reasons = [k for k in rows[0] if k.startswith("stall_") and "(Not Issued)" not in k]
    total = sum(num(r, S) for r in rows) or 1.0
    print(f"  {len(rows)} SASS instructions, {total:.0f} samples, "
          f"{sum(num(r, 'Instructions Executed') for r in rows):.4g} warp instructions executed")
    tot = {k: sum(num(r, k) for r in rows) for k in reasons}
    print("  samples by reason: " + ", ".join(f"{k[6:]} {v / total:.1%}"
                                               for k, v in sorted(tot.items(), key=lambda kv: -kv[1]) if v / total >= 0.01))
    by = defaultdict(lambda: defaultdict(float))
    for r in rows:
        d = by[opclass(r["Source"])]
        d["samples"] += num(r, S)
        d["count"] += 1
        d["exec"] += num(r, "Instructions Executed")
        for k in reasons:
            d[k] += num(r, k)
    print("  by opcode: share of samples, SASS instructions, warp instructions executed, top reasons")
    for c, d in sorted(by.items(), key=lambda kv: -kv[1]["samples"])[:14]:
        top = sorted(((d[k], k[6:]) for k in reasons), reverse=True)[:3]
        print(f"    {c:10} {d['samples'] / total:6.1%} {int(d['count']):5d} {d['exec']:10.3g}   " +
              ", ".join(f"{k} {v / total:.1%}" for v, k in top if v > 0))
    print("  the 24 instructions with the most samples: offset, SASS, share, top reasons")
    base = int(rows[0]["Address"], 16) if rows[0]["Address"].startswith("0x") else 0
    for r in sorted(rows, key=lambda r: -num(r, S))[:24]:
        top = sorted(((num(r, k), k[6:]) for k in reasons), reverse=True)[:2]
        off = int(r["Address"], 16) - base if r["Address"].startswith("0x") else 0
        print(f"    {off:#07x} {r['Source'].strip()[:60]:60} {num(r, S) / total:6.2%}  " +
              ", ".join(f"{k} {v / total:.2%}" for v, k in top if v > 0))
    try:
        keep = re.compile(r"^\s*(Duration|Issue Slots Busy|Issued Warp Per Scheduler|No Eligible|Active Warps Per "
                          r"Scheduler|Eligible Warps Per Scheduler|Warp Cycles Per Issued Instruction|Compute \(SM\) "
                          r"Throughput|Registers Per Thread)\b")
        for l in open(os.path.join(out, f"ncu-{n}-details.txt"), errors="replace"):
            if keep.match(l):
                print("  " + " ".join(l.split()))
    except OSError:
        pass
PY
echo "--- total $((SECONDS - t0)) s"
