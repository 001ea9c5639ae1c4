#!/usr/bin/env bash
# Session 12's device probe of the portable flash backward on GQA/MQA (issue 13), everything into OUTDIR
# (~50 s on a built tree):
#   1. checks: per entry of TEST_PROBES (VARIANT:SPEC, default "standard:[flash_split],[flash_tail]") the
#      GPU tests SPEC under that variant; per variant in VERIFY_VARIANTS (default "standard")
#      `flashbench verify --pass bwd`, both masks, on odd GQA/MQA shapes the launcher splits (by query
#      heads, and d = 128 MQA of 1025 keys: 9 key tiles, split causal and not);
#      VERIFY_SHAPES (';'-separated `flashbench verify` shape flags) replaces those shapes;
#   2. SPEC (default configs/flashbwd-gqa-h200.json: bf16, d = 128, 32/8, 32/1, 8/8, 8/1 query/K-V heads,
#      N 1k/4k/16k, both masks) as standard, probes, [torch-flash], probes reversed, standard: the variants interleaved
#      around FlashAttention-2 (scripts/peers.py on the same spec). PROBES (default
#      "splitrows:kv1-.*causal s1:h32-kv1-n16384.*causal"; call A of session 12 ran "splittile:kv1-.*causal
#      s1:h32-kv1-n16384.*causal splittile+s16:h32-kv1-n16384.*causal", before splittile became the d = 128
#      default) are variants, each optionally VARIANT:REGEX to time
#      only the rows whose key matches (ROWS, a regex, filters the default's runs and every probe without
#      its own). A variant is an FB_FLASH_BWD value, or sN (the default with
#      FB_FLASH_BWD_SPLIT=N: s1 = no head split), or NAME+sN (both). Each probe's first run verifies every
#      row it times; the default's too unless VERIFY_DEFAULT=0. PAIRS (default 2) runs per variant;
#      PEERS=0 skips torch. BUDGET (default 63 s): no step starts with less than 3 s of it left;
#   3. a table last: TFLOP/s per variant (mean of its runs), FA2 time / flash time, standard time / probe
#      time per probe (> 1: the probe is faster), the runs' spread; then per variant the FA2 ratios' range.
#     BUILD=build-h200 scripts/flashbwd_s12.sh OUTDIR
# Session 13's call A runs it on its own spec (results/h200/s13/calls/job-flashbwd.sh).
set -uo pipefail
set -f  # the probe filters and test specs hold glob characters
step_timeout=40 step_tail=2 step_name_width=16
. "$(dirname "$0")/h200_step.sh"
h200_dirs "${1:?usage: scripts/flashbwd_s12.sh OUTDIR}"
require_build flashbwd_s12.sh
spec=${SPEC:-configs/flashbwd-gqa-h200.json}
pairs=${PAIRS:-2}
budget=${BUDGET:-63}
# A step starts only with at least 3 s of BUDGET (seconds from the script's start) left, cut at what is left.
bstep() {
  local left=$((budget - SECONDS))
  if [ "$left" -lt 3 ]; then
    summary+=("$(printf "%-${step_name_width}s skipped (budget)" "$1")")
    return 0
  fi
  STEP_TIMEOUT=$((left < step_timeout ? left : step_timeout)) step "$@"
}
probe_specs=${PROBES-splitrows:kv1-.*causal s1:h32-kv1-n16384.*causal}
probes=$(for p in $probe_specs; do printf '%s ' "${p%%:*}"; done)
filter_of() {  # variant -> its row filter (ROWS, else '' = every row)
  local p
  for p in $probe_specs; do
    [ "${p%%:*}" = "$1" ] && [ "$p" != "${p#*:}" ] && { echo "${p#*:}"; return; }
  done
  echo "${ROWS:-}"
}
env_of() {  # variant -> its environment (FB_FLASH_BWD=.. [FB_FLASH_BWD_SPLIT=..])
  local v=$1 split=""
  case $v in
    s[0-9]*) split=${v#s} v=standard ;;
    *+s[0-9]*) split=${v##*+s} v=${v%+*} ;;
  esac
  echo "FB_FLASH_BWD=$v${split:+ FB_FLASH_BWD_SPLIT=$split}"
}

for tp in ${TEST_PROBES-"standard:[flash_split],[flash_tail]"}; do  # VARIANT:SPEC
  v=${tp%%:*}
  bstep "tests-$v" env $(env_of "$v") "$tests" "${tp#*:}"
done
verify_shapes=("--seq 1000 --batch 3 --heads 12 --kv-heads 6 --dim 128 --dtype bf16"
               "--seq 1025 --heads 32 --kv-heads 1 --dim 128 --dtype bf16"
               "--seq 333 --heads 8 --kv-heads 1 --dim 64 --dtype fp16")
