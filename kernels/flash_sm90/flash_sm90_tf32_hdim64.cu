// Hopper fp32 forward instantiations for head_dim 64 (3xTF32 and the 1xTF32 diagnostic).
#include "flash_sm90/flash_sm90_tf32_launch.cuh"

namespace fb::cuda::flash_sm90 {

template void run_tf32_fwd<64, true>(const AttentionParams&, cudaStream_t);
template void run_tf32_fwd<64, false>(const AttentionParams&, cudaStream_t);

}  // namespace fb::cuda::flash_sm90
