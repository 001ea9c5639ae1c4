// Launcher of the Hopper fp32 (TF32 wgmma) forward for one traits configuration; included only by
// the instantiation files flash_sm90_tf32_hdim*.cu.
#pragma once

#include <cstdlib>
#include <string>

#include <cuda_runtime.h>

#include "common/check.h"
#include "common/device_caps.h"
#include "common/softmax.cuh"
#include "flash_sm90/flash_sm90_tf32.h"
#include "flash_sm90/flash_sm90_tf32_kernel.cuh"
#include "flash_sm90/flash_sm90_tma.h"

namespace fb::cuda::flash_sm90 {

// Timing probes, so that one binary times variants apart in one device call.
// FB_SM90_FP32_FWD_PROBE is a comma-separated list of (block order only: the same kernel):
//   plane     non-causal blocks plane-major (one plane group), the order before session 6
//   grouped   causal blocks in L2 plane groups too (session 7's sanitizer call: +2-7% causal, level
//             non-causal; one measurement, not flipped)
// Read once; unset (or no known word) is the shipping forward. The kernel variants session 6 and 7 measured
// slower or level (s6 = session 6's kernel with its words shared / batch; pingpong; khalf; onepass at
// d = 64) were probe words until session 8; their dispatch (~50 instantiations in the two hdim files) is
// removed, their measurements stay in docs/perf-notes.md ("flash-sm90 fp32 forward", "... backward").
struct Tf32FwdProbe {
  bool plane_major = false;
  bool causal_groups = false;
};
inline Tf32FwdProbe tf32_fwd_probe() {
  static const Tf32FwdProbe probe = [] {
    Tf32FwdProbe f;
    const char* env = std::getenv("FB_SM90_FP32_FWD_PROBE");
    const std::string v = "," + std::string(env ? env : "") + ",";
    const auto has = [&](const char* w) { return v.find("," + std::string(w) + ",") != std::string::npos; };
    f.plane_major = has("plane");
    f.causal_groups = has("grouped");
    return f;
  }();
  return probe;
}

template <typename Tr> void launch_tf32_fwd(const AttentionParams& p, cudaStream_t stream) {
  Tf32FwdParams prm{};
  const std::int64_t q_planes = std::int64_t(p.batch) * p.heads;
  const std::int64_t kv_planes = std::int64_t(p.batch) * p.kv_heads;
  encode_bhsd_map(&prm.tm_q, Dtype::fp32, p.q, p.head_dim, p.seq_q, q_planes, Tr::kChunkElems, Tr::kBr);
  encode_bhsd_map(&prm.tm_k, Dtype::fp32, p.k, p.head_dim, p.seq_k, kv_planes, Tr::kChunkElems, Tr::kBc);
  encode_bhsd_map(&prm.tm_v, Dtype::fp32, p.v, p.head_dim, p.seq_k, kv_planes, Tr::kChunkElems, Tr::kBc);
  prm.o = static_cast<float*>(p.o);
  prm.lse = static_cast<float*>(p.lse);
  prm.heads = p.heads;
  prm.kv_heads = p.kv_heads;
  prm.group = p.group();
  prm.scale_log2 = float(p.scale * kLog2e);
  prm.mask = p.mask();
  // Block order (common/tile_order.h): non-causal, groups of query planes whose K/V planes (group()
  // query planes share one; K and V, seq_k x d fp32 each) stay within a third of L2 (fp32 K/V of
  // every head at 16k tokens x 2048 model dim is 256 MB; plane-major, the 132 blocks running at a time
  // read ~all of it per query tile). Causal: one group, every plane's longest tiles first, which
  // balances the SMs at the end of the grid (the portable forward measured groups 3-10% slower there,
  // docs/perf-notes.md, session 5).
  prm.planes = int(q_planes);
  prm.q_tiles = (p.seq_q + Tr::kBr - 1) / Tr::kBr;
  const std::int64_t kv_plane_bytes = 2 * std::int64_t(p.seq_k) * p.head_dim * std::int64_t(sizeof(float));
  const std::int64_t group = std::int64_t(l2_plane_group(kv_plane_bytes, kv_planes)) * p.group();
  const Tf32FwdProbe probe = tf32_fwd_probe();
  const bool one_group = p.causal ? !probe.causal_groups : probe.plane_major;
  prm.plane_group = int(one_group || group > q_planes ? q_planes : group);

  const auto kernel = flash_sm90_tf32_fwd_kernel<Tr>;
  FB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     int(Tr::kSmemBytes)));
  const unsigned blocks = unsigned(q_planes * prm.q_tiles);
  kernel<<<blocks, Tr::kThreads, Tr::kSmemBytes, stream>>>(prm);
  FB_CUDA_CHECK_LAUNCH();
}

template <int D, bool kSplit> void run_tf32_fwd(const AttentionParams& p, cudaStream_t stream) {
  launch_tf32_fwd<typename Tf32FwdConfig<D, kSplit>::Traits>(p, stream);
}

}  // namespace fb::cuda::flash_sm90
