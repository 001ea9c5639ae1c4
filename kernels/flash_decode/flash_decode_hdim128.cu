// Decode kernels for head dim 128 (one head dim per file keeps compile times down).
#include "flash_decode/flash_decode_launch.cuh"

namespace fb::cuda::decode {

void launch_hdim128(const AttentionParams& p, const SplitPlan& plan, const StreamPlan& sk, Ring ring,
                    cudaStream_t stream) {
  if (p.dtype == Dtype::fp16) launch_impl<__half, 128>(p, plan, sk, ring, stream);
  else launch_impl<__nv_bfloat16, 128>(p, plan, sk, ring, stream);
}

}  // namespace fb::cuda::decode
