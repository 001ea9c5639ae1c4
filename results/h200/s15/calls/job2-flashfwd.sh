# Session 15 round 2, flashfwd (call B; <= 50 s on a built tree; env BUILD, OUTDIR). d = 128 non-causal only.
# (a) Round 1's flip, A/B: since round 1 the short non-causal d = 128 launches (seq_k <= 1024) run the shipped
#     epi,pro kernel with kFwdFragPipe (kernel 721994: call A's `kpipe` kernel, PTX identical; N = 512 / 1k
#     1.003-1.016x in 12 of 12 readings there). `nokpipe` runs the kernels before it (epi,pro alone). Rows: N = 512 /
#     1k (configs/flashfwd-h200.json's shapes, 16k tokens, 16 heads) and shapes no config names: batch 24 x 16 heads
#     at N = 640, 768, 1000 (1000: a partial last KV tile and query tile); bf16 + fp16. At 2k / 4k `nokpipe` is the
#     default (a no-op control: the noise of one reading).
# (b) `kpipelong` (probe): the long non-causal d = 128 launches too with kFwdFragPipe (kOpt | it = kernel 525386,
#     call A's `kpipe` kernel there, PTX identical; no spill, the default 16 B outside the loop). Call A: 2k bf16
#     0.981 / 0.992 / 0.998, fp16 1.009 / 1.021 / 1.003, 4k bf16 1.002 / 1.001 / 1.007, fp16 1.008 / 1.024 / 1.011.
#     The bf16 and fp16 KV loops are the same SASS but for the HMMA / F2FP type suffixes (kOpt's, kpipe's and the
#     short kernel's alike), so a dtype split is not the schedule: three more readings of each row decide. Its short
#     launches are the default's (a no-op control at N <= 1000).
# Runs: ship, nokpipe, kpipelong, ship, three times (REPEAT=3, GROUP=2: 10 runs of two specs), every row verified;
# [flashfwd] GPU tests under kpipelong (its short non-causal, causal and d = 64 kernels are the default's, so this
# also tests the new default's kernel on every short non-causal case); FA2 (torch-flash) on both specs.
# Table last (OUTDIR/table.txt): the nokpipe column is the shipped (new) default's time / nokpipe's (< 1: the new
# default faster), the kpipelong column the shipped time / kpipelong's (> 1: kpipelong faster).
# Estimate on the H200 (call A: ~2-3 s a run of 12 rows, a test step 4-5 s, FA2 10 s for 32 cases): 10 runs x ~3 s
# (two processes each), tests ~5 s, FA2 ~8 s (14 cases, two processes): ~45 s. Variant runs start only before 32 s
# (worst case ~50 s); no ncu. Dry run with stub binaries (0.2 s a row + 0.5 s a process, 1 s a test step, no torch):
# 41 s, kpipelong.r3 skipped by the budget (the stub rows are slower than call A's real ones), table last.
mkdir -p "$OUTDIR"
python3 - configs/flashfwd-h200.json "$OUTDIR/spec-s15r2.json" "$OUTDIR/spec-s15r2-odd.json" <<'PY' || exit 2
import json, sys
s = dict(json.load(open(sys.argv[1])))
s.update(name="flashfwd-s15-r2", seq=[512, 1024, 2048, 4096], head_dim=[128], dtype=["bf16", "fp16"],
         causal=[False], description="configs/flashfwd-h200.json's d = 128 non-causal rows N = 512-4096 "
         "(job2-flashfwd.sh, s15 round 2)")
s["pass"] = ["fwd"]
json.dump(s, open(sys.argv[2], "w"), indent=1)
o = {k: v for k, v in s.items() if k not in ("tokens", "model_dim")}
o.update(name="flashfwd-s15-r2-odd", seq=[640, 768, 1000], batch=[24], heads=[16],
         description="d = 128 non-causal, batch 24 x 16 heads, N = 640 / 768 / 1000: short launches no config names "
         "(job2-flashfwd.sh, s15 round 2)")
json.dump(o, open(sys.argv[3], "w"), indent=1)
PY
CONFIG="$OUTDIR/spec-s15r2.json $OUTDIR/spec-s15r2-odd.json" GROUP=2 REPEAT=3 BUDGET_S=32 TESTS="kpipelong" NCU=0 \
  FILTER='-d128-(bf16|fp16)-full-fwd' scripts/flashfwd_h200.sh "$OUTDIR" nokpipe kpipelong
