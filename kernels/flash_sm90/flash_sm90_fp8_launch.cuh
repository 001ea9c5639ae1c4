// Definition of run_fp8_fwd<D>: the V transpose into the workspace, then the fp8 forward. Included
// only by the instantiation files flash_sm90_fp8_hdim*.cu.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include <cuda_runtime.h>

#include "common/check.h"
#include "common/device_caps.h"
#include "common/softmax.cuh"
#include "flash_sm90/flash_sm90_fp8.h"
#include "flash_sm90/flash_sm90_fp8_kernel.cuh"
#include "flash_sm90/flash_sm90_launch.cuh"  // fwd_blocks
#include "flash_sm90/flash_sm90_tma.h"

namespace fb::cuda::flash_sm90 {

// Timing probe: FB_FP8_RESCALE=always rescales O after every tile (session 5's kernel), =grown (as
// shipped) only in warps where some row's running max grew. Read once per process, as the other
// probes are (a bad value throws on every launch).
inline bool fp8_rescale_always() {
  static const bool always = [] {
    const char* env = std::getenv("FB_FP8_RESCALE");
    if (env == nullptr || *env == '\0' || std::string(env) == "grown") return false;
    if (std::string(env) == "always") return true;
    throw std::runtime_error(std::string("FB_FP8_RESCALE (a timing probe of flash-sm90's fp8 forward) must be ") +
                             "'always' or 'grown', got '" + env + "'");
  }();
  return always;
}

// Timing probe: FB_FP8_VTPREP=1 runs the V transpose that gathers single bytes (as shipped), =2 the
// one with 4 x 4 byte blocks (fp8_transpose_v_kernel_v2). Read once per process.
inline int fp8_transpose_version() {
  static const int version = [] {
    const char* env = std::getenv("FB_FP8_VTPREP");
    if (env == nullptr || *env == '\0' || std::string(env) == "1") return 1;
    if (std::string(env) == "2") return 2;
    throw std::runtime_error(std::string("FB_FP8_VTPREP (a timing probe of flash-sm90's fp8 forward) must be ") +
                             "1 or 2, got '" + env + "'");
  }();
  return version;
}

template <typename Tr> void launch_fp8_fwd(const AttentionParams& p, cudaStream_t stream) {
  constexpr int D = Tr::kHeadDim;
  const std::int64_t q_planes = std::int64_t(p.batch) * p.heads;
  const std::int64_t kv_planes = std::int64_t(p.batch) * p.kv_heads;
  const std::int64_t seq_k_pad = fp8_seq_k_pad(p.seq_k);
  auto* vt = static_cast<std::uint8_t*>(p.workspace);

  // V^T with permuted keys (flash_sm90_fp8_kernel.cuh). Planes on x (up to 2^31 - 1), key blocks on
  // y, which the kernel strides over when there are more than the grid's 65535.
  {
    constexpr long long kMaxGridY = 65535;
    const bool v2 = fp8_transpose_version() == 2;
    const int block_keys = v2 ? kVt2Keys : kVtPrepKeys;
    const long long key_blocks = (seq_k_pad + block_keys - 1) / block_keys;
    const dim3 grid(unsigned(kv_planes), unsigned(std::min(key_blocks, kMaxGridY)));
    if (v2)
      fp8_transpose_v_kernel_v2<D><<<grid, kVt2Threads, 0, stream>>>(
          static_cast<const std::uint8_t*>(p.v), vt, p.seq_k, int(seq_k_pad));
    else
      fp8_transpose_v_kernel<D><<<grid, kVtPrepThreads, 0, stream>>>(
          static_cast<const std::uint8_t*>(p.v), vt, p.seq_k, int(seq_k_pad));
    FB_CUDA_CHECK_LAUNCH();
  }

  Fp8FwdParams prm{};
  encode_u8_map(&prm.tm_q, p.q, D, p.seq_q, q_planes, D, Tr::kBr, Tr::kQKRowBytes);
  encode_u8_map(&prm.tm_k, p.k, D, p.seq_k, kv_planes, D, Tr::kBc, Tr::kQKRowBytes);
  encode_u8_map(&prm.tm_vt, vt, seq_k_pad, D, kv_planes, Tr::kVtChunkKeys, D, Tr::kVtRowBytes);
  encode_bhsd_map(&prm.tm_o, Dtype::bf16, p.o, D, p.seq_q, q_planes, Tr::kOChunkElems, Tr::kWgRows);
  prm.o = static_cast<__nv_bfloat16*>(p.o);
  prm.lse = static_cast<float*>(p.lse);
  prm.heads = p.heads;
  prm.kv_heads = p.kv_heads;
  prm.group = p.group();
  prm.scale_log2 = float(p.scale * double(p.descale_q) * double(p.descale_k) * kLog2e);
  prm.p_scale_log2 = std::log2(p.p_scale);  // an integer: unsupported() checks
  prm.descale_v = p.descale_v;
  prm.mask = p.mask();
  prm.rescale_always = fp8_rescale_always();
  prm.planes = int(q_planes);
  prm.q_tiles = (p.seq_q + Tr::kBr - 1) / Tr::kBr;
  // Query planes per L2 group (as the 16-bit forward): each K/V plane is K and V^T, d x seq_k bytes.
  const std::int64_t kv_plane_bytes = 2 * seq_k_pad * D;
  prm.plane_group = int(std::min<std::int64_t>(
      std::int64_t(l2_plane_group(kv_plane_bytes, kv_planes)) * p.group(), q_planes));

  const auto kernel = flash_sm90_fp8_fwd_kernel<Tr>;
  FB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     int(Tr::kSmemBytes)));
  const int longest = p.causal ? prm.mask.kv_tiles(0, p.seq_q, Tr::kBc) : 0;
  const long long blocks = fwd_blocks(q_planes * prm.q_tiles, longest);
  kernel<<<unsigned(blocks), Tr::kThreads, Tr::kSmemBytes, stream>>>(prm);
  FB_CUDA_CHECK_LAUNCH();
}

