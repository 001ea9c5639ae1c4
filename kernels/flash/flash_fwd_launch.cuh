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

// The variant bits of Cfg's non-causal launches: kOpt without kDrop, plus kExtra, plus kFullOpt without kFullDrop.
template <typename Cfg, unsigned kExtra, unsigned kFullDrop, unsigned kDrop>
inline constexpr unsigned kFullBits = ((Cfg::kOpt & ~kDrop) | kExtra) | (Cfg::kFullOpt & ~kFullDrop);

// The default tiles of Cfg with its variant bits plus kExtra for this launch (kCausalBand, kCausalTail, kFullOpt:
// TcLoop); kFullDrop: bits of kFullOpt left out (the nokpipe, nopdltail and nokvtail words); kDrop: bits of kOpt left
// out (novlate).
template <typename Cfg, unsigned kExtra, unsigned kFullDrop = 0, unsigned kDrop = 0>
void launch_fwd_tc_default_bits(const AttentionParams& p, cudaStream_t stream, int plane_group) {
  using Tr = typename Cfg::Traits;
  constexpr unsigned kOpt = (Cfg::kOpt & ~kDrop) | kExtra;
  if constexpr (Cfg::kCausalBand > 0 && Cfg::kCausalTail > 0) {
    constexpr unsigned kBanded = kOpt | kFwdQBand | kFwdQBandTail;
    if (p.causal) return launch_fwd_tc<Tr, kBanded>(p, stream, Cfg::kCausalBand, Cfg::kCausalTail);
  }
  if constexpr (Cfg::kCausalBand > 0) {
    if (p.causal) return launch_fwd_tc<Tr, kOpt | kFwdQBand>(p, stream, Cfg::kCausalBand);
  }
  constexpr unsigned kFull = kFullBits<Cfg, kExtra, kFullDrop, kDrop>;
  if constexpr (kFull != kOpt) {
    if (!p.causal) return launch_fwd_tc<Tr, kFull>(p, stream, plane_group);
  }
  launch_fwd_tc<Tr, kOpt>(p, stream, plane_group);
}
// Whether the launch's query rows see at most Cfg::kShortKeys keys on average: seq_k, or under the causal mask
// (bottom-right aligned: row i sees keys <= i + seq_k - seq_q) about seq_k - seq_q / 2.
template <typename Cfg>
bool short_launch(const AttentionParams& p) {
  const long long keys = p.causal ? std::max(0LL, static_cast<long long>(p.seq_k) - p.seq_q / 2) : p.seq_k;
  return keys <= Cfg::kShortKeys;
}
// The probe br64 (fwd_probe(), d = 128): 64 x kBc tiles, the default's warps (16 query rows each), Q from shared
// memory, the default's stages, and the default's non-causal bits with kShortOpt (every d = 128 launch takes them).
template <typename Cfg>
using Br64Traits = FwdTraits<typename Cfg::Elem, Cfg::kHeadDim, 64, Cfg::Traits::kBc, Cfg::Traits::kWarps, false, 1,
                             Cfg::Traits::kStages>;
template <typename Cfg>
inline constexpr unsigned kBr64Bits = kFullBits<Cfg, Cfg::kShortOpt, 0, 0>;
// Whether br64 takes p: a non-causal grid of less than one wave of the default's tiles (its non-causal kernel's
// resident blocks); under br64short (short) only where no block of the 64-row launch's plan (kv_tail_plan) runs more
// than kBr64ShortMaxTiles K/V tiles.
template <typename Cfg>
bool br64_launch(const AttentionParams& p, bool short_only) {
  static_assert(Cfg::kShortKeys == kEveryLaunch, "br64: the default's non-causal kernel takes kShortOpt everywhere");
  if (p.causal) return false;
  using Tr = typename Cfg::Traits;
  const long long blocks = static_cast<long long>(p.batch) * p.heads * ((p.seq_q + Tr::kBr - 1) / Tr::kBr);
  if (blocks >= resident_blocks<Tr, kBr64Bits<Cfg>>()) return false;
  if (!short_only) return true;
  const KvTailPlan k = kv_tail_plan<Br64Traits<Cfg>, kBr64Bits<Cfg>>(p);
  const int kv_tiles = (p.seq_k + Tr::kBc - 1) / Tr::kBc;
  return longest_kv_run(k.split.whole, k.pieces, kv_tiles) <= kBr64ShortMaxTiles;
}

