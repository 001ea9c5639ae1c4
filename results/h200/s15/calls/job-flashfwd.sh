# Session 15, flashfwd (prepared in session 14; ~54 s on a built tree, <= 65 s by its guards; env BUILD, OUTDIR): the
# d = 128 non-causal rows at N = 2k-4k, still 0.984-0.991x FA2 after session 14 (final sweep, bf16), where the
# shipped kernels run kOpt alone: session 14's lean epilogue (epi,pro) lost 1.2-1.3% there although its KV loop has
# the default's instructions. The SASS (sm_90a, bf16, session 14 round 3): ptxas schedules epi,pro's loop differently
# (S = Q K^T with Q-fragment reuse, 168 HMMAs with the A operand's reuse flag against 106, mt = 1's last Q fragment
# and the last K fragment pair held across all of S = Q K^T, mt = 0's last Q fragment loaded late; the softmax's order
# changed; opcode-order similarity 0.59 to the default's loop), so the loss grows with the KV steps.
# Probes (kernels/flash/flash_fwd_config.h; default kernels unchanged, PTX identical to int14b 3d6680c):
#   lse   : kFwdLeanLse on kOpt, every launch: epi's row statistics alone (quad sums side by side, 1 / sum on MUFU.RCP,
#           one LSE a lane with lg2.approx, no per-row branch) with the default's O copy, indices and offsets. Its d = 128
#           KV loop is the default's instruction for instruction (registers too; only uniform-register numbers
#           differ), so it keeps what the per-row chains cost without the loop's cost; at d = 64 the loop is
#           rescheduled (the same 853 instructions). On short launches (non-causal N <= 1k, causal N <= 2k) its
#           baseline is the shipped epi,pro
#   kpipe : kFwdFragPipe on the shipped kernels (the short rule and grid orders included), d = 128 only: S = Q K^T's
#           Q and K fragments double-buffered in registers, the next k16 step's loaded before the current step's
#           MMAs (FlashAttention-2's gemm order); 254 registers and no spill at all (the default: 16 B outside the
#           loop); ptxas schedules it with Q-fragment reuse (177 A-reuse HMMAs) as it does epi,pro's loop. d = 64
#           runs the default under it (a no-op control)
# Runs: ship, lse, kpipe, ship, three times (REPEAT=3, GROUP=2: 10 runs), every row verified; the [flashfwd] GPU tests
# under lse and under kpipe; FA2 (torch-flash) on the same spec. Rows (flash times 12): d = 128 MHA non-causal
# N = 512 / 1k / 2k / 4k bf16 + fp16 (2k / 4k decide; 512 / 1k: lse against the shipped epi,pro, kpipe on it);
# d = 128 causal N = 512 / 2k bf16 (short launches: the same); d = 64 non-causal N = 512 bf16 + fp16 (0.972x FA2 in
# fp16 in session 14's final sweep; lse's d = 64 question, kpipe's no-op control). One forward-only spec (32 cases,
# one flashbench process a run; torch-flash times all 32). Estimate on the H200 (session 14's call B: ~2.7 s a run of
# 12 rows, ~5 s a test step, peers 8 s for 16 cases, so ~12 s for 32): ~50 s. Variant runs start only before 42 s
# (worst case then ~60 s); no ncu. Dry run with stub binaries
# (0.2 s a row, 1 s a test step, no torch): 35 s, table last.
mkdir -p "$OUTDIR"
python3 - configs/flashfwd-h200.json "$OUTDIR/spec-s15.json" <<'PY' || exit 2
import json, sys
s = dict(json.load(open(sys.argv[1])))
s.update(name="flashfwd-s15", seq=[512, 1024, 2048, 4096], head_dim=[64, 128], dtype=["bf16", "fp16"],
         causal=[False, True], description="configs/flashfwd-h200.json's rows N = 512-4096 (job-flashfwd.sh, s15; "
         "flash times d = 128 non-causal, causal N = 512 / 2k bf16, d = 64 non-causal N = 512)")
s["pass"] = ["fwd"]
json.dump(s, open(sys.argv[2], "w"), indent=1)
PY
CONFIG="$OUTDIR/spec-s15.json" GROUP=2 REPEAT=3 BUDGET_S=42 TESTS="lse kpipe" NCU=0 \
  FILTER='h16-kv16-n(512|1024|2048|4096)-d128-(bf16|fp16)-full|h16-kv16-n(512|2048)-d128-bf16-causal|h32-kv32-n512-d64-(bf16|fp16)-full' \
  scripts/flashfwd_h200.sh "$OUTDIR" lse kpipe
