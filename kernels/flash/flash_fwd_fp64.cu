// CUDA-core forward instantiations for fp64 (every head_dim).
#include "flash/flash_fwd_launch.cuh"

namespace fb::cuda::flash {
template void run_fwd<Dtype::fp64, 32>(const AttentionParams&, cudaStream_t);
template void run_fwd<Dtype::fp64, 64>(const AttentionParams&, cudaStream_t);
template void run_fwd<Dtype::fp64, 128>(const AttentionParams&, cudaStream_t);
}  // namespace fb::cuda::flash
