# Session 14 call A, sm90fwd (issue 13; ~50 s): flash-sm90's 16-bit forward as shipped beside its probes `backoff`
# (kOptBackoff: the producer thread's waits for a free K/V ring stage or Q slot use mbarrier.try_wait with a
# suspend-time hint of 10 ms, NANOSLEEP.SYNCS in SASS, as cudnn's producer, instead of spinning) and `backoff256`
# (kOptBackoffShort: the same with a 256 ns hint: does the sleep's cap matter), each run beside the in-binary cudnn
# and verified (same-process ratios). Consumers unchanged: each probe kernel's SASS differs from the shipped one's
# only in the producer's three retry paths. backoff runs twice (`backoff`, and after backoff256 `backoff,xtile`:
# the same kernel, xtile being the default wherever it exists) for a second reading against the call's drift.
# Session 13's profile (results/h200/s13/callB/r2-sm90fwd/): the producer's spin on the V-empty barrier is 8% of
# the d = 128 forward's warp instructions at N = 512 and 16k, ~13% of the issue slots of the sub-partition it
# shares with a consumer warpgroup's first warp; cudnn's producer sleeps.
# Rows (bf16, configs/fwd-bf16-h200.json: 16k tokens, model dim 2048): d = 128 non-causal N 512/1k/2k/4k/16k
# (the target: 0.94-0.98x torch-cudnn at N <= 2048 in session 13's final sweep; 16k the long-N check), d = 64
# non-causal and causal N = 512 / 1024. The GPU tests as shipped, and [sm90fwd],[sched] (seq_q != seq_k among
# them) under backoff and under backoff256. Then, while time is left, GQA 32 query heads on 8 K/V heads, d = 128
# non-causal N = 1024 (configs/gqa-h200.json): ship, backoff, ship, each beside cudnn and verified, into gqa-*.json
# and gqa-table.txt. The variant table (OUTDIR/table.txt) is printed again last.
#   BUILD=<build dir> OUTDIR=<dir> bash results/h200/s14/calls/job-sm90fwd.sh
CONFIG=configs/fwd-bf16-h200.json RUN_ARGS='--warmup 3 --reps 10' \
  FILTER='n(512|1024|2048|4096|16384)-d128-bf16-full|n(512|1024)-d64-bf16-(full|causal)' \
  TEST_PROBES='backoff backoff256' PROBE_TESTS='[sm90fwd],[sched]' BUDGET_S=40 \
  scripts/sm90fwd_h200.sh "$OUTDIR" backoff backoff256 backoff,xtile
gqa=()
for v in ship backoff ship; do
  name=gqa-$v; [ -f "$OUTDIR/$name.json" ] && name=$name-last
  [ $((SECONDS + 6)) -le 62 ] || { echo "$name skipped (t=${SECONDS}s)"; continue; }
  FB_SM90_FWD_PROBE=${v#ship} timeout 8 "$BUILD/flashbench" run configs/gqa-h200.json \
    --filter 'h32-kv8-n1024-d128-bf16-full-fwd' --kernels flash-sm90,cudnn --no-ceilings -q --warmup 3 --reps 10 \
    -o "$OUTDIR/$name.json" > "$OUTDIR/$name.log" 2>&1
  echo "$name rc=$? t=${SECONDS}s"; gqa+=("$name")
done
python3 - "$OUTDIR" "${gqa[@]}" <<'PY' | tee "$OUTDIR/gqa-table.txt"
import json, os, sys
out, names = sys.argv[1], sys.argv[2:]
r = {}
for n in names:
    try:
        for x in json.load(open(os.path.join(out, n + ".json")))["results"]:
            ok = x["status"] == "ok" and x.get("verified", True) is not False
            r.setdefault(n, {})[x["kernel"]] = x["tflops"] if ok else float("nan")
    except (OSError, ValueError, KeyError) as e:
        print(f"({n}: {e})")
ratio = {n: v.get("flash-sm90", float("nan")) / v.get("cudnn", float("nan")) for n, v in r.items() if v.get("cudnn")}
print("GQA 32/8 d128 non-causal N=1024, bf16: flash-sm90/cudnn per run; backoff over the shipped runs' geometric mean")
for n, x in ratio.items():
    print(f"  {n:16} sm90 {r[n].get('flash-sm90', float('nan')):6.1f} cudnn {r[n].get('cudnn', float('nan')):6.1f}  {x:.3f}x")
s = [ratio[n] for n in ("gqa-ship", "gqa-ship-last") if n in ratio and ratio[n] == ratio[n]]
if s and "gqa-backoff" in ratio:
    base = (s[0] * s[-1]) ** 0.5
    print(f"  backoff / ship: {ratio['gqa-backoff'] / base:.3f}x  (drift {s[-1] / s[0]:.3f})")
PY
echo "--- table again (t=${SECONDS}s)"
tail -n 16 "$OUTDIR/table.txt"
