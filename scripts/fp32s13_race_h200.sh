#!/usr/bin/env bash
# Session 13, the fp32 backward's racecheck discriminating run (<= 60 s; BUDGET, default 58):
#   scripts/fp32s13_race_h200.sh OUTDIR [BUILD_DIR=build]
# The question (docs/perf-notes.md, fp32 backward "Session 12"): session 12's final call (F12b) reported 387 racecheck
# hazards on configs/sanitize-fp32-bwd-race.json, 384 of them at consumer 1's d = 128 dS^T hi stores against consumer
# 0's dK A-fragment loads (st_shared_u32+0x4f50 / 0x4f90 / 0x50d0 against ld_shared_f32+0x5800 / 0x5810 / 0x5820),
# the pair session 11 audited as ordered by barrier 4 (a false positive). FB_SM90_FP32_BWD_PROBE=racebar adds a second
# bar.sync over both consumers right after that barrier. If the reports vanish under racebar and not under the
# default in the same run, the tool, not the kernel, made them (it does not follow the first barrier); if they stay
# under racebar, something else orders (or fails to order) those accesses.
# Both runs as F12b's (which reproduced them): racecheck with every hazard printed, verified against fp64, no
# warm-up loop, here on the d = 128 case alone (--filter d128): the default first, then racebar.
# Prints last: per setting, the distinct (kind, read pc, write pc) triples, then the table (rc, seconds,
# RACECHECK SUMMARY count, hazards printed, distinct pc triples).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${1:?usage: scripts/fp32s13_race_h200.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
mkdir -p "$out"
fb="$build/flashbench"
step_timeout=28
step_tail=0
step_name_width=13
# shellcheck source=scripts/h200_step.sh
source scripts/h200_step.sh
[ -x "$fb" ] || { echo "fp32s13_race_h200.sh: $fb is missing" >&2; exit 2; }
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null
budget=${BUDGET:-58}
left() { echo $((budget - SECONDS)); }

settings="default racebar"
for pr in $settings; do
  limit=$(( $(left) - 1 ))
  [ "$pr" = default ] && [ "$limit" -gt 28 ] && limit=28  # leave racebar its share
  [ "$limit" -ge 5 ] || { echo "race-$pr skipped: $(left) s left" >&2; continue; }
  # Unset (not "default") for the default: any word other than a probe's is the shipping kernel, but unset is what
  # F12b ran.
  if [ "$pr" = default ]; then env=(env -u FB_SM90_FP32_BWD_PROBE); else env=(env FB_SM90_FP32_BWD_PROBE="$pr"); fi
  STEP_TIMEOUT=$limit step "race-$pr" "${env[@]}" compute-sanitizer --tool racecheck --racecheck-report all \
    --print-limit 1000000 --show-backtrace no --error-exitcode 86 "$fb" run configs/sanitize-fp32-bwd-race.json \
    --filter d128 --backend cuda -q --no-ceilings --warmup-time 0 -o "$out/race-$pr.json"
done

printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
python3 - "$out" $settings <<'PY'
import collections, json, os, re, sys
out, settings = sys.argv[1], sys.argv[2:]
rows = []
for pr in settings:
    log = os.path.join(out, f"race-{pr}.log")
    if not os.path.exists(log):
        rows.append((pr, "skipped", "-", "-", "-", "-"))
        continue
    triples, cur, total, printed = collections.Counter(), None, "-", 0
    for line in open(log, errors="replace"):
        m = re.search(r"RACECHECK SUMMARY: (\d+) hazard", line)
        if m:
            total = m.group(1)
        m = re.search(r"Potential (\w+) hazard", line)
        if m:
            printed += 1
            cur = {"kind": m.group(1)}
            continue
        m = re.search(r"(Read|Write) Thread \([\d, ]+\) at (.*?) in \S+$", line.rstrip())
        if m and cur is not None:
            cur[m.group(1)] = re.sub(r"\(.*\)", "", m.group(2))  # fb::cuda::ptx::ld_shared_f32+0x5800
            if "Read" in cur and "Write" in cur:
                triples[(cur["kind"], cur["Read"], cur["Write"])] += 1
                cur = None
    print(f"race-{pr}: RACECHECK SUMMARY {total} hazards, {printed} printed, {len(triples)} distinct (kind, read pc, write pc):")
    for (kind, r, w), n in triples.most_common(6):
        print(f"  {n:6} {kind} read {r} write {w}")
    verified = "-"
    try:
        recs = json.load(open(os.path.join(out, f"race-{pr}.json"))).get("results", [])
        if recs:  # status ok and verified against fp64 (the FP32 rule), per row
            verified = f"{sum(1 for r in recs if r.get('status') == 'ok' and r.get('verified'))}/{len(recs)}"
    except (OSError, ValueError, AttributeError):
        pass
    rows.append((pr, "", total, str(printed), str(len(triples)), verified))
summary = {}
for line in open(os.path.join(out, "summary.txt")) if os.path.exists(os.path.join(out, "summary.txt")) else []:
    name, rest = line.split(maxsplit=1)
    summary[name] = rest.strip()
lines = ["fp32 backward racecheck, configs/sanitize-fp32-bwd-race.json --filter d128 (N = 130, 2 heads on 1 K/V head):",
         f"{'setting':10} | {'rc, time':14} | {'SUMMARY':>7} | {'printed':>7} | {'pc triples':>10} | verified"]
for pr, skipped, total, printed, distinct, verified in rows:
    state = skipped or summary.get(f"race-{pr}", "-")
    lines.append(f"{pr:10} | {state:14} | {total:>7} | {printed:>7} | {distinct:>10} | {verified}")
open(os.path.join(out, "table.txt"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
echo "failed steps: $failed (racecheck exits 86 on any hazard)"
exit "$failed"
