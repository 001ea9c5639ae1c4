#!/usr/bin/env bash
# Session 12, final call 2, round 2 (data for the next session): the portable backward's GQA head split with
# 16 subsets (s16) against the shipped 8 at 32 q / 1 kv causal, N 1k/4k/16k, beside FA2, verified. <= 40 s.
PROBES="s16:h32-kv1-.*causal" TEST_PROBES= VERIFY_VARIANTS= VERIFY_DEFAULT=0 PAIRS=1 BUDGET=38 \
  BUILD=$BUILD scripts/flashbwd_s12.sh $OUTDIR
