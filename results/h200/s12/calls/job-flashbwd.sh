# Session 12 call A, flashbwd (issue 13; ~55 s): the portable flash backward on GQA/MQA (bf16, d = 128,
# 32/8, 32/1, 8/8 (MHA control), 8/1 query/K-V heads, N 1k/4k/16k, causal and not; configs/
# flashbwd-gqa-h200.json), the default beside the probes, all beside FlashAttention-2 (torch-flash) in the
# same run, interleaved (standard, probes, FA2, probes reversed, standard):
#   splittile  the GQA head-split kernels with the tiled dQ accumulator (kDqTiled, red.v4; the default's
#              split kernels reduce dQ by rows): timed on the causal 1-K/V-head rows, the only rows where
#              the launcher splits (elsewhere splittile is the default);
#   s1         the default with the head split off (FB_FLASH_BWD_SPLIT=1: the unsplit tiled-dQ kernel) on
#              the worst row, causal 32/1 N = 16k: is the split still the right choice there now that the
#              unsplit kernel reduces dQ tiled (the model: no, ~2x; one key tile's block has every query);
#   splittile+s16  splittile with 16 query-head subsets forced on the same row (the model stops at 8:
#              is a finer split worth more with the tiled dQ);
# every probe row verified against the fp64 reference in its first run. Checks under splittile: the GPU
# tests [flash_split] (splits 1-32 forced on odd MQA/GQA shapes, d 64/128, bf16/fp16, both masks, each
# verified; the workspace grows exactly when the split runs) and [flash_tail], and `flashbench verify
# --pass bwd` on three odd GQA/MQA shapes (d 128 bf16 12/6 and 32/1 of 1025 keys, d 64 fp16 8/1). The
# default's timed rows run unverified (its kernels were verified on these rows in session 11's final call).
PROBES="splittile:kv1-.*causal s1:h32-kv1-n16384.*causal splittile+s16:h32-kv1-n16384.*causal" VERIFY_DEFAULT=0 PAIRS=2 BUDGET=63 \
  BUILD=$BUILD scripts/flashbwd_s12.sh $OUTDIR
# After call A (results/h200/s12/callA/flashbwd/): splittile's split kernels became the default at d = 128
# (flash_bwd.cu split_dq_tiled()); FB_FLASH_BWD=splittile now differs from the default at d = 64 only, and
# splitrows runs session 8-11's row-major split kernels.
