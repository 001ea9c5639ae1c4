// The Hopper fp8 (e4m3) forward: host-side facts and the launch declaration (definition in
// flash_sm90_fp8_launch.cuh, one head_dim per file).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "attention.h"
#include "flash_sm90/flash_sm90_fp8_traits.h"

namespace fb::cuda::flash_sm90 {

// Tile configuration per head_dim (the one table to edit when tuning the fp8 forward).
template <int D> struct Fp8TileConfig;
// kExp2Poly: eighths of the exponentials on the FMA pipe, kStageO: O staged for a TMA store
// (Fp8FwdTraits). TraitsWith<Bc, Stages, E, StageO, Pin> are
// the variants the launcher's timing probe can pick (flash_sm90_fp8_launch.cuh); Traits is what ships.
// Chosen from session 6's two device calls (docs/perf-notes.md, fp8 section): at d = 128 224-key tiles
// with two stages (FlashAttention-3's fp8 tile; 918 / 952 TFLOP/s at 8k / 16k, +7% over 192 keys with
// three stages), at d = 64 a third K/V stage (+1-2%); exp2 on the FMA pipe cost everywhere (0/8).
template <> struct Fp8TileConfig<64> {
  // Three consumer warpgroups, as the 16-bit forward at d = 64: short GEMMs against the softmax.
  static constexpr int kBc = 128, kStages = 3, kExp2Poly = 0;
  static constexpr bool kStageO = true;
  template <int Bc, int Stages, int E, bool StageO = true, bool Pin = true>
  using TraitsWith = Fp8FwdTraits<64, Bc, 3, Stages, E, StageO, Pin>;
  using Traits = TraitsWith<kBc, kStages, kExp2Poly, kStageO>;
};
template <> struct Fp8TileConfig<128> {
  static constexpr int kBc = 224, kStages = 2, kExp2Poly = 0;
  static constexpr bool kStageO = true;
  template <int Bc, int Stages, int E, bool StageO = true, bool Pin = true>
  using TraitsWith = Fp8FwdTraits<128, Bc, 2, Stages, E, StageO, Pin>;
  using Traits = TraitsWith<kBc, kStages, kExp2Poly, kStageO>;
};

template <int D> void run_fp8_fwd(const AttentionParams& p, cudaStream_t stream);

inline bool fp8_head_dim(int d) { return d == 64 || d == 128; }
inline int fp8_query_tile(int d) {
  return d == 64 ? Fp8TileConfig<64>::Traits::kBr : Fp8TileConfig<128>::Traits::kBr;
}
// Keys per K/V tile as shipped (the running maxima P is quantised against change with it: the GPU
// tests emulate the same tiles on the CPU).
inline int fp8_key_tile(int d) {
  return d == 64 ? Fp8TileConfig<64>::Traits::kBc : Fp8TileConfig<128>::Traits::kBc;
}
inline std::size_t fp8_smem_bytes(int d) {
  return d == 64 ? Fp8TileConfig<64>::Traits::kSmemBytes : Fp8TileConfig<128>::Traits::kSmemBytes;
}
// Keys per row of the transposed V in the workspace: seq_k rounded up to the permutation group
// (which also keeps TMA's row stride a multiple of 16 bytes).
inline std::int64_t fp8_seq_k_pad(int seq_k) {
  return (std::int64_t(seq_k) + kVPermutationGroup - 1) / kVPermutationGroup * kVPermutationGroup;
}
// The workspace of the fp8 forward: V transposed, [batch * kv_heads][d][seq_k_pad] e4m3.
inline std::size_t fp8_workspace_bytes(const AttentionParams& p) {
  return std::size_t(p.batch) * std::size_t(p.kv_heads) * std::size_t(p.head_dim) *
         std::size_t(fp8_seq_k_pad(p.seq_k));
}

}  // namespace fb::cuda::flash_sm90
