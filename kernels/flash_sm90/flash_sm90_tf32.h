// The Hopper fp32 forward and backward on TF32 wgmma (3xTF32, and the 1xTF32 diagnostic): host-side
// facts and the launch declarations (forward: flash_sm90_tf32_launch.cuh, one head_dim per file;
// backward: flash_sm90_tf32_bwd.cu).
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

#include "attention.h"
#include "flash_sm90/flash_sm90_tf32_traits.h"

namespace fb::cuda::flash_sm90 {

template <int D, bool kSplit> void run_tf32_fwd(const AttentionParams& p, cudaStream_t stream);

// Query rows per block and dynamic shared memory of the fp32 forward for head_dim d (64 or 128).
inline int tf32_query_tile(int) { return Tf32FwdConfig<128, true>::Traits::kBr; }
inline std::size_t tf32_smem_bytes(int d) {
  return d == 64 ? Tf32FwdConfig<64, true>::Traits::kSmemBytes
                 : Tf32FwdConfig<128, true>::Traits::kSmemBytes;
}
// The fp32 backward on TF32 wgmma (flash_sm90_tf32_bwd.cu): split = false is the 1xTF32
// diagnostic. nullptr when the kernel can run p (dtype, device and alignment are the caller's).
const char* tf32_backward_unsupported(const AttentionParams& p);
std::size_t tf32_backward_workspace_bytes(const AttentionParams& p);
int tf32_backward_key_tile(int head_dim);
std::size_t tf32_backward_smem_bytes(int head_dim);
void run_tf32_backward(const AttentionParams& p, const Context& ctx, bool split);
// The pre-pass of the d = 128 non-causal 3x backward's two-warpgroup fp16-pair kernels: session 21's seven launches
// (separate; under FB_SM90_FP32_BWD_PROBE=fp16pair128w2a / fp16pair128w2), or a memset and two launches writing the
// same bits (fused; the default since session 22). For tests and A/B runs: forces one for the rest of the process wherever those kernels run (from_probe:
// as the word says, the starting value); returns the previous setting.
enum class Fp16Pair128Prepass { from_probe, separate, fused };
Fp16Pair128Prepass force_fp16pair128_prepass(Fp16Pair128Prepass how);
// Whether the 3x backward of p runs the fused pre-pass under the current word and setting.
bool tf32_backward_prepass_fused(const AttentionParams& p);

static_assert(Tf32FwdConfig<64, true>::Traits::kBr == Tf32FwdConfig<128, true>::Traits::kBr,
              "one query tile for every head_dim");

}  // namespace fb::cuda::flash_sm90