// A timing probe, not a setting: environment variables pick a compiled variant other than
// Fp8TileConfig's Traits, so one device call can time them side by side (unset or empty: as shipped):
//   FB_FP8_EXP2_POLY  eighths of the exponentials on the FMA pipe, 0..4
//   FB_FP8_BC         keys per K/V tile, 128, 192 or 224 (d = 128 only); 96 = three consumer warpgroups
//                     with 96-key tiles (d = 128, O staged; FB_FP8_OSTORE=direct for O stored directly)
//   FB_FP8_STAGES     K/V ring depth, 2 or 3 (224 keys with 3 stages only with O stored directly:
//                     the staging tile leaves no room for the third stage)
//   FB_FP8_OSTORE     tma (O staged in shared memory, stored by TMA) | direct (each thread stores its
//                     bf16 pairs to global memory); direct is compiled with exp2 all on MUFU (and with
//                     FB_FP8_EXP2_POLY 1, 2 at 224 keys, 3 stages)
//   FB_FP8_RESCALE    always | grown (fp8_rescale_always above)
//   FB_FP8_VTPREP     1 | 2, the V transpose's version (fp8_transpose_version above)
//   FB_FP8_WAIT       pinned (as shipped) | late: session 6's loop, where ptxas hoisted the wait for
//                     P V above the softmax (Fp8FwdTraits::kPinSoftmax); late is compiled for the
//                     shipped tile only (the other probes unset)
inline int fp8_probe_choice(const char* name, int configured, std::initializer_list<int> allowed) {
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') return configured;
  char* end = nullptr;
  const long v = std::strtol(env, &end, 10);
  std::string list;
  for (const int a : allowed) {
    if (end != env && *end == '\0' && v == a) return a;
    list += (list.empty() ? "" : ", ") + std::to_string(a);
  }
  throw std::runtime_error(std::string(name) + " (a timing probe of flash-sm90's fp8 forward) must be one of " +
                           list + ", got '" + env + "'");
}
// FB_FP8_WAIT: true = pinned (the softmax between the two waits).
inline bool fp8_probe_pin_softmax() {
  const char* env = std::getenv("FB_FP8_WAIT");
  if (env == nullptr || *env == '\0' || std::string(env) == "pinned") return true;
  if (std::string(env) == "late") return false;
  throw std::runtime_error(std::string("FB_FP8_WAIT (a timing probe of flash-sm90's fp8 forward) must be ") +
                           "'pinned' or 'late', got '" + env + "'");
}
// FB_FP8_OSTORE: true = O staged and stored by TMA.
inline bool fp8_probe_stage_o(bool configured) {
  const char* env = std::getenv("FB_FP8_OSTORE");
  if (env == nullptr || *env == '\0') return configured;
  if (std::string(env) == "tma") return true;
  if (std::string(env) == "direct") return false;
  throw std::runtime_error(std::string("FB_FP8_OSTORE (a timing probe of flash-sm90's fp8 forward) must be ") +
                           "'tma' or 'direct', got '" + env + "'");
}

template <int D, int Bc, int Stages>
void run_fp8_fwd_poly(const AttentionParams& p, cudaStream_t stream, int poly) {
  using Config = Fp8TileConfig<D>;
  switch (poly) {
    case 0: return launch_fp8_fwd<typename Config::template TraitsWith<Bc, Stages, 0>>(p, stream);
    case 1: return launch_fp8_fwd<typename Config::template TraitsWith<Bc, Stages, 1>>(p, stream);
    case 2: return launch_fp8_fwd<typename Config::template TraitsWith<Bc, Stages, 2>>(p, stream);
    case 3: return launch_fp8_fwd<typename Config::template TraitsWith<Bc, Stages, 3>>(p, stream);
    default: return launch_fp8_fwd<typename Config::template TraitsWith<Bc, Stages, 4>>(p, stream);
  }
}

