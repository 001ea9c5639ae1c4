// The Hopper forward's tile configuration for each head_dim: the one table to edit when tuning.
// Host and device code read it (query_tile reports kBr; the launchers instantiate the kernels).
#pragma once

#include <cuda_runtime.h>

#include "attention.h"
#include "common/types.cuh"
#include "flash_sm90/flash_sm90_traits.h"

namespace fb::cuda::flash_sm90 {

// Keys per K/V tile and the two overlaps (flash_sm90_traits.h) per head_dim.
template <int D> struct TileConfig;
template <> struct TileConfig<64> {
  static constexpr int kBc = 128;
  static constexpr bool kIntraOverlap = true, kPingPong = true;
  // Three consumer warpgroups (192 query rows): at d = 64 the GEMMs are short against the softmax,
  // and a third warpgroup's softmax fills the tensor cores' gaps (docs/perf-notes.md: 9-21% faster
  // kernel time than two at N >= 2048, 5% slower causal at N = 1024).
  static constexpr int kConsumerWgs = 3;
};
template <> struct TileConfig<128> {
  static constexpr int kBc = 128;
  static constexpr bool kIntraOverlap = true, kPingPong = true;
  static constexpr int kConsumerWgs = 2;
};

template <Dtype T, int D> struct FwdConfig {
  static constexpr Dtype kDtype = T;
  static constexpr int kHeadDim = D;
  using Elem = typename DtypeTraits<T>::elem;
  using Traits = FwdTraits<Elem, D, TileConfig<D>::kBc, TileConfig<D>::kIntraOverlap,
                           TileConfig<D>::kPingPong, TileConfig<D>::kConsumerWgs>;
};

// One launch of the forward for (T, D); defined in flash_sm90_launch.cuh, instantiated in the
// flash_sm90_hdim*.cu files (one head_dim per file, so they compile in parallel).
template <Dtype T, int D> void run_fwd(const AttentionParams& p, cudaStream_t stream);

}  // namespace fb::cuda::flash_sm90
