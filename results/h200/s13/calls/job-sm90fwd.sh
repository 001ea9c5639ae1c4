# Session 13 call A, sm90fwd (issue 13; ~55 s): flash-sm90's 16-bit forward as shipped beside its probes `kvpf`
# (kOptKvPrefetch: the producer prefetches each work tile's K/V tiles into L2, 4 ring loads ahead of its ring
# loads; cp.async.bulk.prefetch.tensor, no shared memory) and `kvpf8` (8 ahead), each run beside the in-binary
# cudnn and verified (same-process ratios). kvpf runs twice (`kvpf`, and after kvpf8 `kvpf,xtile`: the same
# kernel, xtile being the default wherever it exists) for a second reading against the call's drift.
# Rows (bf16, configs/fwd-bf16-h200.json: 16k tokens, model dim 2048): d = 128 non-causal N 512/1k/2k/4k/16k
# (the target: 0.95-0.98x torch-cudnn at N <= 2048 in session 12's final sweep; 16k the long-N check), d = 64
# non-causal and causal N = 512 / 1024. The GPU tests as shipped, and [sm90fwd],[sched] (seq_q != seq_k among
# them) under kvpf and under kvpf8. Then, while time is left, GQA 32 query heads on 8 K/V heads, d = 128
# non-causal N = 1024 (configs/gqa-h200.json; 0.959x torch-cudnn in session 12's final sweep): ship, kvpf, ship,
# each beside cudnn and verified, into gqa-*.json and gqa-table.txt.
#   BUILD=<build dir> OUTDIR=<dir> bash results/h200/s13/calls/job-sm90fwd.sh
CONFIG=configs/fwd-bf16-h200.json RUN_ARGS='--warmup 3 --reps 10' \
  FILTER='n(512|1024|2048|4096|16384)-d128-bf16-full|n(512|1024)-d64-bf16-(full|causal)' \
  TEST_PROBES='kvpf kvpf8' PROBE_TESTS='[sm90fwd],[sched]' BUDGET_S=40 \
  scripts/sm90fwd_h200.sh "$OUTDIR" kvpf kvpf8 kvpf,xtile
gqa=()
for v in ship kvpf ship; do
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
print("GQA 32/8 d128 non-causal N=1024, bf16: flash-sm90/cudnn per run; kvpf over the shipped runs' geometric mean")
for n, x in ratio.items():
    print(f"  {n:16} sm90 {r[n].get('flash-sm90', float('nan')):6.1f} cudnn {r[n].get('cudnn', float('nan')):6.1f}  {x:.3f}x")
s = [ratio[n] for n in ("gqa-ship", "gqa-ship-last") if n in ratio and ratio[n] == ratio[n]]
if s and "gqa-kvpf" in ratio:
    base = (s[0] * s[-1]) ** 0.5
    print(f"  kvpf / ship: {ratio['gqa-kvpf'] / base:.3f}x  (drift {s[-1] / s[0]:.3f})")
PY
echo "--- table again (t=${SECONDS}s)"
tail -n 16 "$OUTDIR/table.txt"
