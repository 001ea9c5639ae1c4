// Definition of run_fwd<T, D> and the launcher of one traits configuration. Included only by the
// instantiation files flash_sm90_hdim*.cu (and by out-of-tree harnesses that time other traits).
#pragma once

#include <cuda_runtime.h>

#include "common/check.h"
#include "flash/softmax.cuh"
#include "flash_sm90/flash_sm90_config.h"
#include "flash_sm90/flash_sm90_kernel.cuh"
#include "flash_sm90/flash_sm90_tma.h"

namespace fb::cuda::flash_sm90 {

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
  prm.scale_log2 = float(p.scale * flash::kLog2e);
  prm.mask = p.mask();

  const auto kernel = flash_sm90_fwd_kernel<Tr>;
  FB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     int(Tr::kSmemBytes)));
  const dim3 grid(unsigned(q_planes), unsigned((p.seq_q + Tr::kBr - 1) / Tr::kBr));
  kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(prm);
  FB_CUDA_CHECK_LAUNCH();
}

template <Dtype T, int D> void run_fwd(const AttentionParams& p, cudaStream_t stream) {
  launch_fwd<typename FwdConfig<T, D>::Traits>(p, T, stream);
}

}  // namespace fb::cuda::flash_sm90
