// Tensor-core forward instantiations for head_dim 96 (fp16, bf16).
#include "flash/flash_fwd_launch.cuh"

namespace fb::cuda::flash {
template void run_fwd<Dtype::fp16, 96>(const AttentionParams&, cudaStream_t);
template void run_fwd<Dtype::bf16, 96>(const AttentionParams&, cudaStream_t);
}  // namespace fb::cuda::flash
