// The known-order MMA chain probe (tests/mma_order_probe.cu), as its host program sees it
// (tests/mma_order_main.cpp; docs/perf-notes.md, flash-sm90 fp32 backward, "Session 19 ... prepared for session 20").
#pragma once

#include <cstddef>

namespace fb::test {

// Tensor-core formats the probe chains: fp16 (mma.sync m16n8k16, f32 accumulator) or TF32 (m16n8k8).
enum class MmaFormat { fp16, tf32 };
inline constexpr int mma_k_step(MmaFormat f) { return f == MmaFormat::fp16 ? 16 : 8; }

// The instruction that runs the chain: mma.sync (one warp per tile; sm_80+) or wgmma m64n8 (one warpgroup per 4
// tiles, A from registers, B from shared memory K-major without swizzle; sm_90a). wgmma's four warps share B: the
// tiles 4j..4j+3 must have equal B.
enum class MmaInstr { mma_sync, wgmma };

// One MMA tile: 16 rows x 8 columns.
inline constexpr int kMmaRows = 16;
inline constexpr int kMmaCols = 8;

// A chain problem, host arrays. `tiles` independent warps (one block of 32 threads each); warp t computes
//   for c in [0, k / chunk): out[t][c] (16 x 8, row-major) = sum over k steps s of chunk c, in order, and for each
//   step over terms 0..terms-1, in order: one MMA acc += A_term,t[:, s] B_term,t[s, :], acc starting at zero.
// a: [terms][tiles][16][k] (row-major: A's rows); b: [terms][tiles][8][k] (B^T: one row per output column).
// Every value must be exactly representable in the format (fp16: the conversion is then exact; TF32: the low 13
// mantissa bits zero). k and chunk are multiples of mma_k_step(fmt), k a multiple of chunk.
struct MmaChainProblem {
  MmaFormat fmt = MmaFormat::fp16;
  MmaInstr instr = MmaInstr::mma_sync;
  int terms = 1;
  int tiles = 1;
  int k = 0;
  int chunk = 0;
  const float* a = nullptr;
  const float* b = nullptr;
};
inline std::size_t mma_chain_out_size(const MmaChainProblem& p) {
  return std::size_t(p.tiles) * (p.k / p.chunk) * kMmaRows * kMmaCols;
}

// Whether a CUDA device is visible (no throw).
bool mma_probe_device_available();

// Runs the problem on the device; out holds mma_chain_out_size(p) floats. Returns false (out untouched) when this
// build has no code for p.instr on the device (wgmma without sm_90a). Throws on a CUDA error or a bad problem.
bool run_mma_chains(const MmaChainProblem& p, float* out);

}  // namespace fb::test
