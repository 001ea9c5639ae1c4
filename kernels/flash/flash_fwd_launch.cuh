// Definition of run_fwd<T, D>: the tensor-core kernel for 16-bit types, CUDA cores otherwise.
// Included only by the instantiation files flash_fwd_*.cu.
#pragma once

#include <stdexcept>
#include <string>

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

// Launches flash_fwd_tc_kernel<Tr, kOpt> for the kOpt in kOpts equal to `opt`; a probe combination
// without an instantiation throws (FB_FLASH_FWD_PROBE names what exists: flash_fwd_config.h).
template <typename Tr, unsigned... kOpts>
void launch_fwd_tc_opt(unsigned opt, const AttentionParams& p, cudaStream_t stream) {
  const bool launched = ((opt == kOpts ? (launch_fwd_tc<Tr, kOpts>(p, stream), true) : false) || ...);
  if (!launched)
    throw std::invalid_argument("FB_FLASH_FWD_PROBE: this combination of words has no instantiation "
                                "for d = " + std::to_string(Tr::kHeadDim) + ", Bc = " +
                                std::to_string(Tr::kBc) + ", " + std::to_string(Tr::kStages) + " stages");
}

// The probe's variants of the tensor-core forward with tiles Tr (fwd_probe(), flash_fwd_config.h).
template <typename Tr>
void launch_fwd_tc_probe(const FwdProbe& pr, const AttentionParams& p, cudaStream_t stream) {
  constexpr unsigned k1 = kFwdOneBarrier, k2 = kFwdWarpSkip, k8 = kFwdLeanCopy, k16 = kFwdOverlap,
                     k64 = kFwdLazyRescale;
  const unsigned opt = (pr.one_bar || pr.stages >= 3 ? k1 : 0u) | (pr.warp_skip ? k2 : 0u) |
                       (pr.lean_copy ? k8 : 0u) | (pr.overlap ? k16 : 0u) | (pr.lazy ? k64 : 0u);
  if constexpr (Tr::kHeadDim == 128) {
    if (pr.bc64) {
      using Tr64 = FwdTraits<typename Tr::Elem, Tr::kHeadDim, Tr::kBr, 64, Tr::kWarps, Tr::kQInRegs>;
      return launch_fwd_tc_opt<Tr64, k2 | k8, k2 | k8 | k64>(opt, p, stream);
    }
  } else {
    // d = 64: no probe beat the shipped kernel in calls A and B; every word runs it.
    return launch_fwd_tc<Tr>(p, stream);
  }
  // (onebar, s3/s4 and ovl have no instantiation left: calls A and B measured them slower; the kernel keeps
  // their code paths, docs/perf-notes.md has the numbers.)
  if (pr.stages != 2) throw std::invalid_argument("FB_FLASH_FWD_PROBE: s3/s4 have no instantiation left");
  launch_fwd_tc_opt<Tr, 0u>(opt, p, stream);
}

template <Dtype T, int D> void run_fwd(const AttentionParams& p, cudaStream_t stream) {
  using Cfg = FwdConfig<T, D>;
  if constexpr (Cfg::kTensorCores) {
    using Tr = typename Cfg::Traits;
    if constexpr (kProbed<T, D>) {
      const FwdProbe& pr = fwd_probe();
      if (pr.set) {
        // The probes start from session 7's tiles (128 x 32 at d = 128).
        using Tr2 = FwdTraits<typename Tr::Elem, D, Tr::kBr, Cfg::kSmallBc, Tr::kWarps, Tr::kQInRegs>;
        return launch_fwd_tc_probe<Tr2>(pr, p, stream);
      }
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
