// FP32 FlashAttention forward on tensor cores (mma.sync m16n8k8 TF32, sm_80+).
//
// TF32 keeps 10 of fp32's 23 stored mantissa bits, so one TF32 product is ~2^-11 accurate, not fp32's
// 2^-24. With Fp32Math::tf32x3 every operand x is split into hi = tf32(x) and lo = tf32(x - hi), and a
// product is hi_a hi_b + hi_a lo_b + lo_a hi_b (three MMAs; lo_a lo_b is below 2^-22 relative), all
// accumulated in fp32: fp32-level accuracy. Fp32Math::tf32x1 issues only hi_a hi_b (the diagnostic).
//
// The structure is the 16-bit kernel's (flash_fwd_kernel.cuh): one block per (batch * head, query tile
// of kBr rows), warp w owns kWarpRows rows, K/V tiles double-buffered through cp.async, online softmax
// in base 2. What differs:
//   S = Q K^T   Q (A) and K (B) through ldmatrix on the fp32 data: its b16 pairs are whole fp32
//               elements, and the m16n8k8 TF32 A/B layouts are the ldmatrix layouts of 8x4 fp32 blocks
//               (kernels/common/ptx.cuh). Q is re-read from shared memory every tile: split Q
//               fragments for the whole of d would take 2 x 4 x kMTiles x d/8 registers.
//   O += P V    P comes from the S accumulators, whose thread holds keys 2t and 2t+1 of an n8 block,
//               while the A operand wants k = t and t + 4. The sum over keys does not care about their
//               order, so k step kk uses the permutation k = t -> key 2t, k = t + 4 -> key 2t + 1: the
//               accumulator registers (c0, c2, c1, c3) are then exactly (a0, a1, a2, a3), no shuffles.
//               V (B) takes the same permutation: b0 = V[2t][g], b1 = V[2t + 1][g], read as scalars
//               (ldmatrix cannot transpose 32-bit elements).
// Accumulation: the tensor core adds its products into the accumulator with truncation (round toward
// zero), not round-to-nearest. Over a long sum that bias adds up: O accumulated across all N/8 k steps
// inside the tensor core would lose ~N/16 units in the last place. So nothing accumulates inside the
// tensor core for long: each tile's P V starts from zeros and joins O through an fp32 FMA (which also
// applies the online-softmax rescale: no extra instruction), and S is summed in chunks of
// kSChunkSteps k8 steps (one: 3 MMAs, 24 products) added in fp32.
// Shared rows are padded by 4 floats (16 bytes): the ldmatrix row addresses land in distinct bank
// groups, and the scalar V reads (rows 2t, 2t + 1; columns g) hit 32 distinct banks.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "common/check.h"
#include "common/ptx.cuh"
#include "flash/flash_fwd_args.cuh"
#include "flash/flash_fwd_kernel.cuh"  // load_tile_async
#include "flash/fp32_math.h"

namespace fb::cuda::flash {

// d += a * b with TF32 operands given as (hi, lo) parts: lo_a hi_b + hi_a lo_b + hi_a hi_b with the
// split (small terms first), hi_a hi_b alone without it (the lo arrays are then dead code).
template <bool kSplit>
__device__ __forceinline__ void mma_tf32(float (&d)[4], const std::uint32_t (&a_hi)[4],
                                         const std::uint32_t (&a_lo)[4],
                                         const std::uint32_t (&b_hi)[2],
                                         const std::uint32_t (&b_lo)[2]) {
  if constexpr (kSplit) {
    ptx::mma_m16n8k8_tf32(d, a_lo, b_hi);
    ptx::mma_m16n8k8_tf32(d, a_hi, b_lo);
  }
  ptx::mma_m16n8k8_tf32(d, a_hi, b_hi);
}

// The fp32 values of ldmatrix'd registers.
// hi (and, when split, lo) TF32 parts of n fp32 values.
template <bool kSplit, int N>
__device__ __forceinline__ void tf32_parts(const float (&x)[N], std::uint32_t (&hi)[N],
                                           std::uint32_t (&lo)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
    if constexpr (kSplit) {
      ptx::split_tf32(x[i], hi[i], lo[i]);
    } else {
      hi[i] = ptx::to_tf32(x[i]);
      lo[i] = 0;
    }
  }
}

// hi (and lo) TF32 parts of 4 fp32 values that arrived as raw bits (ldmatrix).
template <bool kSplit>
__device__ __forceinline__ void tf32_parts_bits(const std::uint32_t (&bits)[4], std::uint32_t (&hi)[4],
                                                std::uint32_t (&lo)[4]) {
  const float x[4] = {__uint_as_float(bits[0]), __uint_as_float(bits[1]), __uint_as_float(bits[2]),
                      __uint_as_float(bits[3])};
  tf32_parts<kSplit>(x, hi, lo);
}

