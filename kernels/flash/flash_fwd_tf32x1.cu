// fp32 forward on TF32 tensor cores, operands rounded once (the 1xTF32 diagnostic), every head_dim.
#include "flash/flash_fwd_tf32_launch.cuh"

namespace fb::cuda::flash {
template void run_fwd_tf32<32, Fp32Math::tf32x1>(const AttentionParams&, cudaStream_t);
template void run_fwd_tf32<64, Fp32Math::tf32x1>(const AttentionParams&, cudaStream_t);
template void run_fwd_tf32<128, Fp32Math::tf32x1>(const AttentionParams&, cudaStream_t);
}  // namespace fb::cuda::flash
