// The Hopper forward's tile configuration for each head_dim: the one table to edit when tuning.
// Host and device code read it (query_tile reports kBr; the launchers instantiate the kernels).
#pragma once

#include <cstddef>

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
  // A 192-row tile's first warpgroups see fewer K/V tiles than its last one near a causal diagonal,
  // and rows past the end see none (N = 1024: the last tile holds 64 rows): skipping those tiles is a
  // quarter of the GEMM and softmax work at causal N <= 1024, a ninth non-causal (flash_sm90_traits.h).
  static constexpr bool kSkipUnseen = true;
};
template <> struct TileConfig<128> {
  static constexpr int kBc = 128;
  static constexpr bool kIntraOverlap = true, kPingPong = true;
  static constexpr int kConsumerWgs = 2;
  // 128-row tiles against 128-key tiles: a warpgroup sees fewer tiles than its block only at odd
  // lengths or seq_q != seq_k offsets; kept for those.
  static constexpr bool kSkipUnseen = true;
};
// d = 256: O alone takes 128 of a consumer's 240 registers, so K/V tiles are 80 keys (S 40, P 20
// registers; FlashAttention-3's choice for d = 256), and shared memory is nearly full: Q 64 KB +
// 2 stages x (K, V) x 40 KB = 224 KB of the 227 KB a block may opt into.
template <> struct TileConfig<256> {
  static constexpr int kBc = 80;
  static constexpr bool kIntraOverlap = true, kPingPong = true;
  // Two: a third warpgroup would leave each consumer 160 registers, and O alone takes 128.
  static constexpr int kConsumerWgs = 2;
  // Off: the skip's bookkeeping costs the d = 256 consumers 40 bytes of spills (ptxas -v).
  static constexpr bool kSkipUnseen = false;
};

// The head dims with an instantiation (flash_sm90_hdim*.cu); dispatch and checks read this list.
inline constexpr int kHeadDims[] = {64, 128, 256};

template <Dtype T, int D> struct FwdConfig {
  static constexpr Dtype kDtype = T;
  static constexpr int kHeadDim = D;
  using Elem = typename DtypeTraits<T>::elem;
  using Traits = FwdTraits<Elem, D, TileConfig<D>::kBc, TileConfig<D>::kIntraOverlap,
                           TileConfig<D>::kPingPong, TileConfig<D>::kConsumerWgs,
                           TileConfig<D>::kSkipUnseen>;
};

// One launch of the forward for (T, D); defined in flash_sm90_launch.cuh, instantiated in the
// flash_sm90_hdim*.cu files (one head_dim per file, so they compile in parallel).
template <Dtype T, int D> void run_fwd(const AttentionParams& p, cudaStream_t stream);
// Bytes of p.workspace that launch uses (d = 64's tail split; 0 where it does not split), from the same file.
template <Dtype T, int D> std::size_t fwd_workspace_bytes(const AttentionParams& p);

}  // namespace fb::cuda::flash_sm90
