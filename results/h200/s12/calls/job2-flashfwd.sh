# Session 12, flashfwd, optional (~20 s; env BUILD, OUTDIR; for a call with time to spare, if job-flashfwd.sh had
# to skip its ncu step): Nsight Compute on one launch of the shipped d = 128 non-causal forward at N = 512 bf16
# (b32 h16, the row furthest behind FA2) and one of FA2's (PyTorch's flash backend) on the same shape: warp-state
# stalls, issue and tensor-pipe activity, shared-memory wavefronts and conflicts, L2 hit rate, DRAM. Also times
# that row shipped and nopf, verified (no FA2 timing: PEERS=0; no GPU tests).
NCU=1 PEERS=0 TESTS= FILTER='^b32-h16-kv16-n512-d128-bf16-full-fwd$' scripts/flashfwd_h200.sh "$OUTDIR" nopf