template <typename Tr, Fp32Math kMath>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinBlocksPerSm)
    flash_fwd_tf32_kernel(const FwdArgs<float, float> a) {
  static_assert(kMath == Fp32Math::tf32x3 || kMath == Fp32Math::tf32x1, "tensor-core modes only");
  constexpr bool kSplit = kMath == Fp32Math::tf32x3;
  constexpr int D = Tr::kHeadDim;
  constexpr int kMT = Tr::kMTiles;
  constexpr float kNegInf = -INFINITY;

  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  // Quad coordinates of the m16n8 fragments: rows g and g + 8; accumulator columns 2t, 2t + 1.
  const int g = lane / 4;
  const int t = lane % 4;

  // Tile order (common/tile_order.h): plane groups sized for L2, within a group the longest causal
  // tiles (the last ones: they see the most keys) first, which balances the tail of the grid.
  const PlaneTile tile = grouped_tile(int(blockIdx.x), a.planes, a.q_tiles, a.plane_group);
  const int q_tile = tile.q_tile;
  const int q0 = q_tile * Tr::kBr;
  const int seq_q = a.mask.seq_q, seq_k = a.mask.seq_k;
  const HeadOffsets off = head_offsets(a, tile.bh, D);
  const float* gQ = a.q + off.q + std::int64_t(q0) * D;
  const float* gK = a.k + off.kv;
  const float* gV = a.v + off.kv;

  float* sQ = reinterpret_cast<float*>(fwd_smem());  // (kBr, D); later O staging
  float* sK = sQ + Tr::kQTileElems;                   // kStages x (kBc, D)
  float* sV = sK + Tr::kStages * Tr::kKVTileElems;    // kStages x (kBc, D)
  const int warp_row0 = warp * Tr::kWarpRows;

  // At least one tile: a query tile whose rows all see no key (causal, seq_q > seq_k) runs tile 0
  // fully masked, which leaves its sums at 0 (O = 0, LSE = -inf) and keeps the cp.async group count
  // the same as every other block's.
  const int n_tiles = max(a.mask.kv_tiles(q0, Tr::kBr, Tr::kBc), 1);

  // Prologue: commit groups Q, K_0, V_0 (in that order; the waits below count on it).
  load_tile_async<Tr, Tr::kBr>(sQ, gQ, seq_q - q0, tid);
  ptx::cp_async_commit();
  load_tile_async<Tr, Tr::kBc>(sK, gK, seq_k, tid);
  ptx::cp_async_commit();
  load_tile_async<Tr, Tr::kBc>(sV, gV, seq_k, tid);
  ptx::cp_async_commit();

  // ldmatrix.x4 row addresses of this lane (16 bytes = 4 floats per row). A (Q rows): lanes 0-15
  // rows 0-15 at k 0-3, lanes 16-31 the same rows at k 4-7 -> (a0, a1, a2, a3). B from K (rows =
  // keys): lanes 0-7 / 8-15 keys 0-7 at k 0-3 / 4-7, lanes 16-31 the same for keys 8-15 -> (b0, b1)
  // of two n8 blocks.
  constexpr int kEB = sizeof(float);
  constexpr int kRowBytes = Tr::kRowStride * kEB;
  constexpr int kKVTileBytes = Tr::kKVTileElems * kEB;
  constexpr int kBlockBytes = Tr::kChunkBytes;            // one 4-float column block
  constexpr int kKStepBytes = Tr::kMmaK * int(sizeof(float));  // one k8 step along d
  const int a_row = lane % 16, a_col = lane / 16;
  const int k_row = (lane / 16) * 8 + lane % 8, k_col = (lane / 8) % 2;
  const std::uint32_t q_lane =
      ptx::smem_addr(sQ) + (warp_row0 + a_row) * kRowBytes + a_col * kBlockBytes;
  const std::uint32_t k_lane = ptx::smem_addr(sK) + k_row * kRowBytes + k_col * kBlockBytes;
  // V as B of the permuted k step: rows 2t and 2t + 1, column g (plus compile-time offsets).
  const float* v_lane = sV + (2 * t) * Tr::kRowStride + g;

  float acc_o[kMT][Tr::kONTiles][4];  // (kWarpRows, D) in m16n8 accumulator layout
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < Tr::kONTiles; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_o[mt][nt][e] = 0.f;
  // Row statistics for rows g (index 0) and g + 8 (index 1) of each m16 block; row_max in the exp2
  // domain (times scale*log2(e)), row_sum this lane's partial sum (reduced over the quad at the end).
  float row_max[kMT][2], row_sum[kMT][2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      row_max[mt][hf] = kNegInf;
      row_sum[mt][hf] = 0.f;
    }

  for (int j = 0; j < n_tiles; ++j) {
    const int stage = j % Tr::kStages;
    const int k0 = j * Tr::kBc;
    const std::uint32_t k_stage = k_lane + stage * kKVTileBytes;
    const float* v_stage = v_lane + stage * Tr::kKVTileElems;

    // K_j (and Q) landed, only V_j may still fly, for every thread; every warp is done with tile
    // j - 1, whose buffers the prefetch below overwrites.
    ptx::cp_async_wait<1>();
    __syncthreads();
    {
      const int next = j + 1;
      const int next_stage = next % Tr::kStages;
      if (next < n_tiles)
        load_tile_async<Tr, Tr::kBc>(sK + next_stage * Tr::kKVTileElems,
                                     gK + std::int64_t(next) * Tr::kBc * D, seq_k - next * Tr::kBc,
                                     tid);
      ptx::cp_async_commit();  // possibly empty: keeps the group count uniform
      if (next < n_tiles)
        load_tile_async<Tr, Tr::kBc>(sV + next_stage * Tr::kKVTileElems,
                                     gV + std::int64_t(next) * Tr::kBc * D, seq_k - next * Tr::kBc,
                                     tid);
      ptx::cp_async_commit();
    }

    // ---- S = Q K^T: (kWarpRows, kBc) per warp, in chunks of kSChunkSteps k steps ----
    // Each chunk accumulates inside the tensor core into zeros, and the chunks are added in fp32
    // (round to nearest): the tensor core's own accumulation truncates, and over all of d that bias
    // would add up (see the top).
    float s[kMT][Tr::kSNTiles][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < Tr::kSNTiles; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.f;
    // Unrolled by 2 only: fully unrolled, ptxas hoisted later chunks' ldmatrix and spilled (52 bytes).
#pragma unroll 2
    for (int c = 0; c < Tr::kQKSteps; c += Tr::kSChunkSteps) {
      float part[kMT][Tr::kSNTiles][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int nt = 0; nt < Tr::kSNTiles; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) part[mt][nt][e] = 0.f;
#pragma unroll
      for (int ks = c; ks < c + Tr::kSChunkSteps; ++ks) {
        std::uint32_t qa_hi[kMT][4], qa_lo[kMT][4];
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          std::uint32_t raw[4];
          ptx::ldmatrix_x4(raw, q_lane + (mt * Tr::kMmaM * kRowBytes + ks * kKStepBytes));
          tf32_parts_bits<kSplit>(raw, qa_hi[mt], qa_lo[mt]);
        }
#pragma unroll
        for (int nt = 0; nt < Tr::kSNTiles; nt += 2) {
          std::uint32_t raw[4];
          ptx::ldmatrix_x4(raw, k_stage + (nt * Tr::kMmaN * kRowBytes + ks * kKStepBytes));
          std::uint32_t kb_hi[4], kb_lo[4];
          tf32_parts_bits<kSplit>(raw, kb_hi, kb_lo);
          const std::uint32_t b0_hi[2] = {kb_hi[0], kb_hi[1]}, b0_lo[2] = {kb_lo[0], kb_lo[1]};
          const std::uint32_t b1_hi[2] = {kb_hi[2], kb_hi[3]}, b1_lo[2] = {kb_lo[2], kb_lo[3]};
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) {
            mma_tf32<kSplit>(part[mt][nt], qa_hi[mt], qa_lo[mt], b0_hi, b0_lo);
            mma_tf32<kSplit>(part[mt][nt + 1], qa_hi[mt], qa_lo[mt], b1_hi, b1_lo);
          }
        }
      }
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int nt = 0; nt < Tr::kSNTiles; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            s[mt][nt][e] += part[mt][nt][e];
    }

    // ---- mask: only the diagonal tiles (causal) and the tile past the last key ----
    if (a.mask.tile_needs_mask(q0, k0, Tr::kBc)) {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int nt = 0; nt < Tr::kSNTiles; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int row = q0 + warp_row0 + mt * Tr::kMmaM + g + (e / 2) * 8;
            const int key = k0 + nt * Tr::kMmaN + 2 * t + e % 2;
            if (!a.mask.visible(row, key)) s[mt][nt][e] = kNegInf;
          }
    }

    // ---- online softmax: new row maxima, rescale the sums, P = exp2(S*c - m) ----
    float row_alpha[kMT][2];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const float alpha = online_softmax_row(s[mt], hf, row_max[mt][hf], row_sum[mt][hf], a.scale_log2);
        row_alpha[mt][hf] = alpha;  // O is rescaled as the tile's P V is added
      }

    // V_j landed (K_{j+1}, V_{j+1} may still fly), for every thread.
    ptx::cp_async_wait<2>();
    __syncthreads();

    // ---- O = alpha O + P V, k step kk = keys [8kk, 8kk + 8) in the permuted order (see the top) ----
    // P's TF32 parts for the whole tile; then per n8 block of O the tile's P V accumulates inside the
    // tensor core into zeros and joins O through one fp32 FMA (round to nearest) that also applies
    // the rescale: O never accumulates inside the tensor core across tiles.
    std::uint32_t pa_hi[kMT][Tr::kPVSteps][4], pa_lo[kMT][Tr::kPVSteps][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int kk = 0; kk < Tr::kPVSteps; ++kk) {
        const float x[4] = {s[mt][kk][0], s[mt][kk][2], s[mt][kk][1], s[mt][kk][3]};
        tf32_parts<kSplit>(x, pa_hi[mt][kk], pa_lo[mt][kk]);
      }
