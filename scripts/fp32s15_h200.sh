#!/usr/bin/env bash
# Session 15's fp32 backward call (issue 15, flash-sm90 fp32 backward d = 64; prepared in session 14, round 3), in
# <= 65 s (BUDGET, default 62):
#   scripts/fp32s15_h200.sh OUTDIR [BUILD_DIR=build]
# (Ran as session 15's call A, results/h200/s15/callA/fp32/. roles and dqg2 were removed after it (code in the history,
# commit dcff780): FB_SM90_FP32_BWD_PROBE now refuses both words, so the script is that call's record.)
# The probes (FB_SM90_FP32_BWD_PROBE, d = 64 3xTF32; kernels/flash_sm90/flash_sm90_tf32_bwd*; docs/perf-notes.md fp32
# backward, "Session 15 (prepared in session 14)"):
#   dqg2   session 14's: dQ^T with two k8 steps a commit group (call B: +0.0-1.9%), a re-measure
#   roles  NEW, never run before this call: 64 keys a block, 64 queries a tile; consumer 0 S^T / P / dV, consumer 1
#          dP^T / dS / dK, each half of the queries' dQ^T (Tf32BwdRolesTraits, tf32_bwd_consume_roles)
# 1. GPU tests [sm90tf32] under each probe (3xTF32 within the FP32 rule against fp64, 1xTF32 failing it). A probe
#    whose tests hang (rc 124: e.g. a barrier protocol that deadlocks) is dropped from the timing.
# 2. Timing (scripts/fp32s8_h200.sh; configs/h200-fp32-sm90.json's d = 64 backward rows: non-causal N 1024 / 4096 /
#    8192, causal 4096; warmup 1, reps 3; default, then each probe, interleaved; two rounds while the budget allows,
#    each cell the faster). naive (exact FP32, the peer) runs in EVERY process, so that every row, the probes' too,
#    is verified against fp64 by the strict FP32 rule (2x-baseline: O, LSE, dQ, dK, dV within twice naive's error).
# 3. While time is left: compute-sanitizer racecheck, then synccheck, of `roles` on configs/sanitize-fp32-bwd-race.json
#    at d = 64 (N = 130: three 64-key blocks, the last partial; 2 query heads on 1 K/V head; verified against fp64):
#    its barrier protocol between the two consumers is new.
# 4. While time is left: ncu of `roles`, then of the default (one launch, N = 4096 non-causal, source counters).
# Prints last: the steps, the verification rule and worst error / bound per row and setting, the sanitizer
# summaries, the ncu comparison, then the timing table (x = naive time / kernel time), also in OUTDIR/table.txt.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${1:?usage: scripts/fp32s15_h200.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
mkdir -p "$out"
fb="$build/flashbench"
tests="$build/tests/flashbench_gpu_tests"
step_timeout=20
step_tail=0
step_name_width=15
# shellcheck source=scripts/h200_step.sh
source scripts/h200_step.sh
ensure_build fp32s15_h200.sh
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null
budget=${BUDGET:-62}
left() { echo $((budget - SECONDS)); }
cap() { local l; l=$(left); echo $(( l < $1 ? l : $1 )); }  # a step's limit: at most $1 s, never past the budget
all_probes="dqg2 roles"
rows='n(1024|4096|8192)-d64-fp32-full-bwd|n4096-d64-fp32-causal-bwd'

# 1. The GPU tests first (the strict check; ~1 s each in session 14's call B).
probes=""
for pr in $all_probes; do
  [ "$(cap 6)" -ge 2 ] || { echo "tests-$pr skipped: $(left) s left" >&2; continue; }
  FB_SM90_FP32_BWD_PROBE=$pr STEP_TIMEOUT=$(cap 6) step_result='test cases' step "tests-$pr" "$tests" "[sm90tf32]"
  if [ "$step_rc" -eq 124 ]; then echo "tests-$pr timed out: $pr left out of the timing" >&2
  else probes="$probes $pr"
  fi
done
probes=${probes# }

# 2. Timing: three processes a round (default, dqg2, roles, each with naive), ~4-5 s each; round 2 only if round 1
#    ended within 20 s of the budget.
STEP_TIMEOUT=$(cap 36) step timing env STEP_TIMEOUT=9 FP32_BWD_PROBES="$probes" \
  FP32_BWD_CONFIG=configs/h200-fp32-sm90.json FP32_BWD_BUDGET=20 FP32_BWD_FILTER="$rows" FP32_BWD_PROBE_FILTER="$rows" \
  FP32_BWD_PROBE_KERNELS=naive,flash-sm90 scripts/fp32s8_h200.sh "$out/timing" "$build"
# Stopped at its limit, the timing script has printed no table: build it from the rounds' JSON (no round runs).
[ -f "$out/timing/table.txt" ] || FP32_BWD_ROUNDS=0 FP32_BWD_PROBES="$probes" timeout 5 scripts/fp32s8_h200.sh \
  "$out/timing" "$build" >/dev/null 2>&1

# 3. The sanitizers on `roles` while time is left (racecheck exits 86 on any hazard; synccheck on any error).
sanitized=()
for tool in racecheck synccheck; do
  case " $probes " in *" roles "*) ;; *) break ;; esac
  [ "$(left)" -ge 8 ] || { echo "$tool-roles skipped: $(left) s left" >&2; continue; }
  extra=()
  [ "$tool" = racecheck ] && extra=(--racecheck-report all)
  FB_SM90_FP32_BWD_PROBE=roles STEP_TIMEOUT=$(cap 20) step "$tool-roles" compute-sanitizer --tool "$tool" \
    "${extra[@]}" --print-limit 200 --show-backtrace no --error-exitcode 86 "$fb" run configs/sanitize-fp32-bwd-race.json \
    --filter d64 --backend cuda -q --no-ceilings --warmup-time 0 -o "$out/$tool-roles.json"
  sanitized+=("$tool-roles rc=$step_rc: $(grep -E 'SUMMARY' "$out/$tool-roles.log" | tail -n 1)")
done

# 4. While time is left: ncu of one launch of `roles` (d = 64 non-causal N = 4096) with the source counters, then the
#    default's (sessions 14's calls A and B have the default's: results/h200/s14/callA/fp32/, callB/r2-fp32/): is the
#    producer (raw_full / qd_empty / t_empty waits, LSU) what limits `roles`? (scripts/fp32s14_waits.py: the mbarriers'
#    layout is the same.)
ncu=${NCU_BIN:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
sections=(--section WarpStateStats --section SourceCounters --section SchedulerStats --section ComputeWorkloadAnalysis
          --section MemoryWorkloadAnalysis --section SpeedOfLight)
ncu_runs=()
for pr in roles default; do
  [ "$pr" = default ] || case " $probes " in *" $pr "*) ;; *) continue ;; esac
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
    ncu_runs+=("$pr")
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
echo "sanitizers (roles, d = 64 N = 130 GQA): ${sanitized[*]:-not run}"
if [ "${#ncu_runs[@]}" -gt 0 ]; then
  python3 scripts/fp32s14_waits.py "$out" "${ncu_runs[@]}"
  for pr in "${ncu_runs[@]}"; do [ -f "$out/source-$pr.csv" ] && gzip -f "$out/source-$pr.csv"; done
fi
cat "$out/timing/table.txt" 2>/dev/null
cp "$out/timing/table.txt" "$out/table.txt" 2>/dev/null
echo "failed steps: $failed"
exit "$failed"