// The default tiles of Cfg: with kShortOpt on short launches (TcLoop). kFullDrop: bits of kFullOpt left out (the
// nokpipe word: the non-causal kernels before session 15; nopdltail, nokvtail); kDrop: bits of kOpt every launch
// leaves out (novlate).
template <typename Cfg, unsigned kFullDrop = 0, unsigned kDrop = 0>
void launch_fwd_tc_default(const AttentionParams& p, cudaStream_t stream, int plane_group) {
  if constexpr (Cfg::kShortOpt != 0) {
    if (short_launch<Cfg>(p))
      return launch_fwd_tc_default_bits<Cfg, Cfg::kShortOpt, kFullDrop, kDrop>(p, stream, plane_group);
  }
  launch_fwd_tc_default_bits<Cfg, 0, kFullDrop, kDrop>(p, stream, plane_group);
}

// The probe's variant of the default tiles of Cfg (fwd_probe(), flash_fwd_config.h): the default's variant bits
// without kDrop and with kExtra (the pf word).
template <typename Cfg, unsigned kExtra, unsigned kDrop = 0>
void launch_fwd_tc_probed(const FwdProbe& pr, const AttentionParams& p, cudaStream_t stream) {
  using Tr = typename Cfg::Traits;
  constexpr unsigned kOpt = (Cfg::kOpt & ~kDrop) | kExtra;
  if (p.causal) {
    // bandN: bands of N query tiles; band0: grouped_tile's order (the default before session 11). tailN: the
    // bands' grouped tail of N device-fulls (tail0: none).
    const int band = pr.band >= 0 ? pr.band : Cfg::kCausalBand;
    const int tail = pr.tail >= 0 ? pr.tail : Cfg::kCausalTail;
    if (band > 0 && tail > 0) return launch_fwd_tc<Tr, kOpt | kFwdQBand | kFwdQBandTail>(p, stream, band, tail);
    if (band > 0) return launch_fwd_tc<Tr, kOpt | kFwdQBand>(p, stream, band);
    return launch_fwd_tc<Tr, kOpt>(p, stream);
  }
  const int group = pr.l2order ? 0 : Cfg::kPlaneGroup;
  // persist, persist2: d = 128 only (Q from shared memory), non-causal launches, without pf (and without the
  // default's kFwdL2Prefetch: a persistent block has no later block to prefetch for; nor kFwdVAfterS, which
  // session 28 measured on one work tile a block).
  if constexpr (!Tr::kQInRegs && kExtra == 0) {
    constexpr unsigned kBase = kOpt & ~(kFwdL2Prefetch | kFwdVAfterS);
    if (pr.persist_early) return launch_fwd_tc<Tr, kBase | kFwdPersist | kFwdPersistEarly>(p, stream, group);
    if (pr.persist) return launch_fwd_tc<Tr, kBase | kFwdPersist>(p, stream, group);
  }
  launch_fwd_tc<Tr, kOpt | Cfg::kFullOpt>(p, stream, group);
}
template <typename Cfg>
void launch_fwd_tc_probe(const FwdProbe& pr, const AttentionParams& p, cudaStream_t stream) {
  // br64 (d = 128): non-causal grids of less than one wave in 64-row tiles (br64short: those whose blocks run at most
  // kBr64ShortMaxTiles K/V tiles); every other launch as the default.
  if (pr.br64 || pr.br64_short) {
    if constexpr (Cfg::kHeadDim == 128) {
      if (br64_launch<Cfg>(p, pr.br64_short))
        return launch_fwd_tc<Br64Traits<Cfg>, kBr64Bits<Cfg>>(p, stream, Cfg::kPlaneGroup);
    }
    return launch_fwd_tc_default<Cfg>(p, stream, Cfg::kPlaneGroup);
  }
  // old: the 128 x kSmallBc kernel of GPUs with less shared memory a block (session 7's loop at d = 128).
  if (pr.old) return launch_fwd_tc<typename Cfg::SmallTraits, Cfg::kSmallOpt>(p, stream);
  // pro, epi + pro: the per-block work before and after the KV loop (kFwdLeanPrologue, kFwdLeanEpi).
  if (pr.lean_epi) return launch_fwd_tc_probed<Cfg, kFwdLeanEpi | kFwdLeanPrologue>(pr, p, stream);
  if (pr.lean_pro) return launch_fwd_tc_probed<Cfg, kFwdLeanPrologue>(pr, p, stream);
  // nokpipe: the shipped kernels with the non-causal launches as before session 15 (d = 128: kOpt and the short
  // epi,pro without kFwdFragPipe); d = 64 runs its default.
  if (pr.no_frag_pipe) return launch_fwd_tc_default<Cfg, kFwdFragPipe>(p, stream, Cfg::kPlaneGroup);
  // novlate (d = 128): the shipped kernels and orders without kFwdVAfterS.
  if constexpr ((Cfg::kOpt & kFwdVAfterS) != 0) {
    if (pr.no_v_late) return launch_fwd_tc_default<Cfg, 0, kFwdVAfterS>(p, stream, Cfg::kPlaneGroup);
  }
  // nopdltail (d = 128): the shipped kernels and orders without kFwdPdlTail, and so without kFwdKvTail (every
  // non-causal grid one launch); d = 64 has no such bits and runs its default.
  if (pr.no_pdl_tail) return launch_fwd_tc_default<Cfg, kFwdPdlTail | kFwdKvTail>(p, stream, Cfg::kPlaneGroup);
  // nokvtail (d = 128): the shipped kernels and orders without kFwdKvTail (kFwdPdlTail's solo tail).
  if (pr.no_kv_tail) return launch_fwd_tc_default<Cfg, kFwdKvTail>(p, stream, Cfg::kPlaneGroup);
  // nolean64 (d = 64): the shipped kernels and orders without kShortOpt (the kernels before session 33); d = 128 runs
  // its default.
  if (pr.no_lean64) {
    if constexpr (Cfg::kHeadDim == 64) return launch_fwd_tc_default_bits<Cfg, 0>(p, stream, Cfg::kPlaneGroup);
    else return launch_fwd_tc_default<Cfg>(p, stream, Cfg::kPlaneGroup);
  }
  // kvsubwave, nokvsubwave: the shipped kernels and orders; kv_tail_plan reads the word (fwd_subwave_min_pieces()).
  if (pr.kv_subwave || pr.no_kv_subwave) return launch_fwd_tc_default<Cfg>(p, stream, Cfg::kPlaneGroup);
  if (pr.no_prefetch) return launch_fwd_tc_probed<Cfg, 0, kFwdL2Prefetch>(pr, p, stream);
  if (pr.prefetch) return launch_fwd_tc_probed<Cfg, kFwdL2Prefetch>(pr, p, stream);
  launch_fwd_tc_probed<Cfg, 0>(pr, p, stream);
}