#pragma unroll
    for (int nt = 0; nt < Tr::kONTiles; ++nt) {
      float part[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int e = 0; e < 4; ++e) part[mt][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < Tr::kPVSteps; ++kk) {
        const float* v = v_stage + kk * Tr::kMmaK * Tr::kRowStride + nt * Tr::kMmaN;
        const float x[2] = {v[0], v[Tr::kRowStride]};  // keys 8kk + 2t, 8kk + 2t + 1; column g
        std::uint32_t vb_hi[2], vb_lo[2];
        tf32_parts<kSplit>(x, vb_hi, vb_lo);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
          mma_tf32<kSplit>(part[mt], pa_hi[mt][kk], pa_lo[mt][kk], vb_hi, vb_lo);
      }
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          acc_o[mt][nt][e] = fmaf(acc_o[mt][nt][e], row_alpha[mt][e / 2], part[mt][e]);
    }
  }

  // ---- epilogue: O /= row sum, LSE = max + ln(sum); O staged in this warp's own sQ rows ----
  // (each warp only ever read its own Q rows, so no block barrier is needed before reusing them)
  __syncwarp();
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const float sum = quad_sum(row_sum[mt][hf]);
      const int row = warp_row0 + mt * Tr::kMmaM + g + hf * 8;
      // A row that sees a key has sum >= 1; one that sees none (causal, seq_q > seq_k) has sum 0 and
      // gets O = 0, LSE = -inf (attention.h). Rows past the end are never stored. A true division, as
      // the CUDA-core kernel: the reciprocal would add a rounding.
