// CUDA-core forward instantiations for fp32 (every head_dim).
#include "flash/flash_fwd_launch.cuh"

namespace fb::cuda::flash {
template void run_fwd<Dtype::fp32, 32>(const AttentionParams&, cudaStream_t);
template void run_fwd<Dtype::fp32, 64>(const AttentionParams&, cudaStream_t);
template void run_fwd<Dtype::fp32, 128>(const AttentionParams&, cudaStream_t);
}  // namespace fb::cuda::flash