// The workspace run_fwd<T, D> takes for p: kFwdKvTail's partials and counters as the default's kernel plans them
// (probe words whose kernels plan more, or take none, run kFwdPdlTail's solo tail: launch_fwd_tc checks the size),
// else 0.
template <Dtype T, int D> std::size_t fwd_workspace(const AttentionParams& p) {
  using Cfg = FwdConfig<T, D>;
  if constexpr (Cfg::kTensorCores && (Cfg::kFullOpt & kFwdKvTail) != 0) {
    if (p.causal) return 0;
    if constexpr (kProbed<T, D>) {
      const FwdProbe& pr = fwd_probe();
      if (pr.no_kv_tail || pr.no_pdl_tail || pr.persist || pr.persist_early || pr.old) return 0;
      if constexpr (D == 128) {
        if ((pr.br64 || pr.br64_short) && br64_launch<Cfg>(p, pr.br64_short))
          return kv_tail_plan<Br64Traits<Cfg>, kBr64Bits<Cfg>>(p).bytes;
      }
    }
    if (Cfg::kHasSmall && std::size_t(smem_optin()) < Cfg::Traits::kSmemBytes) return 0;
    if constexpr (Cfg::kShortOpt != 0) {
      if (short_launch<Cfg>(p))
        return kv_tail_plan<typename Cfg::Traits, kFullBits<Cfg, Cfg::kShortOpt, 0, 0>>(p).bytes;
    }
    return kv_tail_plan<typename Cfg::Traits, kFullBits<Cfg, 0, 0, 0>>(p).bytes;
  }
  return 0;
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
    launch_fwd_tc_default<Cfg>(p, stream, Cfg::kPlaneGroup);
  } else {
    launch_fwd_simt<typename Cfg::Traits>(p, stream);
  }
}

}  // namespace fb::cuda::flash
