# Session 12, flashfwd (~60 s on a built tree; env BUILD, OUTDIR): the 8-query-head causal GQA rows that fell 4-7%
# against FA2 between session 10's and 11's final sweeps, and d = 128 non-causal N = 512-4k bf16/fp16, beside
# torch-flash (FA2) in the same command. Runs: shipped, tail1 (new: the banded causal order with its shortest
# query tiles, one device-full of blocks, last in grouped order), band0 (grouped order = before session 11),
# nopf (d = 128 without the L2 prefetch = before session 11), shipped. Controls: d = 128 causal MHA N = 512/1k,
# d = 64 causal N = 512/1k/2k (bands of 8 there; tailN applies too), 32q/8kv causal N = 1k. GPU tests [flashfwd]
# under tail1.
# Last, when the script is under 46 s by then: Nsight Compute on one launch of the shipped d = 128 non-causal
# N = 512 bf16 kernel and one of FA2's on that shape (~13 s).
CONFIG="configs/flashfwd-h200.json configs/gqa-h200.json" GROUP=4 BUDGET_S=30 TESTS="tail1" NCU=1 NCU_BY=46 \
  FILTER='h16-kv16-n(512|1024|2048|4096)-d128-(bf16|fp16)-full|h16-kv16-n(512|1024)-d128-bf16-causal|h32-kv32-n(512|1024|2048)-d64-bf16-causal|h8-kv[18]-n[0-9]+-d128-bf16-causal|h32-kv8-n1024-d128-bf16-causal' \
  scripts/flashfwd_h200.sh "$OUTDIR" tail1 band0 nopf
