// Definition of run_fwd<T, D>: the tensor-core kernel for 16-bit types, CUDA cores otherwise.
// Included only by the instantiation files flash_fwd_*.cu.
#pragma once

#include "flash/flash_fwd_config.h"
#include "flash/flash_fwd_kernel.cuh"
#include "flash/flash_fwd_simt.cuh"

namespace fb::cuda::flash {

// Shared memory a block of the current device may opt in to.
inline int smem_optin() {
  int device = 0, bytes = 0;
  FB_CUDA_CHECK(cudaGetDevice(&device));
  FB_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return bytes;
}

// The probe's variant of the tensor-core forward (fwd_probe(), flash_fwd_config.h) for the config Cfg: the
// default's variant bits with the probe's changes (kSkip: the default's kFwdWarpSkip, dropped on non-causal
// launches by `noskip`).
template <typename Tr, unsigned kBase, bool kSkip>
void launch_fwd_tc_bits(const FwdProbe& pr, const AttentionParams& p, cudaStream_t stream, int plane_group) {
  constexpr unsigned kOpt = kSkip ? kBase | kFwdWarpSkip : kBase;
  // kFwdWarpSkip masks by row already: rowmask adds nothing to it (and no instantiation).
  constexpr unsigned kRow = kSkip ? 0u : kFwdRowMask;
  if (pr.kperm && pr.rowmask) return launch_fwd_tc<Tr, kOpt | kFwdKPermuted | kRow>(p, stream, plane_group);
  if (pr.kperm) return launch_fwd_tc<Tr, kOpt | kFwdKPermuted>(p, stream, plane_group);
  if (pr.rowmask) return launch_fwd_tc<Tr, kOpt | kRow>(p, stream, plane_group);
  launch_fwd_tc<Tr, kOpt>(p, stream, plane_group);
}
template <typename Cfg>
void launch_fwd_tc_probe(const FwdProbe& pr, const AttentionParams& p, cudaStream_t stream) {
  using Tr = typename Cfg::Traits;
  // old: the 128 x kSmallBc kernel of GPUs with less shared memory a block (session 7's loop at d = 128).
  if (pr.old) return launch_fwd_tc<typename Cfg::SmallTraits, Cfg::kSmallOpt>(p, stream);
  // order: one plane's query tiles after another (FlashAttention-2's grid order) when not causal.
  const int plane_group = pr.order && !p.causal ? 1 : 0;
  if constexpr (Cfg::kHeadDim == 64) {
    if (pr.bc128) {
      using Tr128 = FwdTraits<typename Tr::Elem, 64, Tr::kBr, 128, Tr::kWarps, false>;
      return launch_fwd_tc_bits<Tr128, Cfg::kOpt | kFwdLeanCopy, false>(pr, p, stream, plane_group);
    }
  }
  constexpr bool kSkip = (Cfg::kOpt & kFwdWarpSkip) != 0;
  constexpr unsigned kBase = Cfg::kOpt & ~kFwdWarpSkip;
  if (kSkip && pr.noskip && !p.causal) return launch_fwd_tc_bits<Tr, kBase, false>(pr, p, stream, plane_group);
  launch_fwd_tc_bits<Tr, kBase, kSkip>(pr, p, stream, plane_group);
}

template <Dtype T, int D> void run_fwd(const AttentionParams& p, cudaStream_t stream) {
  using Cfg = FwdConfig<T, D>;
  if constexpr (Cfg::kTensorCores) {
    using Tr = typename Cfg::Traits;
    if constexpr (kProbed<T, D>) {
      const FwdProbe& pr = fwd_probe();
      if (pr.set) return launch_fwd_tc_probe<Cfg>(pr, p, stream);
    }
    if constexpr (Cfg::kHasSmall) {
      if (std::size_t(smem_optin()) < Tr::kSmemBytes)
        return launch_fwd_tc<typename Cfg::SmallTraits, Cfg::kSmallOpt>(p, stream);
    }
    launch_fwd_tc<Tr, Cfg::kOpt>(p, stream);
  } else {
    launch_fwd_simt<typename Cfg::Traits>(p, stream);
  }
}

}  // namespace fb::cuda::flash
