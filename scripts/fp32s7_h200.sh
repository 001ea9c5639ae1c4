#!/usr/bin/env bash
# flash-sm90's fp32 (3xTF32 on wgmma, issue 15) variants of session 7 on an H200, in about a minute:
#   scripts/fp32s7_h200.sh OUTDIR [BUILD_DIR=build]
# 1. GPU tests [sm90tf32],[fp32tc] (every fp32 kernel against fp64 under the FP32 rule; 1xTF32 must
#    fail it).
# 2. Forward, configs/h200-fp32-sm90.json at N 1024/4096/8192, d 64/128, causal or not: naive (exact
#    FP32) and flash-sm90, then flash-sm90 under FB_SM90_FP32_FWD_PROBE = grouped (session 7 also ran s6,
#    pingpong, khalf, onepass: those words were removed in session 8; grouped = causal blocks in L2
#    plane groups).
# 3. Backward, configs/h200-fp32-bwd-quick.json (N 1024/4096): naive and flash-sm90 (the backward's
#    probes s6 and s6,rn were removed in session 8; scripts/fp32s8_h200.sh times its probes).
# Last: one table per pass, TFLOP/s per column and naive time / kernel time for the default and the
# best variant; * = not ok (every forward row is verified against fp64).
# Variants (kernels/flash_sm90/flash_sm90_tf32_launch.cuh, flash_sm90_tf32_bwd.cu): the shipping kernels
# split by cvt.rn (1 SASS instruction); the backward and the d = 128 forward also build wgmma descriptors
# from the tile's, and the d = 128 forward's S runs in one pass.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${1:?usage: scripts/fp32s7_h200.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
mkdir -p "$out"
fb="$build/flashbench"
step_timeout=40
step_tail=0
step_name_width=14
# shellcheck source=scripts/h200_step.sh
source scripts/h200_step.sh
ensure_build fp32s7_h200.sh
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null

bwd_probes=""
fwd_probes="grouped"  # s6, pingpong, khalf, onepass removed in session 8 (measured here in session 7)
tests="$build/tests/flashbench_gpu_tests"
step tests "$tests" "[sm90tf32],[fp32tc]"

fwd_filter='n(1024|4096|8192)-d(64|128)-fp32-(full|causal)-fwd'
run_fwd() {  # name, kernels
  step "$1" "$fb" run configs/h200-fp32-sm90.json --filter "$fwd_filter" --kernels "$2" --warmup 2 --reps 5 \
    --no-ceilings -q -o "$out/$1.json"
}
run_fwd fwd naive,flash-sm90
for pr in $fwd_probes; do
  FB_SM90_FP32_FWD_PROBE=$pr run_fwd "fwd-$pr" flash-sm90
done
step bwd "$fb" run configs/h200-fp32-bwd-quick.json --kernels naive,flash-sm90 -q -o "$out/bwd.json"
for pr in $bwd_probes; do
  FB_SM90_FP32_BWD_PROBE=$pr step "bwd-$pr" "$fb" run configs/h200-fp32-bwd-quick.json --kernels flash-sm90 -q \
    -o "$out/bwd-$pr.json"
done

printf '%s\n' "${summary[@]}"
for t in "$out"/tests*.log; do echo "$(basename "$t" .log): $(grep -hE "test cases" "$t" | tail -n 1)"; done
python3 - "$out" "$fwd_probes" "$bwd_probes" <<'PY' | tee "$out/table.txt"
import json, os, sys
out, fwd_probes, bwd_probes = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
def load(name):
    try:
        return json.load(open(os.path.join(out, name + ".json")))["results"]
    except (OSError, ValueError, KeyError):
        return []
def table(title, base, probes):
    cells = {}
    for name, col_of in [(base, lambda k: k)] + [
            (f"{base}-{p}", lambda k, p=p: p if k == "flash-sm90" else None) for p in probes]:
        for r in load(name):
            c = r["case"]
            col = col_of(r["kernel"])
            if col:
                cells.setdefault((c["head_dim"], c["causal"], c["seq"]), {})[col] = (
                    r["status"], r.get("tflops"), r.get("time_ms", {}).get("median"))
    cols = ["naive", "flash-sm90"] + probes
    print(title)
    short = lambda c: "default" if c == "flash-sm90" else c.replace("onepass", "1p").replace("pingpong", "pp").replace("desc", "d").replace("khalf", "kh")
    print(f"{'d':>3} {'causal':>6} {'N':>5} | " + " | ".join(f"{short(c)[:10]:>10}" for c in cols) +
          " | x default | x best (variant)")
    for key in sorted(cells):
        row = cells[key]
        def fmt(c):
            if c not in row or row[c][1] is None:
                return f"{'-':>10}"
            return f"{row[c][1]:9.1f}{'' if row[c][0] == 'ok' else '*'}"
        def ratio(c):
            try:
                return row["naive"][2] / row[c][2]
            except (KeyError, TypeError, ZeroDivisionError):
                return None
        xd = ratio("flash-sm90")
        ok = [(ratio(c), c) for c in cols[1:] if c in row and row[c][0] == "ok" and ratio(c)]
        best = max(ok) if ok else (None, "-")
        xs = f"{xd:8.2f}x" if xd else f"{'-':>9}"
        xb = f"{best[0]:6.2f}x ({short(best[1])})" if best[0] else "-"
        print(f"{key[0]:>3} {str(key[1]):>6} {key[2]:>5} | " + " | ".join(fmt(c) for c in cols) + f" | {xs} | {xb}")
    for name in [base] + [f"{base}-{p}" for p in probes]:
        for r in load(name):
            if r["status"] != "ok":
                print("NOT OK:", name, r.get("key"), r["kernel"], r["status"], r.get("reason", ""))
table("fp32 forward TFLOP/s: naive (exact FP32), flash-sm90 default, flash-sm90 under FB_SM90_FP32_FWD_PROBE=...",
      "fwd", fwd_probes)
table("fp32 backward TFLOP/s: naive, flash-sm90 default, flash-sm90 under FB_SM90_FP32_BWD_PROBE=...", "bwd", bwd_probes)
PY
echo "failed steps: $failed"
exit "$failed"
