// Hopper fp8 (e4m3) forward instantiation for head_dim 128.
#include "flash_sm90/flash_sm90_fp8_launch.cuh"

namespace fb::cuda::flash_sm90 {

template void run_fp8_fwd<128>(const AttentionParams&, cudaStream_t);

}  // namespace fb::cuda::flash_sm90
