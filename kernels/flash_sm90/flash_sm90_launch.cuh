// Definition of run_fwd<T, D> and the launcher of one traits configuration. Included only by the
// instantiation files flash_sm90_hdim*.cu (and by out-of-tree harnesses that time other traits).
#pragma once

#include <algorithm>

#include <cuda_runtime.h>

#include "common/check.h"
#include "common/device_caps.h"
#include "common/softmax.cuh"
#include "flash_sm90/flash_sm90_config.h"
#include "flash_sm90/flash_sm90_kernel.cuh"
#include "flash_sm90/flash_sm90_tma.h"

namespace fb::cuda::flash_sm90 {

// Blocks for n_work work tiles. Persistent (one block per SM, tiles taken round-robin, longest
// first: flash_sm90_kernel.cuh) hides each tile's prologue and epilogue under the next one's loads:
// 7-17% less kernel time at N <= 1024 on the H200 (docs/perf-notes.md). A static round-robin
// balances a causal triangle worse than the hardware's block scheduler, though, and once the longest
// tile spans kLongCausalKvTiles K/V tiles that costs more than it saves (d = 128 causal, N = 8192:
// +3%), so long causal passes launch one block per tile. `longest_kv_tiles` is 0 without causal.
inline long long fwd_blocks(long long n_work, int longest_kv_tiles) {
  constexpr int kLongCausalKvTiles = 48;
  if (longest_kv_tiles >= kLongCausalKvTiles) return n_work;
  return std::min<long long>(n_work, current_sm_count());
}

// One launch of the forward with traits Tr on `stream` (unsupported() has vetted p).
template <typename Tr> void launch_fwd(const AttentionParams& p, Dtype t, cudaStream_t stream) {
  FwdParams prm{};
  const std::int64_t q_planes = std::int64_t(p.batch) * p.heads;
  const std::int64_t kv_planes = std::int64_t(p.batch) * p.kv_heads;
  encode_bhsd_map(&prm.tm_q, t, p.q, p.head_dim, p.seq_q, q_planes, Tr::kChunkElems, Tr::kBr);
  encode_bhsd_map(&prm.tm_k, t, p.k, p.head_dim, p.seq_k, kv_planes, Tr::kChunkElems, Tr::kBc);
  encode_bhsd_map(&prm.tm_v, t, p.v, p.head_dim, p.seq_k, kv_planes, Tr::kChunkElems, Tr::kBc);
  encode_bhsd_map(&prm.tm_o, t, p.o, p.head_dim, p.seq_q, q_planes, Tr::kChunkElems, Tr::kWgRows);
  prm.lse = static_cast<float*>(p.lse);
  prm.heads = p.heads;
  prm.kv_heads = p.kv_heads;
  prm.group = p.group();
  prm.scale_log2 = float(p.scale * kLog2e);
  prm.mask = p.mask();
  prm.planes = int(q_planes);
  prm.q_tiles = (p.seq_q + Tr::kBr - 1) / Tr::kBr;
  // Query planes per L2 group: the K/V planes they read (group() query planes share one) each
  // 2 x seq_k x d elements.
  const std::int64_t kv_plane_bytes = 2 * std::int64_t(p.seq_k) * p.head_dim * std::int64_t(sizeof(typename Tr::Elem));
  prm.plane_group = int(std::min<std::int64_t>(std::int64_t(l2_plane_group(kv_plane_bytes, kv_planes)) * p.group(), q_planes));

  const auto kernel = flash_sm90_fwd_kernel<Tr>;
  FB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     int(Tr::kSmemBytes)));
  const int longest = p.causal ? prm.mask.kv_tiles(0, p.seq_q, Tr::kBc) : 0;
  const long long blocks = fwd_blocks(q_planes * prm.q_tiles, longest);
  kernel<<<unsigned(blocks), Tr::kThreads, Tr::kSmemBytes, stream>>>(prm);
  FB_CUDA_CHECK_LAUNCH();
}

template <Dtype T, int D> void run_fwd(const AttentionParams& p, cudaStream_t stream) {
  launch_fwd<typename FwdConfig<T, D>::Traits>(p, T, stream);
}

}  // namespace fb::cuda::flash_sm90
