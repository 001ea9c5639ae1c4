# Session 11 call A, flashbwd (issue 13; ~60 s): the default (d = 128 non-causal now splits the grid's
# last partial wave) beside the probes `notail` (session 10's grid, d = 128 non-causal rows only: it
# differs there alone; verified) and `dqtile` (dQ reduced into the tiled accumulator with red.v4; every
# row verified, its GPU tests and verify on odd shapes), all beside FlashAttention-2 (torch-flash); then
# ncu of dqtile's and the default's main kernel at d = 128 N = 16k non-causal, beside session 10's FA2
# profile. The default's timed rows run unverified (its kernels were verified on these rows in session
# 10's final call: the tail kernel in F10b, the rest in the final sweep); its tail split is checked by
# the GPU test [flash_tail] (d = 128 grids of 144-288 blocks, verified against fp64).
PROBES="notail:d128-bf16-full dqtile" TEST_PROBES="standard:[flash_tail] dqtile" VERIFY_VARIANTS=dqtile \
  VERIFY_DEFAULT=0 PAIRS=2 NCU_VARIANTS="dqtile standard" NCU_FA2=0 \
  NCU_FA2_LOG=results/h200/s10/final/flashbwd2/ncu-fa2.log BUDGET=63 BUILD=$BUILD scripts/flashbwd_s11.sh $OUTDIR
