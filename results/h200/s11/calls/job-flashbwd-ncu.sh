# Session 11, flashbwd, optional (~12 s; for a call with time to spare: call A's job had none left for its
# ncu steps): Nsight Compute on one launch each of the default's main kernel (tiled dQ since call A) and
# the probe dqrows's (session 10's row-major dQ reductions) at d = 128, N = 16k, non-causal, beside
# session 10's FA2 profile (lg_throttle, long scoreboard, LSU and L2 load).
TEST_PROBES= VERIFY_VARIANTS= TIMING=0 PROBES=dqrows NCU_VARIANTS="standard dqrows" NCU_FA2=0 \
  NCU_FA2_LOG=results/h200/s10/final/flashbwd2/ncu-fa2.log BUDGET=30 BUILD=$BUILD scripts/flashbwd_s11.sh $OUTDIR
