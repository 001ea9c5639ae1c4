#!/usr/bin/env bash
# flash-sm90's fp32 backward (3xTF32 on wgmma, issue 15), session 8, on an H200 in about 90 s:
#   scripts/fp32s8_h200.sh OUTDIR [BUILD_DIR=build]
# 1. compute-sanitizer synccheck (scripts/sanitize.sh) on configs/sanitize-fp32-bwd.json: the backward alone
#    at N 130/256, d 64/128, both masks, GQA, verified (session 7 found synccheck's "divergent threads in
#    block" at d = 128: results/h200/s7/sanitize/; clean since commit 290a44a).
# 2. racecheck on configs/sanitize-fp32-bwd-race.json (d = 128, N = 130, one case: where the consumers
#    exchange P and dS through shared memory), every hazard kept (--print-limit), then the distinct
#    (hazard, reader pc, writer pc) pairs counted, so that one look tells which accesses it pairs.
# 3. GPU tests [sm90tf32],[fp32tc] (every fp32 kernel against fp64 under the FP32 rule; 1xTF32 must fail it).
# 4. Backward, configs/h200-fp32-bwd-s8.json (N 1024/4096, d 64/128, causal or not, every row verified
#    against fp64): naive (exact FP32) and flash-sm90.
# Last: the sanitizers' error counts, the tests' summary, and a table: TFLOP/s per column and naive
# time / kernel time; * = not verified ok.
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

san_spec=configs/sanitize-fp32-bwd.json
STEP_TIMEOUT=30 step san-sync scripts/sanitize.sh -e "$fb" -s "$san_spec" -t synccheck "$out/san-sync.json"
STEP_TIMEOUT=60 step san-race compute-sanitizer --tool racecheck --racecheck-report all --print-limit 1000000 \
  --show-backtrace no --error-exitcode 86 "$fb" run configs/sanitize-fp32-bwd-race.json --backend cuda -q \
  --no-ceilings -o "$out/san-race.json"

probes=""
tests="$build/tests/flashbench_gpu_tests"
STEP_TIMEOUT=30 step tests "$tests" "[sm90tf32],[fp32tc]"
step bwd "$fb" run configs/h200-fp32-bwd-s8.json --kernels naive,flash-sm90 --no-ceilings -q -o "$out/bwd.json"

printf '%s\n' "${summary[@]}"
echo "san-sync: $(grep -hE '^synccheck ' "$out/san-sync.log" | tail -n 1)"
echo "san-race: $(grep -hE 'RACECHECK SUMMARY' "$out/san-race.log" | tail -n 1)"
# Each hazard: "Potential WAR hazard detected at __shared__ 0x..." then "Read Thread (..) at FN+0xPC in F:L"
# and "Write Thread (..) at FN+0xPC in F:L": count the distinct (kind, read pc, write pc) triples.
sed 's/([a-z, ]*)+/+/' "$out/san-race.log" |
  awk '/Potential .* hazard/ {kind = $4} /Read Thread/ {r = $6} /Write Thread/ {print kind, "read", r, "write", $6}' |
  sort | uniq -c | sort -rn | head -n 8
for t in "$out"/tests*.log; do echo "$(basename "$t" .log): $(grep -hE "test cases" "$t" | tail -n 1)"; done
python3 - "$out" "$probes" <<'PY' | tee "$out/table.txt"
import json, os, sys
out, probes = sys.argv[1], sys.argv[2].split()
def load(name):
    try:
        return json.load(open(os.path.join(out, name + ".json")))["results"]
    except (OSError, ValueError, KeyError):
        return []
cells = {}
for name, col_of in [("bwd", lambda k: k)] + [
        (f"bwd-{p}", lambda k, p=p: p if k == "flash-sm90" else None) for p in probes]:
    for r in load(name):
        c = r["case"]
        col = col_of(r["kernel"])
        if col:
            cells.setdefault((c["head_dim"], c["causal"], c["seq"]), {})[col] = (
                r["status"] == "ok" and r.get("verified") is not False, r.get("tflops"),
                r.get("time_ms", {}).get("median"))
cols = ["naive", "flash-sm90"] + probes
short = lambda c: "default" if c == "flash-sm90" else c
print("fp32 backward TFLOP/s (every row verified against fp64): naive, flash-sm90 default, "
      "flash-sm90 under FB_SM90_FP32_BWD_PROBE=...")
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
for name in ["bwd"] + [f"bwd-{p}" for p in probes]:
    for r in load(name):
        if r["status"] != "ok" or r.get("verified") is False:
            print("NOT OK:", name, r.get("key"), r["kernel"], r["status"], r.get("verified"), r.get("reason", ""))
PY
echo "failed steps: $failed"
exit "$failed"
