# Session 12, flashfwd (~55 s on a built tree; env BUILD, OUTDIR): the 8-query-head causal GQA rows that fell 4-7%
# against FA2 between session 10's and 11's final sweeps (the lead's call P0: band0 +3-7% there, nopf level or
# behind, so nopf is not rerun here), beside torch-flash (FA2) in the same command. Runs: shipped, tail1 (new: the
# banded causal order with its shortest query tiles, one device-full of blocks, last in grouped order), band0
# (grouped order = before session 11), tail3 (three device-fulls: at 8 heads most of the grid grouped, at 16-32
# heads a quarter to half), shipped. Rows: h8 causal GQA x 6; 32q/8kv and 32q/1kv causal N = 1k/4k and
# non-causal N = 1k; d = 128 MHA non-causal N = 512-4k bf16 + fp16; controls d = 128 MHA causal N = 512/1k,
# d = 64 causal N = 512/1k/2k (bands of 8 there; tailN applies too). GPU tests [flashfwd] under tail1 (tail3 runs
# the same kernel; its timed rows verify). Last, when the script is under 46 s by then: Nsight Compute on one
# launch of the shipped d = 128 non-causal N = 512 bf16 kernel and one of FA2's on that shape (~13 s; else
# job-flashfwd-ncu.sh does it).
CONFIG="configs/flashfwd-h200.json configs/gqa-h200.json" GROUP=4 BUDGET_S=30 TESTS="tail1" NCU=1 NCU_BY=46 \
  FILTER='h16-kv16-n(512|1024|2048|4096)-d128-(bf16|fp16)-full|h16-kv16-n(512|1024)-d128-bf16-causal|h32-kv32-n(512|1024|2048)-d64-bf16-causal|h8-kv[18]-n[0-9]+-d128-bf16-causal|h32-kv[18]-n(1024|4096)-d128-bf16-causal|h32-kv[18]-n1024-d128-bf16-full' \
  scripts/flashfwd_h200.sh "$OUTDIR" tail1 band0 tail3
