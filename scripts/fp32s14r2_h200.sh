#!/usr/bin/env bash
# Session 14's round 2 (call B) for flash-sm90's fp32 backward (issue 15, d = 64 non-causal), in <= 50 s (BUDGET):
#   scripts/fp32s14r2_h200.sh OUTDIR [BUILD_DIR=build]
# (Branch fp32r2; docs/perf-notes.md fp32 backward, "Session 14"; ran as session 14's call B,
# results/h200/s14/callB/r2-fp32/. dqahead was removed after it: FB_SM90_FP32_BWD_PROBE now refuses the word, so the
# script is that call's record; dqg2, Tf32BwdDqGroup<.., 2>, followed in session 15.) The probes (FB_SM90_FP32_BWD_PROBE, d = 64
# 3xTF32; Tf32BwdDqAhead in kernels/flash_sm90/flash_sm90_tf32_bwd_traits.h at the call) change only
# dQ^T = K^T dS^T's cadence, the
# largest piece of the consumers' chain in call A's source-level profile (29% of their stall samples):
#   dqahead  the next commit group's K^T fragments loaded before the wait for the previous group (one k8 step a
#            group, as shipped), so that their shared-memory latency runs under the wgmmas in flight;
#   dqg2     two k8 steps a commit group (4 waits instead of 8), fragments loaded after the wait as shipped.
# The same products into the same accumulators in the same order: dK and dV bit-identical to the default.
# 1. GPU tests [sm90tf32] under each probe (3xTF32 within the FP32 rule, 1xTF32 failing it).
# 2. Timing (scripts/fp32s8_h200.sh; configs/h200-fp32-sm90.json's d = 64 backward rows: non-causal N 1024 / 4096 /
#    8192, causal 4096; warmup 1, reps 3; two rounds, each cell the faster). naive (exact FP32, the peer) runs in
#    EVERY process, the probes' too, so that every row, the probes' included, is verified against fp64 by the strict
#    FP32 rule (2x-baseline: within twice naive's error), not the dtype bound.
# 3. Bits: one small d = 64 case (N = 1024, 2 heads on 1 K/V head, verified) dumped under the default and each
#    probe, compared byte for byte: dK, dV, O, LSE must be identical; dQ is added by reductions in global memory in
#    a varying order, so its last bits may differ between any two runs.
# 4. While time is left: ncu of one launch, d = 64 non-causal N = 4096, under dqahead then the default (call A has the
#    default's: results/h200/s14/callA/fp32/), with the source counters: time, tensor pipe, LSU, stalls, the samples
#    at each wait and in dQ^T's region (scripts/fp32s14_waits.py).
# Prints last: the steps, the verification rules and worst error / bound per setting, the bits, the ncu comparison,
# then the timing table (x = naive time / kernel time), also in OUTDIR/table.txt.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${1:?usage: scripts/fp32s14r2_h200.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
mkdir -p "$out"
fb="$build/flashbench"
tests="$build/tests/flashbench_gpu_tests"
step_timeout=20
step_tail=0
step_name_width=15
# shellcheck source=scripts/h200_step.sh
source scripts/h200_step.sh
ensure_build fp32s14r2_h200.sh
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null
budget=${BUDGET:-47}
left() { echo $((budget - SECONDS)); }
cap() { local l; l=$(left); echo $(( l < $1 ? l : $1 )); }  # a step's limit: at most $1 s, never past the budget
probes="dqahead dqg2"
rows='n(1024|4096|8192)-d64-fp32-full-bwd|n4096-d64-fp32-causal-bwd'

# The GPU tests first (the strict check; ~1-2 s each).
for pr in $probes; do
  [ "$(cap 5)" -ge 2 ] || { echo "tests-$pr skipped: $(left) s left" >&2; continue; }
  FB_SM90_FP32_BWD_PROBE=$pr STEP_TIMEOUT=$(cap 5) step_result='test cases' step "tests-$pr" "$tests" "[sm90tf32]"
done

# Timing: three processes a round (default, dqahead, dqg2, each with naive), ~4-5 s each (call A: 4-5 s with naive);
# round 2 only if round 1 ended within 18 s.
STEP_TIMEOUT=$(cap 37) step timing env STEP_TIMEOUT=9 FP32_BWD_PROBES="$probes" \
  FP32_BWD_CONFIG=configs/h200-fp32-sm90.json FP32_BWD_BUDGET=18 FP32_BWD_FILTER="$rows" FP32_BWD_PROBE_FILTER="$rows" FP32_BWD_PROBE_KERNELS=naive,flash-sm90 \
  scripts/fp32s8_h200.sh "$out/timing" "$build"
# Stopped at its limit, the timing script has printed no table: build it from the rounds' JSON (no round runs).
[ -f "$out/timing/table.txt" ] || FP32_BWD_ROUNDS=0 FP32_BWD_PROBES="$probes" timeout 5 scripts/fp32s8_h200.sh \
  "$out/timing" "$build" >/dev/null 2>&1

