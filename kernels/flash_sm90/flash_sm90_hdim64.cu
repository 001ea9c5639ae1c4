// Hopper forward instantiations for head_dim 64 (fp16, bf16).
#include "flash_sm90/flash_sm90_launch.cuh"

namespace fb::cuda::flash_sm90 {

template void run_fwd<Dtype::fp16, 64>(const AttentionParams&, cudaStream_t);
template void run_fwd<Dtype::bf16, 64>(const AttentionParams&, cudaStream_t);
template std::size_t fwd_workspace_bytes<Dtype::fp16, 64>(const AttentionParams&);
template std::size_t fwd_workspace_bytes<Dtype::bf16, 64>(const AttentionParams&);

}  // namespace fb::cuda::flash_sm90
