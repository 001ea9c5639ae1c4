// Definition of run_fwd_tf32<D, M>; included only by the instantiation files flash_fwd_tf32*.cu.
#pragma once

#include "flash/flash_fwd_config.h"
#include "flash/flash_fwd_tf32.cuh"

namespace fb::cuda::flash {

template <int D, Fp32Math M> void run_fwd_tf32(const AttentionParams& p, cudaStream_t stream) {
  launch_fwd_tf32<Tf32FwdConfig<D>, M>(p, stream);
}

}  // namespace fb::cuda::flash
