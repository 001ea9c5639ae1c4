# Session 12, flashfwd, for a later call (~50 s on a built tree; env BUILD, OUTDIR): the causal order after call A's
# flip (default = bands with a grouped tail of one device-full, tail1). Runs: shipped, tail0 (bands alone: the
# default before the flip), band0 (grouped order), tail3 (three device-fulls: call A's open question, 8 query heads
# N = 4k, where band0 stayed 2.5% ahead of tail1), shipped; forward cases only (the script now runs pass = fwd
# copies of the specs: call A's job also timed the GQA spec's bwd rows and was cut at 62 s). Rows: 8-query-head
# causal GQA x 6, 32q/8kv + 32q/1kv causal N = 1k/4k, d = 128 MHA causal N = 512/1k/2k, d = 64 causal
# N = 512/1k/2k/4k, and d = 128 MHA non-causal N = 512/1k bf16 (variants are no-ops there: the call's noise).
# GPU tests [flashfwd] under tail3. FA2 beside on both specs. job-flashfwd-ncu.sh stays the profile (~20 s).
CONFIG="configs/flashfwd-h200.json configs/gqa-h200.json" GROUP=4 BUDGET_S=32 TESTS="tail3" \
  FILTER='h16-kv16-n(512|1024)-d128-bf16-full|h16-kv16-n(512|1024|2048)-d128-bf16-causal|h32-kv32-n(512|1024|2048|4096)-d64-bf16-causal|h8-kv[18]-n[0-9]+-d128-bf16-causal|h32-kv[18]-n(1024|4096)-d128-bf16-causal' \
  scripts/flashfwd_h200.sh "$OUTDIR" tail0 band0 tail3
