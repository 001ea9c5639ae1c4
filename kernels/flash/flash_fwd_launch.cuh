// Definition of run_fwd<T, D>: the tensor-core kernel for 16-bit types, CUDA cores otherwise.
// Included only by the instantiation files flash_fwd_*.cu.
#pragma once

#include "flash/flash_fwd_config.h"
#include "flash/flash_fwd_kernel.cuh"
#include "flash/flash_fwd_simt.cuh"

namespace fb::cuda::flash {

template <Dtype T, int D> void run_fwd(const AttentionParams& p, cudaStream_t stream) {
  using Cfg = FwdConfig<T, D>;
  if constexpr (Cfg::kTensorCores) {
    launch_fwd_tc<typename Cfg::Traits>(p, stream);
  } else {
    launch_fwd_simt<typename Cfg::Traits>(p, stream);
  }
}

}  // namespace fb::cuda::flash