#pragma unroll
      for (int nt = 0; nt < Tr::kONTiles; ++nt) {
        const float2 o = sum > 0.f ? make_float2(acc_o[mt][nt][2 * hf] / sum,
                                                 acc_o[mt][nt][2 * hf + 1] / sum)
                                   : make_float2(0.f, 0.f);
        *reinterpret_cast<float2*>(sQ + row * Tr::kRowStride + nt * Tr::kMmaN + 2 * t) = o;
      }
      if (t == 0 && q0 + row < seq_q) {
        a.lse[off.row + q0 + row] =
            sum > 0.f ? fmaf(row_max[mt][hf], float(kLn2), logf(sum)) : kNegInf;
      }
    }
  __syncwarp();
  float* gO = a.o + off.q + std::int64_t(q0) * D;
  constexpr int kWarpChunks = Tr::kWarpRows * Tr::kRowChunks;
#pragma unroll
  for (int i = 0; i < kWarpChunks / 32; ++i) {
    const int c = lane + i * 32;
    const int row = warp_row0 + c / Tr::kRowChunks;
    const int col = (c % Tr::kRowChunks) * Tr::kChunkElems;
    if (q0 + row < seq_q)
      *reinterpret_cast<float4*>(gO + std::int64_t(row) * D + col) =
          *reinterpret_cast<const float4*>(sQ + row * Tr::kRowStride + col);
  }
}

// Host side: one launch of the TF32 forward with traits Tr on `stream`.
template <typename Tr, Fp32Math kMath>
void launch_fwd_tf32(const AttentionParams& p, cudaStream_t stream) {
  auto args = make_fwd_args<float, float>(p);
  const auto kernel = flash_fwd_tf32_kernel<Tr, kMath>;
  if (Tr::kSmemBytes > std::size_t(kDefaultDynamicSmemBytes)) {
    FB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       int(Tr::kSmemBytes)));
  }
  const unsigned blocks = set_tile_order(args, p, Tr::kBr);
  kernel<<<blocks, Tr::kThreads, Tr::kSmemBytes, stream>>>(args);
  FB_CUDA_CHECK_LAUNCH();
}

}  // namespace fb::cuda::flash
