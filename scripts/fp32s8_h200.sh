#!/usr/bin/env bash
# flash-sm90's fp32 (3xTF32 on wgmma, issue 15) timed against naive (exact FP32) on an H200, with variants:
#   scripts/fp32s8_h200.sh OUTDIR [BUILD_DIR=build]
# (Named for session 8; it replaces session 7's scripts/fp32s7_h200.sh, whose forward pass is here.)
# Environment (words separated by spaces; empty = none):
#   FP32_BWD_PROBES  FB_SM90_FP32_BWD_PROBE words (read by kernels/flash_sm90/flash_sm90_tf32_bwd.cu in a
#                    session that adds probes), default none
#   FP32_BWD_FILTER  --filter of the naive / default rows, default all of the config's rows
#   FP32_BWD_PROBE_FILTER  --filter of the probes' rows, default d128
#   FP32_BWD_PROBE_KERNELS  --kernels of the probes' runs, default flash-sm90 (session 14: naive,flash-sm90, so that
#                    the probe's rows are verified by the strict FP32 rule, the 2x-baseline one, not the dtype bound)
#   FP32_BWD_CONFIG  the backward's sweep spec, default configs/h200-fp32-bwd-s8.json (session 11:
#                    configs/h200-fp32-sm90.json, whose N goes to 8192, with --warmup 1 --reps 3 and a filter)
#   FP32_BWD_ROUNDS  rounds of the backward, default 2; FP32_BWD_BUDGET (s): no round starts after it, default none
#   FP32_FWD         1: also the forward (configs/h200-fp32-sm90.json at N 1024/4096/8192, d 64/128, causal or
#                    not), default 0
#   FP32_FWD_PROBES  FB_SM90_FP32_FWD_PROBE words (flash_sm90_tf32_launch.cuh), default "grouped"
# Backward: configs/h200-fp32-bwd-s8.json (16k tokens, N 1024/4096, d 64/128, causal or not, every row verified
# against fp64), naive and flash-sm90, then each probe; the whole round twice (runs drift 2-3%: each cell is the
# faster of its two). The sanitizers and the GPU tests: scripts/fp32s8_race_h200.sh.
# Last: one table per pass, TFLOP/s per column and naive time / kernel time for the default and the best
# variant; * = not verified ok.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${1:?usage: scripts/fp32s8_h200.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
mkdir -p "$out"
fb="$build/flashbench"
step_timeout=40
step_tail=0
step_name_width=14
# shellcheck source=scripts/h200_step.sh
source scripts/h200_step.sh
ensure_build fp32s8_h200.sh
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null

bwd_probes=${FP32_BWD_PROBES-}
fwd_probes=${FP32_FWD_PROBES-grouped}
[ "${FP32_FWD:-0}" = 1 ] || fwd_probes=""

if [ "${FP32_FWD:-0}" = 1 ]; then
  fwd_filter='n(1024|4096|8192)-d(64|128)-fp32-(full|causal)-fwd'
  run_fwd() {  # name, kernels
    step "$1" "$fb" run configs/h200-fp32-sm90.json --filter "$fwd_filter" --kernels "$2" --warmup 2 --reps 5 \
      --no-ceilings -q -o "$out/$1.json"
  }
  run_fwd fwd naive,flash-sm90
  for pr in $fwd_probes; do
    FB_SM90_FP32_FWD_PROBE=$pr run_fwd "fwd-$pr" flash-sm90
  done
fi
bwd_config=${FP32_BWD_CONFIG:-configs/h200-fp32-bwd-s8.json}
bwd_opts=(--warmup 1 --reps 3)  # the s8 config's own counts; the larger configs' are cut to them
for round in $(seq 1 "${FP32_BWD_ROUNDS:-2}"); do
  if [ -n "${FP32_BWD_BUDGET:-}" ] && [ "$SECONDS" -ge "$FP32_BWD_BUDGET" ]; then
    echo "round $round skipped: ${SECONDS}s past the budget" >&2
    break
  fi
  step "bwd.$round" "$fb" run "$bwd_config" --filter "${FP32_BWD_FILTER:-.}" "${bwd_opts[@]}" \
    --kernels naive,flash-sm90 --no-ceilings -q -o "$out/bwd.$round.json"
  for pr in $bwd_probes; do
    FB_SM90_FP32_BWD_PROBE=$pr step "bwd-$pr.$round" "$fb" run "$bwd_config" \
      --filter "${FP32_BWD_PROBE_FILTER:-d128}" "${bwd_opts[@]}" --kernels "${FP32_BWD_PROBE_KERNELS:-flash-sm90}" \
      --no-ceilings -q \
      -o "$out/bwd-$pr.$round.json"
  done
