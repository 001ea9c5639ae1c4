// Tensor-core forward instantiations for head_dim 128 (fp16, bf16).
#include "flash/flash_fwd_launch.cuh"

namespace fb::cuda::flash {
template void run_fwd<Dtype::fp16, 128>(const AttentionParams&, cudaStream_t);
template void run_fwd<Dtype::bf16, 128>(const AttentionParams&, cudaStream_t);
template std::size_t fwd_workspace<Dtype::fp16, 128>(const AttentionParams&);
template std::size_t fwd_workspace<Dtype::bf16, 128>(const AttentionParams&);
}  // namespace fb::cuda::flash