[ -z "${VERIFY_SHAPES:-}" ] || IFS=';' read -r -a verify_shapes <<<"$VERIFY_SHAPES"
for v in ${VERIFY_VARIANTS-standard}; do
  cmd="true"
  for shape in "${verify_shapes[@]}"; do cmd+=" && '$fb' verify -q $shape --causal both --pass bwd"; done
  bstep "verify-$v" env $(env_of "$v") sh -c "$cmd"
done
# Run 1 of each variant verifies every row it times; later runs time the same cases unverified.
python3 -c "import json, sys; s = json.load(open(sys.argv[1])); s['verify'] = False; json.dump(s, open(sys.argv[2], 'w'))" \
  "$spec" "$out/spec-noverify.json"
run() {  # variant rep
  local s=$spec f
  [ "$2" = 1 ] && { [ "$1" != standard ] || [ "${VERIFY_DEFAULT:-1}" = 1 ]; } || s=$out/spec-noverify.json
  f=$(filter_of "$1")
  bstep "run-$1-$2" env $(env_of "$1") "$fb" run "$s" --no-ceilings -q ${f:+--filter "$f"} \
    -o "$out/flash-$1-$2.json"
}
run standard 1
for probe in $probes; do run "$probe" 1; done
[ "${PEERS:-1}" = 1 ] &&
  bstep peers python3 scripts/peers.py "$spec" --backends flash --ref-max-seq 0 -o "$out/peers.json"
for probe in $(printf '%s\n' $probes | tac); do run "$probe" 2; done
run standard 2
for r in $(seq 3 "$pairs"); do  # more runs, alternating (unverified)
  run standard "$r"
  for probe in $probes; do run "$probe" "$r"; done
done

python3 - "$out" "$pairs" $probes <<'PY' | tee "$out/table.txt"
import json, os, sys
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
def order(k):
    c = next(x["case"] for v in variants for x in [first(v, k)] if x)
    return (c["causal"], c["kv_heads"] != 1, c["head_dim"], c["heads"], c.get("seq_q", c.get("seq")))
keys = sorted({k for v in variants for r in runs[v] for k in r}, key=order)
checked = [v for v in variants if v != "standard" or os.environ.get("VERIFY_DEFAULT", "1") == "1"]
unverified = [f"{v}:{k}" for v in checked for k in keys if first(v, k)
              and not any((r.get(k) or {}).get("verified") for r in runs[v])]
print(f"TFLOP/s (mean of {pairs} runs, interleaved); x = FA2 time / flash time; r:P = standard time / P's time "
      f"(> 1: P faster); spread: the largest max/min - 1 of a variant's runs; "
      f"unverified rows of {' '.join(checked)}: {len(unverified)} {' '.join(unverified[:4])}")
print(f'{"case":40}' + "".join(f"{v:>16}" for v in variants) + f'{"FA2":>7}'
      + "".join(f'{"r:" + p:>12}' for p in probes) + f'{"spread":>8}')
ratios = {v: [] for v in variants}
for k in keys:
    row = f"{k:40}"
    for v in variants:
        t = mean_time(v, k)
        if t is None:
            row += f'{"-":>16}'
            continue
        x = first(v, k)
        tf = x["tflops"] * x["time_ms"]["median"] / t
        ratio = ""
        if k in fa2:
            ratios[v].append((fa2[k]["time_ms"]["median"] / t, k))
            ratio = f" {ratios[v][-1][0]:.3f}x"
        row += f"{tf:>8.0f}{ratio:>8}"
    row += f'{fa2[k]["tflops"]:>7.0f}' if k in fa2 else f'{"-":>7}'
    ts = mean_time("standard", k)
    for p in probes:
        tp = mean_time(p, k)
        row += f"{ts / tp:>12.3f}" if ts and tp else f'{"-":>12}'
    sp = [max(m) / min(m) - 1 for v in variants
          for m in [[r[k]["time_ms"]["median"] for r in runs[v] if k in r]] if len(m) >= 2]
    row += f"{100 * max(sp):>7.1f}%" if sp else f'{"-":>8}'
    print(row)
for v in variants:
    if ratios[v]:
        lo = min(ratios[v])
        print(f"{v} / FA2: {lo[0]:.3f}-{max(ratios[v])[0]:.3f}x over {len(ratios[v])} rows, "
              f">= 1.0 in {sum(r >= 1.0 for r, _ in ratios[v])}; worst {lo[1]}")
PY
printf '%s\n' "${summary[@]}"
exit $failed