done

printf '%s\n' "${summary[@]}"
python3 - "$out" "$fwd_probes" "$bwd_probes" "${FP32_FWD:-0}" <<'PY' | tee "$out/table.txt"
import json, os, sys
out, fwd_probes, bwd_probes, fwd = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4] == "1"
def load(name):
    try:
        return json.load(open(os.path.join(out, name + ".json")))["results"]
    except (OSError, ValueError, KeyError):
        return []
def table(title, base, probes, rounds):
    # cells[(d, causal, N)][column] = (verified ok, tflops, median ms), the faster round of each cell
    cells = {}
    for name, col_of in [(base, lambda k: k)] + [
            (f"{base}-{p}", lambda k, p=p: p if k == "flash-sm90" else None) for p in probes]:
        for rnd in rounds:
            for r in load(name + rnd):
                c = r["case"]
                col = col_of(r["kernel"])
                if not col:
                    continue
                cell = (r["status"] == "ok" and r.get("verified") is not False, r.get("tflops"),
                        r.get("time_ms", {}).get("median"))
                row = cells.setdefault((c["head_dim"], c["causal"], c["seq"]), {})
                old = row.get(col)
                if old is None:
                    row[col] = cell
                else:  # not ok if either round is not; the faster round's figures
                    fast = min(old, cell, key=lambda x: float("inf") if x[2] is None else x[2])
                    row[col] = (old[0] and cell[0], fast[1], fast[2])
    cols = ["naive", "flash-sm90"] + probes
    short = lambda c: "default" if c == "flash-sm90" else c
    print(title)
    print(f"{'d':>3} {'causal':>6} {'N':>5} | " + " | ".join(f"{short(c)[:10]:>10}" for c in cols) +
          " | x default | x best (variant)")
    for key in sorted(cells):
        row = cells[key]
        def fmt(c):
            if c not in row or row[c][1] is None:
                return f"{'-':>10}"
            return f"{row[c][1]:9.1f}{'' if row[c][0] else '*'}"
        def ratio(c):
            try:
                return row["naive"][2] / row[c][2]
            except (KeyError, TypeError, ZeroDivisionError):
                return None
        xd = ratio("flash-sm90")
        ok = [(ratio(c), c) for c in cols[1:] if c in row and row[c][0] and ratio(c)]
        best = max(ok) if ok else (None, "-")
        xs = f"{xd:8.2f}x" if xd else f"{'-':>9}"
        xb = f"{best[0]:6.2f}x ({short(best[1])})" if best[0] else "-"
        print(f"{key[0]:>3} {str(key[1]):>6} {key[2]:>5} | " + " | ".join(fmt(c) for c in cols) + f" | {xs} | {xb}")
    for name in [base] + [f"{base}-{p}" for p in probes]:
        for rnd in rounds:
            for r in load(name + rnd):
                if r["status"] != "ok" or r.get("verified") is False:
                    print("NOT OK:", name + rnd, r.get("key"), r["kernel"], r["status"], r.get("verified"),
                          r.get("reason", ""))
if fwd:
    table("fp32 forward TFLOP/s: naive (exact FP32), flash-sm90 default, flash-sm90 under FB_SM90_FP32_FWD_PROBE=...",
          "fwd", fwd_probes, [""])
table("fp32 backward TFLOP/s (every row verified against fp64; the faster of two rounds): naive, flash-sm90 "
      "default, flash-sm90 under FB_SM90_FP32_BWD_PROBE=...", "bwd", bwd_probes, [".1", ".2"])
PY
echo "failed steps: $failed"
exit "$failed"