python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
s.update(name='fp32-bwd-bits-d64', seq=[1024], head_dim=[64], reps=1,
         description='the d = 64 fp32 backward dumped under each probe (scripts/fp32s14r2_h200.sh)')
json.dump(s, open(sys.argv[2], 'w'), indent=1)" configs/sanitize-fp32-bwd-race.json "$out/bits-spec.json"
dumps=$(mktemp -d)
for pr in default $probes; do
  [ "$(cap 4)" -ge 2 ] || { echo "bits-$pr skipped: $(left) s left" >&2; continue; }
  FB_SM90_FP32_BWD_PROBE=$pr STEP_TIMEOUT=$(cap 4) step "bits-$pr" "$fb" run "$out/bits-spec.json" --backend cuda -q \
    --no-ceilings --warmup-time 0 --dump "$dumps/$pr" -o "$out/bits-$pr.json"
done
bits=()
for pr in $probes; do
  for f in "$dumps/default"/*/flash-sm90.*.npy; do
    [ -f "$f" ] || continue
    g="$dumps/$pr/${f#"$dumps/default/"}"
    name=$(basename "$f" .npy)
    if [ ! -f "$g" ]; then bits+=("$pr ${name#flash-sm90.}: missing")
    elif cmp -s "$f" "$g"; then bits+=("$pr ${name#flash-sm90.}: identical")
    else bits+=("$pr ${name#flash-sm90.}: differs")
    fi
  done
done
rm -rf "$dumps"

# ncu with the source counters (as call A's job), one report per setting, read back and deleted.
ncu=${NCU_BIN:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
sections=(--section WarpStateStats --section SourceCounters --section SchedulerStats --section ComputeWorkloadAnalysis
          --section MemoryWorkloadAnalysis --section SpeedOfLight)
ncu_runs=(dqahead default)
for pr in "${ncu_runs[@]}"; do
  [ "$(left)" -ge 9 ] || { echo "ncu-$pr skipped: $(left) s left" >&2; continue; }
  rm -f "$out/ncu-$pr.ncu-rep"
  FB_SM90_FP32_BWD_PROBE=$pr STEP_TIMEOUT=$(cap 10) step "ncu-$pr" "$ncu" -f -o "$out/ncu-$pr" \
    --kernel-name regex:flash_sm90_tf32_bwd_kernel --launch-count 1 "${sections[@]}" \
    "$fb" run configs/h200-fp32-sm90.json --filter 'n4096-d64-fp32-full-bwd' --kernels flash-sm90 \
    --warmup 0 --reps 1 --warmup-time 0 --no-ceilings -q
  if [ -f "$out/ncu-$pr.ncu-rep" ]; then
    [ "$(left)" -ge 2 ] && timeout "$(cap 5)" "$ncu" -i "$out/ncu-$pr.ncu-rep" --page raw --csv >"$out/ncu-$pr.csv" 2>&1
    [ "$(left)" -ge 2 ] && timeout "$(cap 5)" "$ncu" -i "$out/ncu-$pr.ncu-rep" --page source --csv --print-source sass \
      >"$out/source-$pr.csv" 2>&1
    rm -f "$out/ncu-$pr.ncu-rep"
  fi
done

printf '%s\n' "${summary[@]}"
# Which rule verified each setting's rows (2x-baseline when naive ran in the same process) and the worst
# error / bound over the outputs, per row.
read -ra probe_list <<<"$probes"
python3 - "$out/timing" default "${probe_list[@]}" <<'PY'
import json, os, sys
d = sys.argv[1]
print("verification (both rounds; worst err / bound over O, LSE, dQ, dK, dV; rule):")
for pr in sys.argv[2:]:
    name = "bwd" if pr == "default" else f"bwd-{pr}"
    cells = []
    for rnd in (1, 2):
        try:
            res = json.load(open(os.path.join(d, f"{name}.{rnd}.json")))["results"]
        except (OSError, ValueError, KeyError):
            continue
        for r in res:
            if r["kernel"] != "flash-sm90":
                continue
            e = r.get("errors") or {}
            worst = max((v["ref"] / v["bound"] for v in e.values() if isinstance(v, dict) and v.get("bound")),
                        default=float("nan"))
            c = r["case"]
            cells.append(f"{'c' if c['causal'] else ''}{c['seq']}:{r.get('verified')}/{worst:.3f}/{e.get('rule', '?')}")
    print(f"  {pr:8} " + " ".join(cells))
PY
echo "bits against the default (N = 1024, d = 64): ${bits[*]:-none compared}"
python3 scripts/fp32s14_waits.py "$out" "${ncu_runs[@]}"
for pr in "${ncu_runs[@]}"; do [ -f "$out/source-$pr.csv" ] && gzip -f "$out/source-$pr.csv"; done
cat "$out/timing/table.txt" 2>/dev/null
cp "$out/timing/table.txt" "$out/table.txt" 2>/dev/null
echo "failed steps: $failed"
exit "$failed"