// O stored directly (no staging tile): exp2 all on MUFU, and at 224 keys with 3 stages also 1/8 or 2/8
// on the FMA pipe (the softmax now overlaps P V, which changes the balance session 6 measured).
template <int D>
void run_fp8_fwd_direct_o(const AttentionParams& p, cudaStream_t stream, int bc, int stages, int poly) {
  using Config = Fp8TileConfig<D>;
  if constexpr (D == 128) {
    if (bc == 96) {  // three consumer warpgroups (run_fp8_fwd)
      if (stages == 2) return launch_fp8_fwd<Fp8FwdTraits<128, 96, 3, 2, 0, false>>(p, stream);
      return launch_fp8_fwd<Fp8FwdTraits<128, 96, 3, 3, 0, false>>(p, stream);
    }
    if (bc == 224) {
      if (stages == 2) return launch_fp8_fwd<typename Config::template TraitsWith<224, 2, 0, false>>(p, stream);
      if (poly == 1) return launch_fp8_fwd<typename Config::template TraitsWith<224, 3, 1, false>>(p, stream);
      if (poly == 2) return launch_fp8_fwd<typename Config::template TraitsWith<224, 3, 2, false>>(p, stream);
      return launch_fp8_fwd<typename Config::template TraitsWith<224, 3, 0, false>>(p, stream);
    }
    if (bc == 192) {
      if (stages == 2) return launch_fp8_fwd<typename Config::template TraitsWith<192, 2, 0, false>>(p, stream);
      return launch_fp8_fwd<typename Config::template TraitsWith<192, 3, 0, false>>(p, stream);
    }
  }
  if (stages == 2) return launch_fp8_fwd<typename Config::template TraitsWith<128, 2, 0, false>>(p, stream);
  return launch_fp8_fwd<typename Config::template TraitsWith<128, 3, 0, false>>(p, stream);
}

template <int D> void run_fp8_fwd(const AttentionParams& p, cudaStream_t stream) {
  using Config = Fp8TileConfig<D>;
  // Read once per process (a bad value throws on every launch: a throwing initialiser runs again).
  static const int poly = fp8_probe_choice("FB_FP8_EXP2_POLY", Config::kExp2Poly, {0, 1, 2, 3, 4});
  static const int bc = fp8_probe_choice("FB_FP8_BC", Config::kBc, {96, 128, 192, 224});
  static const int stages = fp8_probe_choice("FB_FP8_STAGES", Config::kStages, {2, 3});
  static const bool stage_o = fp8_probe_stage_o(Config::kStageO);
  static const bool pin = fp8_probe_pin_softmax();
  if (!pin) {
    if (poly != Config::kExp2Poly || bc != Config::kBc || stages != Config::kStages || stage_o != Config::kStageO)
      throw std::runtime_error("flash-sm90 fp8: FB_FP8_WAIT=late is compiled for the shipped tile only (unset "
                               "FB_FP8_EXP2_POLY, FB_FP8_BC, FB_FP8_STAGES and FB_FP8_OSTORE)");
    return launch_fp8_fwd<typename Config::template TraitsWith<Config::kBc, Config::kStages, Config::kExp2Poly,
                                                               Config::kStageO, false>>(p, stream);
  }
  // 224 keys with three stages fit only without the O staging tile (228 KB with it).
  const bool direct = !stage_o || (D == 128 && bc == 224 && stages == 3);
  if (direct) {
    const bool poly_compiled = poly == 0 || (D == 128 && bc == 224 && stages == 3 && poly <= 2);
    if (!poly_compiled)
      throw std::runtime_error("flash-sm90 fp8: O stored directly (FB_FP8_OSTORE=direct, or 224 keys with 3 "
                               "stages) is compiled with FB_FP8_EXP2_POLY=0 only (and 1, 2 at 224 keys, 3 stages)");
    return run_fp8_fwd_direct_o<D>(p, stream, bc, stages, poly);
  }
  if constexpr (D == 128) {
    if (bc == 96) {
      // Three consumer warpgroups (192 query rows; 160 registers each): a third warp per scheduler
      // for the softmax, as at d = 64. Exp2 all on MUFU.
      if (poly != 0) throw std::runtime_error("flash-sm90 fp8: FB_FP8_BC=96 is compiled with FB_FP8_EXP2_POLY=0 only");
      if (stages == 2) return launch_fp8_fwd<Fp8FwdTraits<128, 96, 3, 2, 0, true>>(p, stream);
      return launch_fp8_fwd<Fp8FwdTraits<128, 96, 3, 3, 0, true>>(p, stream);
    }
    if (bc == 192) {
      if (stages == 2) return run_fp8_fwd_poly<D, 192, 2>(p, stream, poly);
      return run_fp8_fwd_poly<D, 192, 3>(p, stream, poly);
    }
    // 224 keys (FlashAttention-3's fp8 tile at d = 128) with O staged: two stages only.
    if (bc == 224) return run_fp8_fwd_poly<D, 224, 2>(p, stream, poly);
  }
  // d = 64 runs 128-key tiles whatever FB_FP8_BC says: three consumers have 160 registers each, and
  // S (96) + P (24) + O (32) of a 192-key tile spill.
  if (stages == 2) return run_fp8_fwd_poly<D, 128, 2>(p, stream, poly);
  return run_fp8_fwd_poly<D, 128, 3>(p, stream, poly);
}

}  // namespace fb::cuda::flash_sm90
