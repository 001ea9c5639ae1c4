# Session 14 call B (round 2), sm90fwd (issue 13; ~50 s): flash-sm90's 16-bit forward as shipped beside its probes
# `qahead` (kOptQAhead, non-causal launches: the work tiles' Q loads and tickets on a second producer thread, each
# tile's Q loaded as soon as its Q slot frees, about when the tile before it starts, instead of at the tile boundary
# just ahead of the tile's K_0; consumers unchanged) and `ncalign` (host only: qalign's shift for non-causal launches,
# so that d = 64's partial 192-row query tile runs after the plane's full ones), each run beside the in-binary cudnn
# and verified (same-process ratios). `qahead,ncalign` is qahead's second reading at d = 128 (ncalign changes nothing
# there: N is a multiple of 128) and the two together at d = 64. Session 13's profile at d = 128 N = 512
# (results/h200/s13/callB/r2-sm90fwd/): the consumers wait on Q and K_0 at each work tile's start (~4.7% of warp
# samples at N = 512 against ~0.1% at 16k, cudnn ~1.2%), not on K_j, j > 0.
# Rows (bf16, configs/fwd-bf16-h200.json: 16k tokens, model dim 2048): d = 128 non-causal N 512/1k/2k (the target:
# 0.96 / 0.98 / 0.98x the in-binary cudnn in call A) and 4k/16k (controls), d = 64 non-causal N 512/1k/2k (0.95x) and
# 16k (control), d = 128 causal N = 1k (control: both words run the shipped kernel under the mask). The GPU tests as
# shipped, and [sm90fwd],[sched] (non-causal work tiles of one and two K/V tiles, seq_q != seq_k, GQA, repeated
# launches on one tile counter) under qahead and under ncalign. Then, while time is left, GQA 32 query heads on 8 K/V
# heads, d = 128 non-causal N = 1024 (configs/gqa-h200.json): ship, qahead, ship, each beside cudnn and verified, into
# gqa-*.json and gqa-table.txt. The variant table (OUTDIR/table.txt) is printed again last.
#   BUILD=<build dir> OUTDIR=<dir> bash results/h200/s14/calls/job2-sm90fwd.sh
CONFIG=configs/fwd-bf16-h200.json RUN_ARGS='--warmup 3 --reps 10' \
  FILTER='n(512|1024|2048|4096|16384)-d128-bf16-full|n(512|1024|2048|16384)-d64-bf16-full|n1024-d128-bf16-causal' \
  TEST_PROBES='qahead ncalign' PROBE_TESTS='[sm90fwd],[sched]' BUDGET_S=40 \
  scripts/sm90fwd_h200.sh "$OUTDIR" qahead ncalign qahead,ncalign
gqa=()
for v in ship qahead ship; do
  name=gqa-$v; [ -f "$OUTDIR/$name.json" ] && name=$name-last
  [ $((SECONDS + 2)) -le 50 ] || { echo "$name skipped (t=${SECONDS}s)"; continue; }
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
print("GQA 32/8 d128 non-causal N=1024, bf16: flash-sm90/cudnn per run; qahead over the shipped runs' geometric mean")
for n, x in ratio.items():
    print(f"  {n:16} sm90 {r[n].get('flash-sm90', float('nan')):6.1f} cudnn {r[n].get('cudnn', float('nan')):6.1f}  {x:.3f}x")
s = [ratio[n] for n in ("gqa-ship", "gqa-ship-last") if n in ratio and ratio[n] == ratio[n]]
if s and "gqa-qahead" in ratio:
    base = (s[0] * s[-1]) ** 0.5
    print(f"  qahead / ship: {ratio['gqa-qahead'] / base:.3f}x  (drift {s[-1] / s[0]:.3f})")
PY
echo "--- table again (t=${SECONDS}s)"
tail -n 16 "$OUTDIR/table.txt"
