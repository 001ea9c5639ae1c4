// Flash backward main kernels on tensor cores (fp16/bf16, mma.sync m16n8k16, fp32 accumulation): the
// 16-keys-per-warp kernel (bwd_main_tc_kernel, described here; d = 32, and the fallback where a block
// gets less than ~200 KB of shared memory) and the warp-grid kernel (bwd_main_tc_grid_kernel, further
// down; d = 64 and 128 on Hopper). Both compute the same products in the same orientation.
//
// One block per (batch, K/V head, tile of kBlockN keys); warp w owns keys [16w, 16w+16) of the tile,
// so each warp computes its rows of the transposed products directly:
//   S^T  = K Q^T            (keys x queries)   P^T = exp2(S^T * scale*log2e - LSE*log2e)
//   dP^T = V dO^T                              dS^T = P^T o (dP^T - D)
//   dV  += P^T dO           dK += dS^T Q       (P^T, dS^T reused from the accumulators as A operands)
//   dQ  += scale * dS K     (needs every warp's dS: it goes through shared memory, then atomics)
// dK and dV live in registers for the whole loop over the group's query heads and query tiles, so no
// atomics are needed for them. Q, dO, LSE and D tiles are double-buffered with cp.async.
//
// dQ: a block adds its (kBlockM x head_dim) share of every query tile into an fp32 accumulator with
// vector atomics (red.global.add.v4.f32 on sm_90); a separate kernel converts it. The alternative, a
// second kernel per query tile that recomputes S and dP, costs 7 GEMMs instead of 5 per tile pair;
// atomics win on speed at the price of run-to-run bit differences in dQ (dK, dV are deterministic).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "common/check.h"
#include "common/ptx.cuh"
#include "flash/flash_bwd_common.cuh"
#include "common/mask.h"
#include "common/softmax.cuh"
#include "common/tile_order.h"

namespace fb::cuda::flash::bwd {

// Tile configuration. kBlockN keys per block (16 per warp), kBlockM queries per main-loop step,
// kChunkM of them held in registers at a time (bounds the S/dP accumulators), kMinBlocks for
// __launch_bounds__.
template <typename Elem_, int kHeadDim_, int kBlockN_, int kBlockM_, int kChunkM_, int kMinBlocks_>
struct TcTraits {
  using Elem = Elem_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockN = kBlockN_;
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kChunkM = kChunkM_;
  static constexpr int kMinBlocks = kMinBlocks_;
  static constexpr bool kWarpGrid = false;  // runs bwd_main_tc_kernel

  static constexpr int kMmaM = 16;  // mma.m16n8k16
  static constexpr int kMmaN = 8;
  static constexpr int kMmaK = 16;
  static constexpr int kWarps = kBlockN / kMmaM;
  static constexpr int kThreads = 32 * kWarps;

  // 16 bytes of padding per shared row: the 8 row addresses of an ldmatrix land in 8 different
  // 16-byte bank groups, so neither ldmatrix nor the 16-byte cp.async writes conflict.
  static constexpr int kPad = 16 / int(sizeof(Elem));
  static constexpr int kRowStride = kHeadDim + kPad;  // sK, sV, sQ, sdO rows
  static constexpr int kDsStride = kBlockM + kPad;    // sdS rows (keys x queries)
  static constexpr int kVecElems = 16 / int(sizeof(Elem));
  static constexpr int kVecsPerRow = kHeadDim / kVecElems;

  // dQ = dS K: warps tile the (kBlockM x kHeadDim) output as kDqWarpsM x kDqWarpsN.
  static constexpr int kDqWarpsM = kBlockM / kMmaM;
  static constexpr int kDqWarpsN = kWarps / kDqWarpsM;
  static constexpr int kDqCols = kHeadDim / kDqWarpsN;

  // Shared memory, bytes.
  static constexpr int kKvTileBytes = kBlockN * kRowStride * int(sizeof(Elem));
  static constexpr int kQTileBytes = kBlockM * kRowStride * int(sizeof(Elem));
  static constexpr int kOffK = 0;
  static constexpr int kOffV = kOffK + kKvTileBytes;
  static constexpr int kOffQ = kOffV + kKvTileBytes;    // 2 buffers
  static constexpr int kOffDo = kOffQ + 2 * kQTileBytes;  // 2 buffers
  static constexpr int kOffDs = kOffDo + 2 * kQTileBytes;
  static constexpr int kOffLse = kOffDs + kBlockN * kDsStride * int(sizeof(Elem));  // 2 buffers
  static constexpr int kOffD = kOffLse + 2 * kBlockM * int(sizeof(float));         // 2 buffers
  static constexpr int kSmemBytes = kOffD + 2 * kBlockM * int(sizeof(float));

  static_assert(kHeadDim % (2 * kMmaK) == 0, "head_dim: whole pairs of 16-wide fragments");
  static_assert(kBlockN % kMmaM == 0 && kWarps >= 1, "kBlockN: 16 keys per warp");
  static_assert(kSeqPadMultiple % kBlockM == 0, "LSE/D tiles stay inside the padded rows");
  static_assert(kBlockM % kChunkM == 0 && kChunkM % (2 * kMmaN) == 0, "chunks of whole k16 steps");
  static_assert(kWarps % kDqWarpsM == 0, "dQ warp grid");
  static_assert(kDqCols % (2 * kMmaN) == 0, "dQ warp columns: pairs of n8 tiles");
  static_assert((kBlockM * sizeof(float)) % 16 == 0, "LSE/D tiles in 16-byte copies");
  static_assert(kOffQ % 16 == 0 && kOffDo % 16 == 0 && kOffDs % 16 == 0 && kOffLse % 16 == 0,
                "16-byte aligned shared tiles");
};

namespace detail {

// Copies `rows` rows of kHeadDim elements (global row stride kHeadDim) into a padded shared tile;
// rows at or past `valid_rows` are zero-filled.
template <typename Tr>
__device__ __forceinline__ void load_rows(typename Tr::Elem* smem, const typename Tr::Elem* gmem,
                                          int rows, int valid_rows, int tid) {
  for (int i = tid; i < rows * Tr::kVecsPerRow; i += Tr::kThreads) {
    const int r = i / Tr::kVecsPerRow;
    const int c = (i % Tr::kVecsPerRow) * Tr::kVecElems;
    const bool valid = r < valid_rows;
    ptx::cp_async_16_zfill(smem + r * Tr::kRowStride + c,
                           valid ? gmem + std::int64_t(r) * Tr::kHeadDim + c : gmem, valid);
  }
}

// dst[0..4) += v (dst 16-byte aligned) with one vector reduction where the hardware has it (sm_90:
// red.global.add.v4.f32, which returns nothing, unlike atomicAdd(float4*)), else four scalar ones.
__device__ __forceinline__ void atomic_add4(float* dst, float v0, float v1, float v2, float v3) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst), "f"(v0), "f"(v1),
               "f"(v2), "f"(v3)
               : "memory");
#else
  atomicAdd(dst + 0, v0);
  atomicAdd(dst + 1, v1);
  atomicAdd(dst + 2, v2);
  atomicAdd(dst + 3, v3);
#endif
}

// dst[0..2) += v (dst 8-byte aligned): red.global.add.v2.f32 on sm_90, else two scalar atomics.
// The four lanes of an mma accumulator row cover one 32-byte sector with it, so no lane exchange is
// needed to keep the reductions whole sectors.
__device__ __forceinline__ void atomic_add2(float* dst, float v0, float v1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(dst), "f"(v0), "f"(v1) : "memory");
#else
  atomicAdd(dst + 0, v0);
  atomicAdd(dst + 1, v1);
#endif
}

// Stores a 16 x 16 tile of 16-bit values held as an mma A fragment (r[0]: rows 0-7, columns 0-7;
// r[1]: rows 8-15; r[2]: rows 0-7, columns 8-15; r[3]: rows 8-15, columns 8-15; lane (g, c) holding
// row g, columns 2c and 2c + 1 of each) at `tile` (row stride `stride` elements, rows 16-byte
// aligned): one stmatrix.x4 on sm_90 (each lane gives one row address), four 4-byte stores elsewhere.
template <typename Elem>
__device__ __forceinline__ void store_tile16(Elem* tile, int stride, const std::uint32_t (&r)[4],
                                             int lane) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const Elem* row = tile + (((lane / 8) % 2) * 8 + lane % 8) * stride + (lane / 16) * 8;
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(
                   ptx::smem_addr(row)),
               "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
#else
  const int g = lane / 4, c = lane % 4;
#pragma unroll
  for (int m = 0; m < 4; ++m)
    *reinterpret_cast<std::uint32_t*>(tile + (g + (m % 2) * 8) * stride + (m / 2) * 8 + 2 * c) = r[m];
#endif
}

// kRows rows of a tile into a padded shared tile, unrolled: the thread copies the same 16-byte column
// of rows ld_row, ld_row + kThreads / kVecsPerRow, ..., so its shared and global addresses are one
// base plus compile-time offsets (no index arithmetic per copy). smem_t / gmem_t: the tile's bases
// already moved to the thread's (ld_row, column); gmem_tile: the tile's base (a valid address for the
// zero-filled copies). `full`: every row exists (no bounds tests); else rows at or past valid_rows
// are zero-filled.
template <typename Tr, int kRows>
__device__ __forceinline__ void load_rows_unrolled(typename Tr::Elem* smem_t,
                                                   const typename Tr::Elem* gmem_t,
                                                   const typename Tr::Elem* gmem_tile, int ld_row,
                                                   bool full, int valid_rows) {
  constexpr int kRowsPerPass = Tr::kThreads / Tr::kVecsPerRow;
  static_assert(Tr::kThreads % Tr::kVecsPerRow == 0 && kRows % kRowsPerPass == 0,
                "whole passes of the block over the tile");
  if (full) {
#pragma unroll
    for (int k = 0; k < kRows / kRowsPerPass; ++k)
      ptx::cp_async_16(smem_t + k * kRowsPerPass * Tr::kRowStride,
                       gmem_t + k * kRowsPerPass * Tr::kHeadDim);
  } else {
#pragma unroll
    for (int k = 0; k < kRows / kRowsPerPass; ++k) {
      const bool valid = ld_row + k * kRowsPerPass < valid_rows;
      ptx::cp_async_16_zfill(smem_t + k * kRowsPerPass * Tr::kRowStride,
                             valid ? gmem_t + k * kRowsPerPass * Tr::kHeadDim : gmem_tile, valid);
    }
  }
}

// bar.sync on named barrier `id` (1..15; __syncthreads uses 0) for `threads` threads, whole warps.
__device__ __forceinline__ void bar_sync_threads(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace detail

template <typename Tr>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinBlocks) bwd_main_tc_kernel(const MainArgs a) {
  using Elem = typename Tr::Elem;
  constexpr int D = Tr::kHeadDim;
  constexpr int kNTilesD = D / Tr::kMmaN;             // n8 tiles across head_dim
  constexpr int kNTilesChunk = Tr::kChunkM / Tr::kMmaN;  // n8 tiles across a query chunk
  constexpr int kDqNTiles = Tr::kDqCols / Tr::kMmaN;

  extern __shared__ __align__(16) unsigned char smem[];
  Elem* sK = reinterpret_cast<Elem*>(smem + Tr::kOffK);    // (kBlockN, kRowStride)
  Elem* sV = reinterpret_cast<Elem*>(smem + Tr::kOffV);    // (kBlockN, kRowStride)
  Elem* sQ = reinterpret_cast<Elem*>(smem + Tr::kOffQ);    // 2 x (kBlockM, kRowStride)
  Elem* sDo = reinterpret_cast<Elem*>(smem + Tr::kOffDo);  // 2 x (kBlockM, kRowStride)
  Elem* sDs = reinterpret_cast<Elem*>(smem + Tr::kOffDs);  // (kBlockN, kDsStride): dS^T
  float* sLse = reinterpret_cast<float*>(smem + Tr::kOffLse);  // 2 x (kBlockM)
  float* sD = reinterpret_cast<float*>(smem + Tr::kOffD);      // 2 x (kBlockM)

  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int g = lane / 4;  // fragment row within an 8-row group
  const int c = lane % 4;  // fragment column pair

  // Block -> (batch, K/V head, K/V tile). Causal: tile-major, so the tiles with the most query tiles
  // (the first ones) start first. Otherwise head-major, so the tiles of one head run together and
  // share its Q and dO in L2.
  const CausalMask mask = a.mask;
  const int seq_q = mask.seq_q, seq_k = mask.seq_k;
  const int n_tiles = (seq_k + Tr::kBlockN - 1) / Tr::kBlockN;
  const int n_bkv = a.batch * a.kv_heads;
  int tile, bkv;
  if (mask.causal) {
    tile = blockIdx.x / n_bkv;
    bkv = blockIdx.x % n_bkv;
  } else {
    tile = blockIdx.x % n_tiles;
    bkv = blockIdx.x / n_tiles;
  }
  const int b = bkv / a.kv_heads;
  const int hk = bkv % a.kv_heads;
  const int group = a.heads / a.kv_heads;
  const int n0 = tile * Tr::kBlockN;

  // Query tiles: causal skips those before the first row that sees key n0 (all their keys are
  // masked); the last query row sees every key, so at least one tile remains. Without causal, each
  // K/V tile starts at its own diagonal query tile and wraps around, so blocks of one head do not all
  // add into the same dQ rows at the same time.
  const int m_tiles = (seq_q + Tr::kBlockM - 1) / Tr::kBlockM;
  const int m_begin = mask.first_q_tile(n0, Tr::kBlockM);
  const int per_head = m_tiles - m_begin;
  const int m_rot = mask.causal ? 0 : (n0 / Tr::kBlockM) % per_head;
  const int n_iters = group * per_head;

  const Elem* q = static_cast<const Elem*>(a.q);
  const Elem* dout = static_cast<const Elem*>(a.dout);
  const float* lse = static_cast<const float*>(a.lse);
  const float* dvec = static_cast<const float*>(a.d);
  const std::int64_t kv_off = (std::int64_t(bkv) * seq_k + n0) * D;

  // (query head, query tile) of main-loop step `it`.
  auto head_of = [&](int it) { return hk * group + it / per_head; };
  auto mtile_of = [&](int it) { return m_begin + (m_rot + it % per_head) % per_head; };

  auto load_q_tile = [&](int it, int buf) {
    const std::int64_t bh = std::int64_t(b) * a.heads + head_of(it);
    const int m0 = mtile_of(it) * Tr::kBlockM;
    const std::int64_t q_off = (bh * seq_q + m0) * D;
    detail::load_rows<Tr>(sQ + buf * Tr::kBlockM * Tr::kRowStride, q + q_off, Tr::kBlockM,
                          seq_q - m0, tid);
    detail::load_rows<Tr>(sDo + buf * Tr::kBlockM * Tr::kRowStride, dout + q_off, Tr::kBlockM,
                          seq_q - m0, tid);
    constexpr int kVecs = Tr::kBlockM * int(sizeof(float)) / 16;
    const std::int64_t row_off = bh * a.seq_pad + m0;
    if (tid < kVecs) {
      ptx::cp_async_16(sLse + buf * Tr::kBlockM + 4 * tid, lse + row_off + 4 * tid);
    } else if (tid < 2 * kVecs) {
      ptx::cp_async_16(sD + buf * Tr::kBlockM + 4 * (tid - kVecs), dvec + row_off + 4 * (tid - kVecs));
    }
  };

  detail::load_rows<Tr>(sK, static_cast<const Elem*>(a.k) + kv_off, Tr::kBlockN, seq_k - n0, tid);
  detail::load_rows<Tr>(sV, static_cast<const Elem*>(a.v) + kv_off, Tr::kBlockN, seq_k - n0, tid);
  load_q_tile(0, 0);
  ptx::cp_async_commit();

  const float scale = float(a.scale);
  const float scale_log2 = float(a.scale * kLog2e);

  float acc_dk[kNTilesD][4];  // (16 keys, D) per warp
  float acc_dv[kNTilesD][4];
#pragma unroll
  for (int j = 0; j < kNTilesD; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_dk[j][e] = acc_dv[j][e] = 0.f;

  const int key_lo = n0 + warp * Tr::kMmaM + g;  // this thread's fragment keys: key_lo, key_lo + 8
  const Elem* sKw = sK + warp * Tr::kMmaM * Tr::kRowStride;
  const Elem* sVw = sV + warp * Tr::kMmaM * Tr::kRowStride;
  for (int it = 0; it < n_iters; ++it) {
    const int buf = it & 1;
    // Prefetch the next step's tiles into the other buffer: its last readers finished before the
    // barrier in the middle of the previous step.
    if (it + 1 < n_iters) load_q_tile(it + 1, buf ^ 1);
    ptx::cp_async_commit();
    ptx::cp_async_wait<1>();
    __syncthreads();

    const int m0 = mtile_of(it) * Tr::kBlockM;
    // Only tiles on the diagonal (causal) or holding padded keys need a mask. Padded query rows and
    // rows with no visible key need none: their LSE is +inf, so P = 0 there.
    const bool need_mask = mask.tile_needs_mask(m0, n0, Tr::kBlockN);
    const Elem* sQb = sQ + buf * Tr::kBlockM * Tr::kRowStride;
    const Elem* sDob = sDo + buf * Tr::kBlockM * Tr::kRowStride;
    const float* sLseb = sLse + buf * Tr::kBlockM;
    const float* sDb = sD + buf * Tr::kBlockM;

#pragma unroll 1
    for (int q0 = 0; q0 < Tr::kBlockM; q0 += Tr::kChunkM) {
      // S^T = K Q^T over the chunk: (16 keys, kChunkM queries) per warp.
      float acc_s[kNTilesChunk][4];
      float acc_dp[kNTilesChunk][4];
#pragma unroll
      for (int j = 0; j < kNTilesChunk; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_s[j][e] = acc_dp[j][e] = 0.f;

#pragma unroll
      for (int kk = 0; kk < D; kk += Tr::kMmaK) {
        std::uint32_t ak[4], av[4];
        ptx::ldmatrix_x4(ak, sKw + (lane % 16) * Tr::kRowStride + kk + (lane / 16) * 8);
        ptx::ldmatrix_x4(av, sVw + (lane % 16) * Tr::kRowStride + kk + (lane / 16) * 8);
#pragma unroll
        for (int j = 0; j < kNTilesChunk; j += 2) {
          // B = Q^T (k = head_dim, n = queries), stored [query][dim]: plain ldmatrix.
          const int row = q0 + j * Tr::kMmaN + (lane / 16) * 8 + lane % 8;
          const int col = kk + ((lane / 8) % 2) * 8;
          std::uint32_t bq[4], bo[4];
          ptx::ldmatrix_x4(bq, sQb + row * Tr::kRowStride + col);
          ptx::ldmatrix_x4(bo, sDob + row * Tr::kRowStride + col);
          ptx::mma_m16n8k16<Elem>(acc_s[j], ak, {bq[0], bq[1]});
          ptx::mma_m16n8k16<Elem>(acc_s[j + 1], ak, {bq[2], bq[3]});
          ptx::mma_m16n8k16<Elem>(acc_dp[j], av, {bo[0], bo[1]});
          ptx::mma_m16n8k16<Elem>(acc_dp[j + 1], av, {bo[2], bo[3]});
        }
      }

      // P^T = exp2(S^T * scale*log2e - LSE*log2e); dS^T = P^T o (dP^T - D).
#pragma unroll
      for (int j = 0; j < kNTilesChunk; ++j) {
        const int ql = q0 + j * Tr::kMmaN + 2 * c;  // local query of elements 0 and 2
        const float2 l2 = *reinterpret_cast<const float2*>(sLseb + ql);
        const float2 dd = *reinterpret_cast<const float2*>(sDb + ql);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = key_lo + (e / 2) * 8;
          const int query = m0 + ql + (e % 2);
          const float p =
              need_mask && !mask.visible(query, key)
                  ? 0.f
                  : ptx::exp2_approx(fmaf(acc_s[j][e], scale_log2, -((e % 2) ? l2.y : l2.x)));
          acc_s[j][e] = p;
          acc_dp[j][e] = p * (acc_dp[j][e] - ((e % 2) ? dd.y : dd.x));
        }
      }

      // dV += P^T dO and dK += dS^T Q over the chunk's queries (k = queries). The m16n8 accumulators
      // of two neighbouring n8 tiles are exactly the A fragment of one k16 step.
#pragma unroll
      for (int s = 0; s < kNTilesChunk / 2; ++s) {
        const std::uint32_t ap[4] = {
            ptx::pack2<Elem>(acc_s[2 * s][0], acc_s[2 * s][1]),
            ptx::pack2<Elem>(acc_s[2 * s][2], acc_s[2 * s][3]),
            ptx::pack2<Elem>(acc_s[2 * s + 1][0], acc_s[2 * s + 1][1]),
            ptx::pack2<Elem>(acc_s[2 * s + 1][2], acc_s[2 * s + 1][3])};
        const std::uint32_t ads[4] = {
            ptx::pack2<Elem>(acc_dp[2 * s][0], acc_dp[2 * s][1]),
            ptx::pack2<Elem>(acc_dp[2 * s][2], acc_dp[2 * s][3]),
            ptx::pack2<Elem>(acc_dp[2 * s + 1][0], acc_dp[2 * s + 1][1]),
            ptx::pack2<Elem>(acc_dp[2 * s + 1][2], acc_dp[2 * s + 1][3])};
        // dS^T to shared memory for dQ, as (keys, queries).
        {
          const int col = q0 + s * 2 * Tr::kMmaN + 2 * c;
          Elem* row_lo = sDs + (warp * Tr::kMmaM + g) * Tr::kDsStride + col;
          Elem* row_hi = row_lo + 8 * Tr::kDsStride;
          *reinterpret_cast<std::uint32_t*>(row_lo) = ads[0];
          *reinterpret_cast<std::uint32_t*>(row_hi) = ads[1];
          *reinterpret_cast<std::uint32_t*>(row_lo + Tr::kMmaN) = ads[2];
          *reinterpret_cast<std::uint32_t*>(row_hi + Tr::kMmaN) = ads[3];
        }
        // B = dO / Q (k = queries, n = head_dim), stored [query][dim]: transposing ldmatrix.
        const int row = q0 + s * Tr::kMmaK + lane % 16;
#pragma unroll
        for (int j = 0; j < kNTilesD; j += 2) {
          const int col = j * Tr::kMmaN + (lane / 16) * 8;
          std::uint32_t bo[4], bq[4];
          ptx::ldmatrix_x4_trans(bo, sDob + row * Tr::kRowStride + col);
          ptx::ldmatrix_x4_trans(bq, sQb + row * Tr::kRowStride + col);
          ptx::mma_m16n8k16<Elem>(acc_dv[j], ap, {bo[0], bo[1]});
          ptx::mma_m16n8k16<Elem>(acc_dv[j + 1], ap, {bo[2], bo[3]});
          ptx::mma_m16n8k16<Elem>(acc_dk[j], ads, {bq[0], bq[1]});
          ptx::mma_m16n8k16<Elem>(acc_dk[j + 1], ads, {bq[2], bq[3]});
        }
      }
    }
    __syncthreads();  // every warp's dS^T is in sDs

    // dQ share = scale * dS K: (kBlockM, D) over the kDqWarpsM x kDqWarpsN warp grid, k = keys.
    {
      const int wm = warp % Tr::kDqWarpsM;
      const int wn = warp / Tr::kDqWarpsM;
      float acc_dq[kDqNTiles][4];
#pragma unroll
      for (int j = 0; j < kDqNTiles; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_dq[j][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < Tr::kBlockN; kk += Tr::kMmaK) {
        // A = dS (m = queries, k = keys), stored transposed as (keys, queries): transposing ldmatrix.
        std::uint32_t ads[4];
        ptx::ldmatrix_x4_trans(ads, sDs + (kk + (lane / 16) * 8 + lane % 8) * Tr::kDsStride +
                                        wm * Tr::kMmaM + ((lane / 8) % 2) * 8);
#pragma unroll
        for (int j = 0; j < kDqNTiles; j += 2) {
          // B = K (k = keys, n = head_dim), stored [key][dim]: transposing ldmatrix.
          std::uint32_t bk[4];
          ptx::ldmatrix_x4_trans(bk, sK + (kk + lane % 16) * Tr::kRowStride + wn * Tr::kDqCols +
                                         j * Tr::kMmaN + (lane / 16) * 8);
          ptx::mma_m16n8k16<Elem>(acc_dq[j], ads, {bk[0], bk[1]});
          ptx::mma_m16n8k16<Elem>(acc_dq[j + 1], ads, {bk[2], bk[3]});
        }
      }
      // Lanes c and c^1 swap halves so each holds 4 consecutive columns of one row: even lanes row
      // g, odd lanes row g + 8. One 16-byte atomic per lane and n8 tile instead of four.
      const bool odd = c & 1;
      const int row = m0 + wm * Tr::kMmaM + g + (odd ? 8 : 0);
      const std::int64_t bh = std::int64_t(b) * a.heads + head_of(it);
      float* dq_row = static_cast<float*>(a.dq_acc) + (bh * seq_q + row) * D + wn * Tr::kDqCols +
                      2 * (c & ~1);
#pragma unroll
      for (int j = 0; j < kDqNTiles; ++j) {
        const float send0 = odd ? acc_dq[j][0] : acc_dq[j][2];
        const float send1 = odd ? acc_dq[j][1] : acc_dq[j][3];
        const float recv0 = __shfl_xor_sync(0xffffffffu, send0, 1);
        const float recv1 = __shfl_xor_sync(0xffffffffu, send1, 1);
        if (row < seq_q) {
          if (odd) {
            detail::atomic_add4(dq_row + j * Tr::kMmaN, scale * recv0, scale * recv1,
                                scale * acc_dq[j][2], scale * acc_dq[j][3]);
          } else {
            detail::atomic_add4(dq_row + j * Tr::kMmaN, scale * acc_dq[j][0],
                                scale * acc_dq[j][1], scale * recv0, scale * recv1);
          }
        }
      }
    }
  }

  // dK (times scale) and dV: through shared memory (each warp its own 16 rows of sK / sV, once all
  // warps are done reading sK) for 16-byte coalesced stores.
  ptx::cp_async_wait<0>();
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kNTilesD; ++j) {
    const int col = j * Tr::kMmaN + 2 * c;
    const int r = warp * Tr::kMmaM + g;
    *reinterpret_cast<std::uint32_t*>(sK + r * Tr::kRowStride + col) =
        ptx::pack2<Elem>(scale * acc_dk[j][0], scale * acc_dk[j][1]);
    *reinterpret_cast<std::uint32_t*>(sK + (r + 8) * Tr::kRowStride + col) =
        ptx::pack2<Elem>(scale * acc_dk[j][2], scale * acc_dk[j][3]);
    *reinterpret_cast<std::uint32_t*>(sV + r * Tr::kRowStride + col) =
        ptx::pack2<Elem>(acc_dv[j][0], acc_dv[j][1]);
    *reinterpret_cast<std::uint32_t*>(sV + (r + 8) * Tr::kRowStride + col) =
        ptx::pack2<Elem>(acc_dv[j][2], acc_dv[j][3]);
  }
  __syncthreads();
  Elem* dk = static_cast<Elem*>(a.dk) + kv_off;
  Elem* dv = static_cast<Elem*>(a.dv) + kv_off;
  for (int i = tid; i < Tr::kBlockN * Tr::kVecsPerRow; i += Tr::kThreads) {
    const int r = i / Tr::kVecsPerRow;
    const int col = (i % Tr::kVecsPerRow) * Tr::kVecElems;
    if (n0 + r < seq_k) {
      *reinterpret_cast<uint4*>(dk + std::int64_t(r) * D + col) =
          *reinterpret_cast<const uint4*>(sK + r * Tr::kRowStride + col);
      *reinterpret_cast<uint4*>(dv + std::int64_t(r) * D + col) =
          *reinterpret_cast<const uint4*>(sV + r * Tr::kRowStride + col);
    }
  }
}

// ---- Warp-grid kernel (d = 64, 128): P^T and dS^T through shared memory ----
//
// The kernel above gives each warp 16 keys and every query of the step, so each warp reads the whole
// Q and dO tiles twice per step with ldmatrix and every fragment feeds one m16 block. Here each of the
// three products has its own warp grid, chosen so that every ldmatrix'd fragment feeds two m16 blocks
// (FlashAttention-2's backward uses the same three layouts, 8 warps, 128 keys x 64 queries at d = 128):
//   S^T, dP^T: kSWarpsN x kSWarpsM warps over (keys x queries), each (32 keys, kBlockM / kSWarpsM);
//   dV, dK:    kKvWarpsN x kKvWarpsD warps over (keys x head_dim), each (32 keys, D / kKvWarpsD);
//   dQ:        kDqWarpsM x kDqWarpsD warps over (queries x head_dim), each (32 queries, ...).
// P^T and dS^T (keys x queries) go to shared memory once, as bf16/fp16, and are read back as the A
// operands of dV and dK and (transposed) of dQ. Per warp and step at d = 128 that is ~72 KB of ldmatrix
// traffic plus 4 KB of stores against ~92 KB for the 16-keys-per-warp layout, for the same 320 MMAs.
// Causal diagonal tiles skip a warp's fully masked S blocks and k16 steps of dV/dK and dQ.
// kPInRegs: the dV/dK warp takes the A fragments of its own S^T block's queries from registers (the
// same 32 keys) and reads only the rest from sP/sDs; costs kSCols / 2 registers a thread.
// kEarlyOwn (with kPInRegs): those own-query dV/dK MMAs run before the barrier that publishes sP/sDs,
// so a warp done with its exponentials keeps the tensor cores busy while the others finish theirs.
// kSplitMasked: the step is compiled twice, and the copy for tiles that need no mask (all but the
// causal diagonal and the last key tile) carries no mask arithmetic or skip tests.
// kDeferDq: dQ of step i is computed in step i + 1 from a second dS^T buffer, after S^T/dP^T (and the
// own-query dV/dK with kEarlyOwn); the step's only block-wide barrier is then the one at its top, and
// dV/dK from the other warp's queries waits only for that warp (a 64-thread named barrier).
// kLean (session 7): the per-step bookkeeping without divisions or loops. The step's (query head,
// query tile) advance by a cursor (the s6 loop divided by per_head three times a step, ~25
// instructions each), Q/dO tiles load through load_rows_unrolled (compile-time offsets; bounds tests
// only on the last query tile; s6: a loop with 64-bit index arithmetic and spill reloads per copy),
// the softmax scale goes into dS^T once (so dQ's reductions and dK's epilogue do not multiply by it),
// and dQ's reductions test rows only on a head's last query tile. Same products, same order.
// kDqRed2 (with kLean): dQ reduced with red.v2 from each lane's own accumulator pairs (16 a thread a
// step at d = 128) instead of a lane-pair exchange (2 shuffles and 6 selects per n8 tile) and red.v4.
// kSplitS: S^T/dP^T in two halves of the warp's queries, each over the whole head_dim, so the first
// half's exponentials do not wait for the second half's MMAs (ptxas may interleave them); K and V
// fragments are read twice (+32 ldmatrix a warp a step at d = 128).
// kStMatrix (with kPInRegs): P^T and dS^T go to shared memory with one stmatrix.x4 per 16 x 16 block
// (sm_90) instead of four 4-byte stores.
// kDqFirst: dQ (and its reductions) right after the barrier that publishes dS^T, before dV/dK, so
// the reductions leave while the dV/dK MMAs run rather than just before the next step's barrier.
// kHeadMajorCausal: causal grids head-major as the non-causal ones (key tile 0, the longest, first
// within each head) instead of tile-major: the blocks in flight then share one or two heads' Q, dO
// and dQ in L2 (tile-major spreads them over every head: at N = 16k, d = 128 that is 16 heads x
// 16 MB against a 50 MB L2). Since session 37 unsplit causal GQA grids take their planes in plane groups where the
// launcher's model says (MainArgs::plane_group > 1: key tiles outermost within a group of planes).
// kDescend (with kLean): every block walks its query tiles from the last down to its first, with no
// rotation (FlashAttention-2's order): the blocks of a head read the same Q/dO tile at about the
// same time, and add into the same dQ rows.
// kHeadSplit (session 8, with kLean; GQA/MQA): a.head_split blocks per (key tile, K/V plane), each
// over its own subset of the group's query heads, adding its partial dK and dV into fp32 accumulators
// (MainArgs::dkv_acc) instead of storing them; causal grids tile-major. The launcher picks the split
// (flash_bwd.cu, head_split()) and converts the accumulators.
// kLatePrefetch: the next step's Q/dO/LSE/D copies are issued after S^T/dP^T (while the exponentials
// run, when issue slots are free) instead of right after the step's first barrier, where their ~75
// instructions delay the first MMAs; they still have ~2/3 of a step to land.
// kStagger (session 9): S^T over the whole head_dim first; then warps [0, kWarps / 2) take the
// exponentials of P^T before dP^T = V dO^T, warps [kWarps / 2, kWarps) dP^T before them. Warps w and
// w + kWarps / 2 share a scheduler; the aim was one's MUFU work (16 results a clock per SM: ~512
// clocks a step) under the other's dP^T MMAs instead of both warps' at once. Without kSplitS.
// Measured (session 9, H200): -4% at d = 128 and d = 64 non-causal, +0.4-0.7% at d = 64 causal (its
// default since): the exponentials were not what limited the step.
// kDqMid (session 10): FlashAttention-2's order after the barrier that publishes P^T/dS^T: every dV
// MMA, then dQ = dS K and its reductions, then every dK MMA (default: dV and dK interleaved per k16
// step, dQ last, its reductions right before the next step's barrier). The same instructions; the
// reductions leave while dK's MMAs run, and own_ds stays live across dQ (+16 registers there).
// Measured (session 10 call A, probe `dqmid`, removed after it): 1.2-4.3% slower on 11 of the 12
// long-N rows (N = 4k-16k, d 64/128, both masks), 0.3% faster on the twelfth: not kept.
// kTailSplit (session 10, with kLean): the grid's last partial wave. Of the n_blocks equal blocks of a
// non-causal grid, the first n_blocks - rem (rem = tail_blocks(n_blocks, SMs)) run whole; each of the
// last rem is split into S = a.head_split units (the field is the tail's split in these kernels),
// unit s walking steps [s n / S, (s + 1) n / S) of the block's n (query head, query tile) steps and
// adding its partial dK, dV into fp32 accumulators (a.dkv_acc: [2][rem * kBlockN rows from the first
// tail block's first key row][head_dim]); the launcher converts them. 2048 blocks on 132 SMs (d = 128,
// 16k tokens) are 15.5 waves: the last half-wave of whole blocks leaves half the SMs idle for a block.
// kDqTiled (session 11, with kLean): dQ reduced into the tiled accumulator (DqTiledLayout below:
// [batch * heads, seq_pad, head_dim] floats, each query tile's block in the dQ warps' fragment order)
// with one red.v4 a lane per n8 tile: 8 a thread a step at d = 128, each covering 512 contiguous
// bytes (4 whole 128-byte lines) where kDqRed2's 16 red.v2 each touch one 32-byte sector in each of 8
// rows (8 lines). Row tests only on a head's last query tile (as kDqRed2's); the accumulator has every
// padded row (zeroed), which run_convert_dq_tiled reads and skips. Session 10's profile beside FlashAttention-2 (d = 128, N = 16k): lg_throttle
// 1.12 against 0 and long-scoreboard 1.15 against 0.67 stalls per instruction: the LSU queue of
// global accesses full in ours; FA2's scalar atomics each cover one whole line of its own permuted
// accumulator.
template <typename Elem_, int kHeadDim_, int kBlockN_, int kBlockM_, int kSWarpsN_, int kKvWarpsN_,
          int kDqWarpsM_, bool kPInRegs_ = true, bool kEarlyOwn_ = true, bool kSplitMasked_ = true,
          bool kDeferDq_ = false, bool kLean_ = false, bool kDqRed2_ = false, bool kSplitS_ = false,
          bool kStMatrix_ = false, bool kDqFirst_ = false, bool kHeadMajorCausal_ = false,
          bool kDescend_ = false, bool kLatePrefetch_ = false, bool kHeadSplit_ = false,
          bool kStagger_ = false, bool kDqMid_ = false, bool kTailSplit_ = false, bool kDqTiled_ = false>
struct TcGridTraits {
  using Elem = Elem_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockN = kBlockN_;  // keys per block
  static constexpr int kBlockM = kBlockM_;  // queries per step
  static constexpr int kWarps = 8;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kMinBlocks = 1;
  static constexpr bool kWarpGrid = true;  // runs bwd_main_tc_grid_kernel
  static constexpr bool kPInRegs = kPInRegs_;
  static constexpr bool kEarlyOwn = kEarlyOwn_ && kPInRegs_;
  static constexpr bool kSplitMasked = kSplitMasked_;
  static constexpr bool kDeferDq = kDeferDq_;
  static constexpr bool kLean = kLean_;
  static constexpr bool kDqRed2 = kDqRed2_ && kLean_;
  static constexpr bool kSplitS = kSplitS_;
  static constexpr bool kStMatrix = kStMatrix_ && kPInRegs_;
  static constexpr bool kDqFirst = kDqFirst_ && !kDeferDq_ && !kEarlyOwn_;
  static constexpr bool kHeadMajorCausal = kHeadMajorCausal_;
  static constexpr bool kDescend = kDescend_;
  static_assert(!kDescend_ || kLean_, "kDescend walks with kLean's cursor");
  static constexpr bool kLatePrefetch = kLatePrefetch_ && !kDeferDq_;
  static constexpr int kDsBufs = kDeferDq ? 2 : 1;
  static constexpr bool kHeadSplit = kHeadSplit_;
  static constexpr bool kStagger = kStagger_;
  static constexpr bool kDqMid = kDqMid_;
  static constexpr bool kTailSplit = kTailSplit_;
  static constexpr bool kDqTiled = kDqTiled_;
  static_assert(!kDqTiled_ || kLean_, "the tiled dQ reductions take dS^T with kLean's scale");
  static_assert(!kTailSplit_ || (kLean_ && !kDescend_ && !kHeadSplit_),
                "the tail split starts kLean's ascending cursor mid-walk; not with the head split");
  static_assert(!kDqMid_ || (!kEarlyOwn && !kDeferDq_ && !kDqFirst_),
                "kDqMid places dQ itself, after the barrier that publishes dS^T");
  static_assert(!(kStagger_ && kSplitS_), "kStagger orders S^T and dP^T its own way");
  static_assert(!kHeadSplit_ || kLean_, "the head split's partial dK has the scale from kLean's dS^T");

  static constexpr int kMmaM = 16;
  static constexpr int kMmaN = 8;
  static constexpr int kMmaK = 16;
  static constexpr int kWarpRows = 2 * kMmaM;  // two m16 blocks per warp in every product

  static constexpr int kSWarpsN = kSWarpsN_;
  static constexpr int kSWarpsM = kWarps / kSWarpsN;
  static constexpr int kSCols = kBlockM / kSWarpsM;  // queries per warp in S^T, dP^T
  static constexpr int kKvWarpsN = kKvWarpsN_;
  static constexpr int kKvWarpsD = kWarps / kKvWarpsN;
  static constexpr int kKvCols = kHeadDim / kKvWarpsD;  // head_dim columns per warp in dV, dK
  static constexpr int kDqWarpsM = kDqWarpsM_;
  static constexpr int kDqWarpsD = kWarps / kDqWarpsM;
  static constexpr int kDqCols = kHeadDim / kDqWarpsD;

  static constexpr int kPad = 16 / int(sizeof(Elem));
  static constexpr int kRowStride = kHeadDim + kPad;  // sK, sV, sQ, sdO rows
  static constexpr int kPStride = kBlockM + kPad;     // sP, sdS rows (keys x queries)
  static constexpr int kVecElems = 16 / int(sizeof(Elem));
  static constexpr int kVecsPerRow = kHeadDim / kVecElems;

  static constexpr int kKvTileBytes = kBlockN * kRowStride * int(sizeof(Elem));
  static constexpr int kQTileBytes = kBlockM * kRowStride * int(sizeof(Elem));
  static constexpr int kPTileBytes = kBlockN * kPStride * int(sizeof(Elem));
  static constexpr int kOffK = 0;
  static constexpr int kOffV = kOffK + kKvTileBytes;
  static constexpr int kOffQ = kOffV + kKvTileBytes;      // 2 buffers
  static constexpr int kOffDo = kOffQ + 2 * kQTileBytes;  // 2 buffers
  static constexpr int kOffP = kOffDo + 2 * kQTileBytes;
  static constexpr int kOffDs = kOffP + kPTileBytes;
  static constexpr int kOffLse = kOffDs + kDsBufs * kPTileBytes;            // 2 buffers
  static constexpr int kOffD = kOffLse + 2 * kBlockM * int(sizeof(float));  // 2 buffers
  static constexpr int kSmemBytes = kOffD + 2 * kBlockM * int(sizeof(float));

  static_assert(kSWarpsN * kWarpRows == kBlockN && kKvWarpsN * kWarpRows == kBlockN,
                "S and dK/dV warps: 32 keys each across the key tile");
  static_assert(kDqWarpsM * kWarpRows == kBlockM, "dQ warps: 32 queries each across the step");
  static_assert(kWarps % kSWarpsN == 0 && kWarps % kKvWarpsN == 0 && kWarps % kDqWarpsM == 0,
                "warp grids");
  static_assert(kSCols % (2 * kMmaN) == 0 && kKvCols % (2 * kMmaN) == 0 &&
                    kDqCols % (2 * kMmaN) == 0,
                "warp columns: pairs of n8 tiles");
  static_assert(kHeadDim % kMmaK == 0 && kBlockM % kMmaK == 0, "whole k16 steps");
  static_assert(kSeqPadMultiple % kBlockM == 0, "LSE/D tiles stay inside the padded rows");
  static_assert((kBlockM * sizeof(float)) % 16 == 0 && 2 * kBlockM / 4 <= kThreads,
                "LSE/D tiles in 16-byte copies, one per thread");
  static_assert(kOffQ % 16 == 0 && kOffDo % 16 == 0 && kOffP % 16 == 0 && kOffDs % 16 == 0 &&
                    kOffLse % 16 == 0,
                "16-byte aligned shared tiles");
};

// The tiled dQ accumulator (kDqTiled, TcLaunch::dq_tiled): [batch * heads, seq_pad, head_dim] floats,
// each query tile's (kBlockM x head_dim) block in the order the dQ warps hold it. The tile is
// kDqWarpsM blocks of 32 rows (32 x head_dim floats each, in row order), each of them kDqWarpsD
// blocks of 32 x kDqCols floats, one dQ warp's; in a warp's block, its n8 tile (i, j) (rows i * 16 + g
// and i * 16 + g + 8, columns j * 8 + 2c and + 1; lane = 4g + c) is 32 float4s, lane l's at float
// 4 (32 (i kDqN + j) + l): (g, 2c), (g, 2c + 1), (g + 8, 2c), (g + 8, 2c + 1), the order of an m16n8
// accumulator. One warp's reduction of an n8 tile is then 512 contiguous bytes. The kernel (lane_offset,
// tile_offset) and the convert (place) read the layout here only.
template <typename Tr> struct DqTiledLayout {
  static constexpr int kDqN = Tr::kDqCols / Tr::kMmaN;  // n8 tiles of a dQ warp's columns
  static constexpr int kWarpFloats = Tr::kWarpRows * Tr::kDqCols;
  static constexpr int kTileFloats = Tr::kBlockM * Tr::kHeadDim;
  static_assert(2 * kDqN * 32 * 4 == kWarpFloats && Tr::kWarpRows == 2 * Tr::kMmaM &&
                    Tr::kWarps * kWarpFloats == kTileFloats,
                "the dQ warps' fragments cover the query tile once");
  // Float offset of the first float4 of lane (= 4g + c) of the dQ warp at (dq_q, dq_d), from the
  // tile's row dq_q (its 32-row block's first float): its column block, the lane's place.
  __device__ static int lane_offset(int dq_d, int g, int c) {
    return (dq_d / Tr::kDqCols) * kWarpFloats + 4 * (4 * g + c);
  }
  // Float offset of n8 tile (i, j)'s float4 from the lane's first.
  static constexpr int tile_offset(int i, int j) { return (i * kDqN + j) * 32 * 4; }
  // The tile row and column of float4 number v's first float (offset 4 v); its second is at column
  // + 1, its third and fourth at row + 8.
  struct Place {
    int row;
    int col;
  };
  __device__ static Place place(int v) {
    const int lane = v % 32, n8 = v / 32;
    const int j = n8 % kDqN, i = (n8 / kDqN) % 2, w = n8 / (2 * kDqN);  // w: the warp's block
    return {(w / Tr::kDqWarpsD) * Tr::kWarpRows + i * Tr::kMmaM + lane / 4,
            (w % Tr::kDqWarpsD) * Tr::kDqCols + j * Tr::kMmaN + 2 * (lane % 4)};
  }
};

template <typename Tr>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinBlocks)
    bwd_main_tc_grid_kernel(const MainArgs a) {
  using Elem = typename Tr::Elem;
  constexpr int D = Tr::kHeadDim;
  constexpr int kSN = Tr::kSCols / Tr::kMmaN;     // n8 tiles of a warp's S^T block (queries)
  constexpr int kKvN = Tr::kKvCols / Tr::kMmaN;   // n8 tiles of a warp's dV/dK block (head_dim)
  constexpr int kDqN = Tr::kDqCols / Tr::kMmaN;   // n8 tiles of a warp's dQ block (head_dim)
  // Which of dV += P^T dO and dK += dS^T Q a dV/dK pass computes (kDqMid splits them).
  constexpr int kKvBoth = 0, kKvDv = 1, kKvDk = 2;

  extern __shared__ __align__(16) unsigned char smem[];
  Elem* sK = reinterpret_cast<Elem*>(smem + Tr::kOffK);    // (kBlockN, kRowStride)
  Elem* sV = reinterpret_cast<Elem*>(smem + Tr::kOffV);    // (kBlockN, kRowStride)
  Elem* sQ = reinterpret_cast<Elem*>(smem + Tr::kOffQ);    // 2 x (kBlockM, kRowStride)
  Elem* sDo = reinterpret_cast<Elem*>(smem + Tr::kOffDo);  // 2 x (kBlockM, kRowStride)
  Elem* sP = reinterpret_cast<Elem*>(smem + Tr::kOffP);    // (kBlockN, kPStride): P^T
  Elem* sDs = reinterpret_cast<Elem*>(smem + Tr::kOffDs);  // (kBlockN, kPStride): dS^T
  float* sLse = reinterpret_cast<float*>(smem + Tr::kOffLse);  // 2 x (kBlockM)
  float* sD = reinterpret_cast<float*>(smem + Tr::kOffD);      // 2 x (kBlockM)

  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int g = lane / 4;
  const int c = lane % 4;

  // Block -> (batch, K/V head, K/V tile), query-tile order: as bwd_main_tc_kernel.
  // kHeadSplit: the grid has head_split "virtual" K/V planes per real one (plane = virtual / split),
  // each taking its share of the plane's query heads; causal grids are then tile-major (the longest
  // units first, for the launcher's list-scheduling model), non-causal ones plane-major.
  const CausalMask mask = a.mask;
  const int seq_q = mask.seq_q, seq_k = mask.seq_k;
  const int n_tiles = (seq_k + Tr::kBlockN - 1) / Tr::kBlockN;
  const int split = Tr::kHeadSplit ? a.head_split : 1;
  const int n_bkv = a.batch * a.kv_heads * split;
  // kTailSplit: the grid is n_blocks - rem whole blocks, then rem blocks of tail_n units each.
  [[maybe_unused]] int tail_sub = 0, tail_n = 1, tail_first = 0, tail_rem = 0;
  [[maybe_unused]] unsigned block = 0;  // kTailSplit: the block of this unit
  if constexpr (Tr::kTailSplit) {
    block = blockIdx.x;
    const int n_blocks = n_tiles * a.batch * a.kv_heads;
    tail_rem = (int(gridDim.x) - n_blocks) / (a.head_split - 1);
    tail_first = n_blocks - tail_rem;
    if (int(block) >= tail_first) {
      const int u = int(block) - tail_first;
      block = unsigned(tail_first + u / a.head_split);
      tail_sub = u % a.head_split;
      tail_n = a.head_split;
    }
  }
  // Unsigned as blockIdx.x (unsigned divisions below), read where it is used.
  auto block_idx = [&]() -> unsigned {
    if constexpr (Tr::kTailSplit) {
      return block;
    } else {
      return blockIdx.x;
    }
  };
  int tile, bkv;
  if (mask.causal && (!Tr::kHeadMajorCausal || Tr::kHeadSplit)) {
    tile = block_idx() / n_bkv;
    bkv = block_idx() % n_bkv;
  } else if (mask.causal && a.plane_group > 1) {
    // Plane groups (MainArgs::plane_group): key tiles outermost within each group of planes, the last group short;
    // common/tile_order.h's order, whose last tiles (here the first key tiles, the longest) come first.
    const PlaneTile pt = grouped_tile(int(block_idx()), n_bkv, n_tiles, a.plane_group);
    tile = n_tiles - 1 - pt.q_tile;
    bkv = pt.bh;
  } else {
    tile = block_idx() % n_tiles;
    bkv = block_idx() / n_tiles;
  }
  const int group = a.heads / a.kv_heads;
  int head_lo = 0, n_heads = group;  // this block's query heads within the group
  if constexpr (Tr::kHeadSplit) {
    const int sub = bkv % split;
    bkv /= split;
    head_lo = sub * group / split;
    n_heads = (sub + 1) * group / split - head_lo;
  }
  const int b = bkv / a.kv_heads;
  const int hk = bkv % a.kv_heads;
  const int n0 = tile * Tr::kBlockN;

  const int m_tiles = (seq_q + Tr::kBlockM - 1) / Tr::kBlockM;
  const int m_begin = mask.first_q_tile(n0, Tr::kBlockM);
  const int per_head = m_tiles - m_begin;
  const int m_rot = mask.causal ? 0 : (n0 / Tr::kBlockM) % per_head;
  // kTailSplit: this unit's steps [tail_it0, tail_it0 + n_iters) of the block's walk.
  const int tail_it0 = Tr::kTailSplit ? tail_sub * (n_heads * per_head) / tail_n : 0;
  const int n_iters = Tr::kTailSplit ? (tail_sub + 1) * (n_heads * per_head) / tail_n - tail_it0
                                     : n_heads * per_head;

  const Elem* q = static_cast<const Elem*>(a.q);
  const Elem* dout = static_cast<const Elem*>(a.dout);
  const float* lse = static_cast<const float*>(a.lse);
  const float* dvec = static_cast<const float*>(a.d);
  const std::int64_t kv_off = (std::int64_t(bkv) * seq_k + n0) * D;

  auto head_of = [&](int it) { return hk * group + head_lo + it / per_head; };
  auto mtile_of = [&](int it) { return m_begin + (m_rot + it % per_head) % per_head; };
  // A main-loop step's place: its query head and first query row.
  struct StepPos {
    int head;
    int m0;
  };
  auto pos_of = [&](int it) { return StepPos{head_of(it), mtile_of(it) * Tr::kBlockM}; };
  // kLean: the same walk as a cursor. r is the step's place in its head's rotated tile order (query
  // tile m_begin + r); after per_head steps r is back where it started and the next head starts.
  // kDescend: r runs from per_head - 1 down to 0, wrapping the same way.
  struct Cursor {
    int r;
    int head;
  };
  const int r_start = Tr::kDescend ? per_head - 1 : m_rot;
  auto advance = [&](Cursor cur) {
    const int r = Tr::kDescend ? (cur.r == 0 ? per_head : cur.r) - 1
                               : (cur.r + 1 == per_head ? 0 : cur.r + 1);
    return Cursor{r, cur.head + (r == r_start ? 1 : 0)};
  };
  auto pos_at = [&](Cursor cur) { return StepPos{cur.head, (m_begin + cur.r) * Tr::kBlockM}; };
  // kTailSplit: the cursor after tail_it0 steps (r wraps at per_head, the head advances each wrap).
  const Cursor first = Tr::kTailSplit ? Cursor{(r_start + tail_it0 % per_head) % per_head,
                                               hk * group + head_lo + tail_it0 / per_head}
                                      : Cursor{r_start, hk * group + head_lo};

  // kLean: this thread's Q/dO copies, rows ld_row + k * (kThreads / kVecsPerRow) of column ld_col.
  const int ld_row = tid / Tr::kVecsPerRow;
  const int ld_col = (tid % Tr::kVecsPerRow) * Tr::kVecElems;

  auto load_q_tile = [&](StepPos pos, int buf) {
    const std::int64_t bh = std::int64_t(b) * a.heads + pos.head;
    const int m0 = pos.m0;
    const std::int64_t q_off = (bh * seq_q + m0) * D;
    if constexpr (Tr::kLean) {
      const bool full = m0 + Tr::kBlockM <= seq_q;  // all but the last query tile of a head
      const int s_off = (buf * Tr::kBlockM + ld_row) * Tr::kRowStride + ld_col;
      const std::int64_t g_off = q_off + ld_row * D + ld_col;
      detail::load_rows_unrolled<Tr, Tr::kBlockM>(sQ + s_off, q + g_off, q + q_off, ld_row, full,
                                                  seq_q - m0);
      detail::load_rows_unrolled<Tr, Tr::kBlockM>(sDo + s_off, dout + g_off, dout + q_off, ld_row,
                                                  full, seq_q - m0);
    } else {
      detail::load_rows<Tr>(sQ + buf * Tr::kBlockM * Tr::kRowStride, q + q_off, Tr::kBlockM,
                            seq_q - m0, tid);
      detail::load_rows<Tr>(sDo + buf * Tr::kBlockM * Tr::kRowStride, dout + q_off, Tr::kBlockM,
                            seq_q - m0, tid);
    }
    constexpr int kVecs = Tr::kBlockM * int(sizeof(float)) / 16;
    const std::int64_t row_off = bh * a.seq_pad + m0;
    if (tid < kVecs) {
      ptx::cp_async_16(sLse + buf * Tr::kBlockM + 4 * tid, lse + row_off + 4 * tid);
    } else if (tid < 2 * kVecs) {
      ptx::cp_async_16(sD + buf * Tr::kBlockM + 4 * (tid - kVecs), dvec + row_off + 4 * (tid - kVecs));
    }
  };

  detail::load_rows<Tr>(sK, static_cast<const Elem*>(a.k) + kv_off, Tr::kBlockN, seq_k - n0, tid);
  detail::load_rows<Tr>(sV, static_cast<const Elem*>(a.v) + kv_off, Tr::kBlockN, seq_k - n0, tid);
  load_q_tile(Tr::kLean ? pos_at(first) : pos_of(0), 0);
  ptx::cp_async_commit();

  const float scale = float(a.scale);
  const float scale_log2 = float(a.scale * kLog2e);

  // This warp's place in each grid.
  const int s_keys = (warp % Tr::kSWarpsN) * Tr::kWarpRows;     // S^T rows (local keys)
  const int s_q = (warp / Tr::kSWarpsN) * Tr::kSCols;           // S^T columns (local queries)
  const int kv_keys = (warp % Tr::kKvWarpsN) * Tr::kWarpRows;   // dV/dK rows (local keys)
  const int kv_d = (warp / Tr::kKvWarpsN) * Tr::kKvCols;        // dV/dK columns
  const int dq_q = (warp % Tr::kDqWarpsM) * Tr::kWarpRows;      // dQ rows (local queries)
  const int dq_d = (warp / Tr::kDqWarpsM) * Tr::kDqCols;        // dQ columns

  float acc_dk[2][kKvN][4];  // (32 keys, kKvCols) per warp
  float acc_dv[2][kKvN][4];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < kKvN; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_dk[i][j][e] = acc_dv[i][j][e] = 0.f;

  // ---- dQ share of step `step` = scale * dS K: (32 queries, kDqCols) per warp, k = keys; dS^T from
  // sDs_step ----
  // masked_tag: as the step's (below); std::false_type only where the step's tile needs no mask.
  auto dq_reduce = [&](StepPos pos, const Elem* sDs_step, auto masked_tag) {
    const int m0 = pos.m0;
    const bool need_mask = Tr::kSplitMasked ? bool(decltype(masked_tag)::value)
                                            : mask.tile_needs_mask(m0, n0, Tr::kBlockN);
    float acc_dq[2][kDqN][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < kDqN; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_dq[i][j][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < Tr::kBlockN; kk += Tr::kMmaK) {
      // Causal diagonal tiles: keys [kk, kk + 16) hidden from all of this warp's queries.
      if (need_mask && !mask.visible(m0 + dq_q + Tr::kWarpRows - 1, n0 + kk)) continue;
      std::uint32_t ads[2][4];
#pragma unroll
      for (int i = 0; i < 2; ++i)
        // A = dS (m = queries, k = keys), stored transposed as (keys, queries): transposing ldmatrix.
        ptx::ldmatrix_x4_trans(ads[i], sDs_step + (kk + (lane / 16) * 8 + lane % 8) * Tr::kPStride +
                                           dq_q + i * Tr::kMmaM + ((lane / 8) % 2) * 8);
#pragma unroll
      for (int j = 0; j < kDqN; j += 2) {
        // B = K (k = keys, n = head_dim), stored [key][dim]: transposing ldmatrix.
        std::uint32_t bk[4];
        ptx::ldmatrix_x4_trans(bk, sK + (kk + lane % 16) * Tr::kRowStride + dq_d + j * Tr::kMmaN +
                                       (lane / 16) * 8);
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          ptx::mma_m16n8k16<Elem>(acc_dq[i][j], ads[i], {bk[0], bk[1]});
          ptx::mma_m16n8k16<Elem>(acc_dq[i][j + 1], ads[i], {bk[2], bk[3]});
        }
      }
    }
    const std::int64_t bh = std::int64_t(b) * a.heads + pos.head;
    if constexpr (Tr::kDqTiled) {
      // One red.v4 a lane per n8 tile, a warp's covering 512 contiguous bytes (DqTiledLayout). dS^T
      // carries the scale (kLean). Row tests only on a head's last query tile, as kDqRed2's.
      using Layout = DqTiledLayout<Tr>;
      float* dq_lane = static_cast<float*>(a.dq_acc) + (bh * a.seq_pad + m0 + dq_q) * D +
                       Layout::lane_offset(dq_d, g, c);
      auto reduce = [&](auto checked) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          if (decltype(checked)::value && m0 + dq_q + i * Tr::kMmaM >= seq_q) continue;
#pragma unroll
          for (int j = 0; j < kDqN; ++j)
            detail::atomic_add4(dq_lane + Layout::tile_offset(i, j), acc_dq[i][j][0], acc_dq[i][j][1],
                                acc_dq[i][j][2], acc_dq[i][j][3]);
        }
      };
      if (m0 + dq_q + Tr::kWarpRows <= seq_q) {
        reduce(std::false_type{});
      } else {
        reduce(std::true_type{});
      }
    } else if constexpr (Tr::kDqRed2) {
      // Each lane its own pairs: (row g, columns 2c, 2c + 1) and (row g + 8, the same columns); the
      // four lanes of a row cover one 32-byte sector. dS^T carries the scale (kLean).
      const int row0 = m0 + dq_q + g;
      float* dq_base = static_cast<float*>(a.dq_acc) + (bh * seq_q + row0) * D + dq_d + 2 * c;
      auto reduce = [&](auto checked) {
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int r = i * Tr::kMmaM + h * 8;
            if (decltype(checked)::value && row0 + r >= seq_q) continue;
#pragma unroll
            for (int j = 0; j < kDqN; ++j)
              detail::atomic_add2(dq_base + r * D + j * Tr::kMmaN, acc_dq[i][j][2 * h],
                                  acc_dq[i][j][2 * h + 1]);
          }
      };
      // kLean: only a head's last query tile has rows past seq_q, so one uniform test picks the
      // copy with row tests (a test per reduction costs a branch each: ptxas does not predicate
      // them).
      if (m0 + dq_q + Tr::kWarpRows <= seq_q) {
        reduce(std::false_type{});
      } else {
        reduce(std::true_type{});
      }
    } else if constexpr (Tr::kLean) {
      // As below, without the scale (dS^T carries it) and with row tests only on a head's last query
      // tile (as above).
      const bool odd = c & 1;
      const int row0 = m0 + dq_q + g + (odd ? 8 : 0);
      float* dq_base =
          static_cast<float*>(a.dq_acc) + (bh * seq_q + row0) * D + dq_d + 2 * (c & ~1);
      auto reduce = [&](auto checked) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const bool row_ok = !decltype(checked)::value || row0 + i * Tr::kMmaM < seq_q;
#pragma unroll
          for (int j = 0; j < kDqN; ++j) {
            const float* v = acc_dq[i][j];
            const float recv0 = __shfl_xor_sync(0xffffffffu, odd ? v[0] : v[2], 1);
            const float recv1 = __shfl_xor_sync(0xffffffffu, odd ? v[1] : v[3], 1);
            if (row_ok)
              detail::atomic_add4(dq_base + i * Tr::kMmaM * D + j * Tr::kMmaN, odd ? recv0 : v[0],
                                  odd ? recv1 : v[1], odd ? v[2] : recv0, odd ? v[3] : recv1);
          }
        }
      };
      if (m0 + dq_q + Tr::kWarpRows <= seq_q) {
        reduce(std::false_type{});
      } else {
        reduce(std::true_type{});
      }
    } else {
      // As bwd_main_tc_kernel: lanes c and c^1 swap halves, one 16-byte reduction per lane and tile
      // (even lanes: row g, odd lanes: row g + 8), here with selects instead of branches.
      const bool odd = c & 1;
      const int row0 = m0 + dq_q + g + (odd ? 8 : 0);
      float* dq_base =
          static_cast<float*>(a.dq_acc) + (bh * seq_q + row0) * D + dq_d + 2 * (c & ~1);
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const bool row_ok = row0 + i * Tr::kMmaM < seq_q;
#pragma unroll
        for (int j = 0; j < kDqN; ++j) {
          const float* v = acc_dq[i][j];
          const float recv0 = __shfl_xor_sync(0xffffffffu, odd ? v[0] : v[2], 1);
          const float recv1 = __shfl_xor_sync(0xffffffffu, odd ? v[1] : v[3], 1);
          if (row_ok)
            detail::atomic_add4(dq_base + i * Tr::kMmaM * D + j * Tr::kMmaN,
                                scale * (odd ? recv0 : v[0]), scale * (odd ? recv1 : v[1]),
                                scale * (odd ? v[2] : recv0), scale * (odd ? v[3] : recv1));
        }
      }
    }
  };

  // kDeferDq: dQ of step `step` from its dS^T buffer, masked as its tile needs.
  // step: its index in the loop (its dS^T buffer is step & 1); pos: its place.
  auto dq_reduce_step = [&](int step, StepPos pos) {
    const Elem* sDs_step = sDs + (step & 1) * Tr::kBlockN * Tr::kPStride;
    if (mask.tile_needs_mask(pos.m0, n0, Tr::kBlockN)) {
      dq_reduce(pos, sDs_step, std::true_type{});
    } else {
      dq_reduce(pos, sDs_step, std::false_type{});
    }
  };

  Cursor cur = first;  // kLean: step it's place
  StepPos pos_prev{};  // kDeferDq: step it - 1's place
  for (int it = 0; it < n_iters; ++it) {
    const int buf = it & 1;
    const StepPos pos = Tr::kLean ? pos_at(cur) : pos_of(it);
    const Cursor next = advance(cur);
    // This step's tiles have landed, and every warp is done with the previous step (its sQ/sdO
    // buffer, the other one, and sP/sdS; kDeferDq: the dS^T buffer of the step before it): prefetch
    // the next step's tiles into that buffer.
    ptx::cp_async_wait<0>();
    __syncthreads();
    auto prefetch = [&] {
      if (it + 1 < n_iters) load_q_tile(Tr::kLean ? pos_at(next) : pos_of(it + 1), buf ^ 1);
      ptx::cp_async_commit();
    };
    if constexpr (!Tr::kLatePrefetch) prefetch();

    const int m0 = pos.m0;
    const bool tile_masked = mask.tile_needs_mask(m0, n0, Tr::kBlockN);
    auto step = [&](auto masked_tag) {
      const bool need_mask = Tr::kSplitMasked ? bool(decltype(masked_tag)::value) : tile_masked;
      const Elem* sQb = sQ + buf * Tr::kBlockM * Tr::kRowStride;
      const Elem* sDob = sDo + buf * Tr::kBlockM * Tr::kRowStride;
      const float* sLseb = sLse + buf * Tr::kBlockM;
      const float* sDb = sD + buf * Tr::kBlockM;
      Elem* sDsW = sDs + (Tr::kDeferDq ? buf * Tr::kBlockN * Tr::kPStride : 0);  // this step's dS^T

      // This warp's P^T and dS^T as A fragments of dV/dK (m = keys, k = its kSCols queries): the dV/dK
      // warp of the same 32 keys uses them from registers and reads only the other warps' from sP/sDs.
      std::uint32_t own_p[2][kSN / 2][4], own_ds[2][kSN / 2][4];

      // ---- S^T = K Q^T, dP^T = V dO^T: (32 keys, kSCols queries) per warp ----
      {
        float acc_s[2][kSN][4];
        float acc_dp[2][kSN][4];
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int j = 0; j < kSN; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc_s[i][j][e] = acc_dp[i][j][e] = 0.f;

        // The most permissive pair of the block (its last query, its first key) hidden: all are.
        const bool skip = need_mask && !mask.visible(m0 + s_q + Tr::kSCols - 1, n0 + s_keys);
        constexpr int kHalves = Tr::kSplitS ? 2 : 1;
        constexpr int kSNHalf = kSN / kHalves;  // n8 tiles of queries per half
        static_assert(kSNHalf % 2 == 0, "halves of whole n16 query blocks");
        // One k16 step of a (keys x queries) product, S^T = K Q^T or dP^T = V dO^T: A = this warp's 32
        // keys of sA (ldmatrix), B = the query n8 tiles [j0, j1) of sB, stored [query][dim] (plain
        // ldmatrix); acc[i][j] += A_i B_j.
        auto keys_x_queries = [&](float (&acc)[2][kSN][4], const Elem* sA, const Elem* sB, int kk, int j0,
                                  int j1) {
          std::uint32_t a[2][4];
#pragma unroll
          for (int i = 0; i < 2; ++i)
            ptx::ldmatrix_x4(a[i], sA + (s_keys + i * Tr::kMmaM + lane % 16) * Tr::kRowStride + kk +
                                       (lane / 16) * 8);
#pragma unroll
          for (int j = j0; j < j1; j += 2) {
            std::uint32_t b[4];
            ptx::ldmatrix_x4(b, sB + (s_q + j * Tr::kMmaN + (lane / 16) * 8 + lane % 8) * Tr::kRowStride +
                                    kk + ((lane / 8) % 2) * 8);
#pragma unroll
            for (int i = 0; i < 2; ++i) {
              ptx::mma_m16n8k16<Elem>(acc[i][j], a[i], {b[0], b[1]});
              ptx::mma_m16n8k16<Elem>(acc[i][j + 1], a[i], {b[2], b[3]});
            }
          }
        };
        if constexpr (Tr::kStagger) {
          // S^T first. Then the warps of the first half take P^T = exp2(..) (acc_s becomes P^T in
          // place) before dP^T, those of the second half dP^T before the exponentials: warps w and
          // w + kWarps / 2 share a scheduler, so one's MUFU work runs under the other's MMAs.
          // A skipped block keeps acc_s = 0 = P^T.
          if (!skip) {
#pragma unroll
            for (int kk = 0; kk < D; kk += Tr::kMmaK) keys_x_queries(acc_s, sK, sQb, kk, 0, kSN);
            auto exps = [&] {
#pragma unroll
              for (int j = 0; j < kSN; ++j) {
                const float2 l2 =
                    *reinterpret_cast<const float2*>(sLseb + s_q + j * Tr::kMmaN + 2 * c);
#pragma unroll
                for (int i = 0; i < 2; ++i)
#pragma unroll
                  for (int e = 0; e < 4; ++e) {
                    const int key = n0 + s_keys + i * Tr::kMmaM + g + (e / 2) * 8;
                    const int query = m0 + s_q + j * Tr::kMmaN + 2 * c + (e % 2);
                    acc_s[i][j][e] =
                        need_mask && !mask.visible(query, key)
                            ? 0.f
                            : ptx::exp2_approx(
                                  fmaf(acc_s[i][j][e], scale_log2, -((e % 2) ? l2.y : l2.x)));
                  }
              }
            };
            auto dp = [&] {
#pragma unroll
              for (int kk = 0; kk < D; kk += Tr::kMmaK) keys_x_queries(acc_dp, sV, sDob, kk, 0, kSN);
            };
            if (warp < Tr::kWarps / 2) {
              exps();
              // dP^T's accumulators start at 0 * P^T (0: P^T is finite), a data dependence that keeps
              // ptxas from hoisting dP^T's MMAs above the exponentials (it schedules MMAs first).
#pragma unroll
              for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int j = 0; j < kSN; ++j)
#pragma unroll
                  for (int e = 0; e < 4; ++e) acc_dp[i][j][e] = 0.f * acc_s[i][j][e];
              dp();
            } else {
              dp();
              exps();
            }
          }
        } else if (!skip) {
#pragma unroll
          for (int hf = 0; hf < kHalves; ++hf)
#pragma unroll
          for (int kk = 0; kk < D; kk += Tr::kMmaK) {
            keys_x_queries(acc_s, sK, sQb, kk, hf * kSNHalf, (hf + 1) * kSNHalf);
            keys_x_queries(acc_dp, sV, sDob, kk, hf * kSNHalf, (hf + 1) * kSNHalf);
          }
        }

        // P^T = exp2(S^T * scale*log2e - LSE*log2e); dS^T = P^T o (dP^T - D); both to shared memory
        // as (keys, queries). A skipped block writes zeros (its P is 0).
#pragma unroll
        for (int j = 0; j < kSN; ++j) {
          const int ql = s_q + j * Tr::kMmaN + 2 * c;  // local query of elements 0 and 2
          [[maybe_unused]] const float2 l2 = *reinterpret_cast<const float2*>(sLseb + ql);
          const float2 d_raw = *reinterpret_cast<const float2*>(sDb + ql);
          // kLean: dS^T = P^T o (scale dP^T - scale D) carries the softmax scale for dQ and dK.
          const float2 dd = Tr::kLean ? make_float2(scale * d_raw.x, scale * d_raw.y) : d_raw;
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            float p[4], ds[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              [[maybe_unused]] const int key = n0 + s_keys + i * Tr::kMmaM + g + (e / 2) * 8;
              [[maybe_unused]] const int query = m0 + ql + (e % 2);
              if constexpr (Tr::kStagger) {
                p[e] = acc_s[i][j][e];  // P^T already (0 where skipped or masked)
              } else {
                p[e] = skip || (need_mask && !mask.visible(query, key))
                           ? 0.f
                           : ptx::exp2_approx(
                                 fmaf(acc_s[i][j][e], scale_log2, -((e % 2) ? l2.y : l2.x)));
              }
              const float d_e = (e % 2) ? dd.y : dd.x;
              ds[e] = Tr::kLean ? p[e] * fmaf(acc_dp[i][j][e], scale, -d_e)
                                : p[e] * (acc_dp[i][j][e] - d_e);
            }
            if constexpr (!Tr::kStMatrix) {
              const int row = s_keys + i * Tr::kMmaM + g;
              Elem* p_lo = sP + row * Tr::kPStride + ql;
              Elem* ds_lo = sDsW + row * Tr::kPStride + ql;
              *reinterpret_cast<std::uint32_t*>(p_lo) = ptx::pack2<Elem>(p[0], p[1]);
              *reinterpret_cast<std::uint32_t*>(p_lo + 8 * Tr::kPStride) = ptx::pack2<Elem>(p[2], p[3]);
              *reinterpret_cast<std::uint32_t*>(ds_lo) = ptx::pack2<Elem>(ds[0], ds[1]);
              *reinterpret_cast<std::uint32_t*>(ds_lo + 8 * Tr::kPStride) =
                  ptx::pack2<Elem>(ds[2], ds[3]);
            }
            // The m16n8 accumulators of n8 tiles 2s and 2s + 1 are the A fragment of k16 step s.
            if constexpr (Tr::kPInRegs) {
              own_p[i][j / 2][(j % 2) * 2] = ptx::pack2<Elem>(p[0], p[1]);
              own_p[i][j / 2][(j % 2) * 2 + 1] = ptx::pack2<Elem>(p[2], p[3]);
              own_ds[i][j / 2][(j % 2) * 2] = ptx::pack2<Elem>(ds[0], ds[1]);
              own_ds[i][j / 2][(j % 2) * 2 + 1] = ptx::pack2<Elem>(ds[2], ds[3]);
            }
          }
        }
        if constexpr (Tr::kStMatrix) {
          // The A fragments are the 16 x 16 blocks (keys, queries) as stmatrix wants them.
#pragma unroll
          for (int i = 0; i < 2; ++i)
#pragma unroll
            for (int t = 0; t < kSN / 2; ++t) {
              const int off = (s_keys + i * Tr::kMmaM) * Tr::kPStride + s_q + t * Tr::kMmaK;
              detail::store_tile16(sP + off, Tr::kPStride, own_p[i][t], lane);
              detail::store_tile16(sDsW + off, Tr::kPStride, own_ds[i][t], lane);
            }
        }
      }
      // Before dV/dK reads another warp's P^T, dS^T: without kDeferDq a block-wide barrier; with it,
      // the previous step's dQ (every warp's dS^T of it landed before this step's first barrier),
      // then a barrier of the two warps that hold the same keys.
      if constexpr (Tr::kLatePrefetch) prefetch();
      auto publish = [&] {
        if constexpr (Tr::kDeferDq) {
          if (it > 0) dq_reduce_step(it - 1, pos_prev);
          detail::bar_sync_threads(1 + warp % Tr::kSWarpsN, 32 * Tr::kSWarpsM);
        } else {
          __syncthreads();  // every warp's P^T and dS^T are in sP, sDs
        }
      };
      if constexpr (!Tr::kEarlyOwn) publish();
      if constexpr (Tr::kDqFirst) dq_reduce(pos, sDsW, masked_tag);

      // ---- dV += P^T dO, dK += dS^T Q: (32 keys, kKvCols) per warp, k = queries ----
      static_assert(Tr::kKvWarpsN == Tr::kSWarpsN, "the dV/dK warp holds the S^T warp's keys");
      // part: kKvBoth (dV and dK together, the default), kKvDv or kKvDk (kDqMid's two passes).
      auto kv_step = [&](int kq, const std::uint32_t (&ap)[2][4], const std::uint32_t (&ads)[2][4],
                         auto part) {
        constexpr int kPart = decltype(part)::value;
        const int row = kq + lane % 16;
#pragma unroll
        for (int j = 0; j < kKvN; j += 2) {
          // B = dO / Q (k = queries, n = head_dim), stored [query][dim]: transposing ldmatrix.
          const int col = kv_d + j * Tr::kMmaN + (lane / 16) * 8;
          std::uint32_t bo[4], bq[4];
          if constexpr (kPart != kKvDk) ptx::ldmatrix_x4_trans(bo, sDob + row * Tr::kRowStride + col);
          if constexpr (kPart != kKvDv) ptx::ldmatrix_x4_trans(bq, sQb + row * Tr::kRowStride + col);
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            if constexpr (kPart != kKvDk) {
              ptx::mma_m16n8k16<Elem>(acc_dv[i][j], ap[i], {bo[0], bo[1]});
              ptx::mma_m16n8k16<Elem>(acc_dv[i][j + 1], ap[i], {bo[2], bo[3]});
            }
            if constexpr (kPart != kKvDv) {
              ptx::mma_m16n8k16<Elem>(acc_dk[i][j], ads[i], {bq[0], bq[1]});
              ptx::mma_m16n8k16<Elem>(acc_dk[i][j + 1], ads[i], {bq[2], bq[3]});
            }
          }
        }
      };
      // Causal diagonal tiles: queries [kq, kq + 16) that see none of this warp's keys (P = dS = 0).
      auto kv_step_hidden = [&](int kq) {
        return need_mask && !mask.visible(m0 + kq + Tr::kMmaK - 1, n0 + kv_keys);
      };
      // dV and/or dK (part) over every query of the step.
      auto kv_all = [&](auto part) {
        constexpr int kPart = decltype(part)::value;
        // This warp's own queries: A fragments from registers.
#pragma unroll
        for (int t = 0; t < (Tr::kPInRegs ? kSN / 2 : 0); ++t) {
          const int kq = s_q + t * Tr::kMmaK;
          if (kv_step_hidden(kq)) continue;
          const std::uint32_t ap[2][4] = {
              {own_p[0][t][0], own_p[0][t][1], own_p[0][t][2], own_p[0][t][3]},
              {own_p[1][t][0], own_p[1][t][1], own_p[1][t][2], own_p[1][t][3]}};
          const std::uint32_t ads[2][4] = {
              {own_ds[0][t][0], own_ds[0][t][1], own_ds[0][t][2], own_ds[0][t][3]},
              {own_ds[1][t][0], own_ds[1][t][1], own_ds[1][t][2], own_ds[1][t][3]}};
          kv_step(kq, ap, ads, part);
        }
        if constexpr (Tr::kEarlyOwn) publish();
        // The other S^T warps' queries: A = P^T / dS^T (m = keys, k = queries), stored [key][query]:
        // plain ldmatrix.
#pragma unroll
        for (int o = Tr::kPInRegs ? 1 : 0; o < Tr::kSWarpsM; ++o) {
          const int q_base = ((warp / Tr::kSWarpsN + o) % Tr::kSWarpsM) * Tr::kSCols;
#pragma unroll
          for (int t = 0; t < kSN / 2; ++t) {
            const int kq = q_base + t * Tr::kMmaK;
            if (kv_step_hidden(kq)) continue;
            std::uint32_t ap[2][4], ads[2][4];
#pragma unroll
            for (int i = 0; i < 2; ++i) {
              const int off =
                  (kv_keys + i * Tr::kMmaM + lane % 16) * Tr::kPStride + kq + (lane / 16) * 8;
              if constexpr (kPart != kKvDk) ptx::ldmatrix_x4(ap[i], sP + off);
              if constexpr (kPart != kKvDv) ptx::ldmatrix_x4(ads[i], sDsW + off);
            }
            kv_step(kq, ap, ads, part);
          }
        }
      };
      if constexpr (Tr::kDqMid) {
        // FlashAttention-2's order: dV, then dQ (its reductions leave while dK's MMAs run), then dK.
        kv_all(std::integral_constant<int, kKvDv>{});
        dq_reduce(pos, sDsW, masked_tag);
        kv_all(std::integral_constant<int, kKvDk>{});
      } else {
        kv_all(std::integral_constant<int, kKvBoth>{});
        if constexpr (!Tr::kDeferDq && !Tr::kDqFirst) dq_reduce(pos, sDsW, masked_tag);
      }
    };
    if (Tr::kSplitMasked && tile_masked) {
      step(std::true_type{});
    } else {
      step(std::false_type{});
    }
    pos_prev = pos;
    cur = next;
  }

  if constexpr (Tr::kDeferDq) {
    __syncthreads();  // every warp's dS^T of the last step is in its buffer
    dq_reduce_step(n_iters - 1, pos_prev);
  }

  // This block's dK and dV partial sums added into fp32 accumulators (the head split's or the tail's;
  // dS^T carried the scale, kLean) straight from the fragments, red.v2 per lane pair of columns (the
  // four lanes of a row cover one 32-byte sector); the launcher converts them once every block is done.
  const auto add_partials = [&](float* dk_acc, float* dv_acc) {
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = kv_keys + i * Tr::kMmaM + h * 8 + g;
        if (n0 + r >= seq_k) continue;
#pragma unroll
        for (int j = 0; j < kKvN; ++j) {
          const std::int64_t off = std::int64_t(r) * D + j * Tr::kMmaN;
          detail::atomic_add2(dk_acc + off, acc_dk[i][j][2 * h], acc_dk[i][j][2 * h + 1]);
          detail::atomic_add2(dv_acc + off, acc_dv[i][j][2 * h], acc_dv[i][j][2 * h + 1]);
        }
      }
  };

  if constexpr (Tr::kTailSplit) {
    if (tail_n > 1) {
      // A tail unit's partial sums (dS^T carried the scale, kLean): red.v2 into the tail's fp32
      // accumulators, rows counted from the first tail block's first key row.
      ptx::cp_async_wait<0>();
      const int first_bkv = tail_first / n_tiles;
      const std::int64_t row0 =
          std::int64_t(first_bkv) * seq_k + std::int64_t(tail_first - first_bkv * n_tiles) * Tr::kBlockN;
      const std::int64_t tail_elems = std::int64_t(tail_rem) * Tr::kBlockN * D;
      float* dk_acc = a.dkv_acc + (kv_off - row0 * D) + kv_d + 2 * c;
      float* dv_acc = dk_acc + tail_elems;
      add_partials(dk_acc, dv_acc);
      return;
    }
  }

  if constexpr (Tr::kHeadSplit) {
    // A partial sum over this block's query heads.
    ptx::cp_async_wait<0>();
    const std::int64_t plane_elems = std::int64_t(a.batch) * a.kv_heads * seq_k * D;
    float* dk_acc = a.dkv_acc + kv_off + kv_d + 2 * c;
    float* dv_acc = dk_acc + plane_elems;
    add_partials(dk_acc, dv_acc);
    return;
  }

  // dK (times scale; kLean: dS^T carried it) and dV through shared memory (sK and sV, once every warp
  // is done reading sK) for 16-byte coalesced stores.
  ptx::cp_async_wait<0>();
  __syncthreads();
  const float dk_scale = Tr::kLean ? 1.f : scale;
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < kKvN; ++j) {
      const int col = kv_d + j * Tr::kMmaN + 2 * c;
      const int r = kv_keys + i * Tr::kMmaM + g;
      *reinterpret_cast<std::uint32_t*>(sK + r * Tr::kRowStride + col) =
          ptx::pack2<Elem>(dk_scale * acc_dk[i][j][0], dk_scale * acc_dk[i][j][1]);
      *reinterpret_cast<std::uint32_t*>(sK + (r + 8) * Tr::kRowStride + col) =
          ptx::pack2<Elem>(dk_scale * acc_dk[i][j][2], dk_scale * acc_dk[i][j][3]);
      *reinterpret_cast<std::uint32_t*>(sV + r * Tr::kRowStride + col) =
          ptx::pack2<Elem>(acc_dv[i][j][0], acc_dv[i][j][1]);
      *reinterpret_cast<std::uint32_t*>(sV + (r + 8) * Tr::kRowStride + col) =
          ptx::pack2<Elem>(acc_dv[i][j][2], acc_dv[i][j][3]);
    }
  __syncthreads();
  Elem* dk = static_cast<Elem*>(a.dk) + kv_off;
  Elem* dv = static_cast<Elem*>(a.dv) + kv_off;
  for (int idx = tid; idx < Tr::kBlockN * Tr::kVecsPerRow; idx += Tr::kThreads) {
    const int r = idx / Tr::kVecsPerRow;
    const int col = (idx % Tr::kVecsPerRow) * Tr::kVecElems;
    if (n0 + r < seq_k) {
      *reinterpret_cast<uint4*>(dk + std::int64_t(r) * D + col) =
          *reinterpret_cast<const uint4*>(sK + r * Tr::kRowStride + col);
      *reinterpret_cast<uint4*>(dv + std::int64_t(r) * D + col) =
          *reinterpret_cast<const uint4*>(sV + r * Tr::kRowStride + col);
    }
  }
}

// Tile choice per head_dim. `type` is the fast choice for Hopper (227 KB of shared memory a block);
// `fallback` runs where a block gets less (A100: 163 KB): the 16-keys-per-warp kernel, as fast as it
// was there before the warp-grid kernel (which needs 173 KB at d=128, 178 KB at d=64).
//   d=128: 128 keys x 64 queries, 8 warps, warp grids 4x2 (S^T), 4x2 (dV/dK), 2x4 (dQ); dK+dV take
//          128 registers a thread, S+dP 64; own-query P in registers, split masked steps. On the
//          H200 (main kernel alone) early-own lost 1-3% and deferred dQ 4-8%, so both are off.
//          fallback: 128 x 64 in one chunk (155 KB; 205-236 TFLOP/s on the H200).
//   d=64:  128 keys x 128 queries, 8 warps, warp grids 4x2, 4x2, 4x2 (S+dP 128 registers, dK+dV 64),
//          the same options. fallback: 128 x 128 in chunks of 64 (144 KB).
//   d=32:  the 16-keys-per-warp kernel, 64 keys x 64 queries, 2 blocks of 4 warps per SM (not tuned).
// Measurements: docs/perf-notes.md, "flash backward", session 6.
template <typename Elem, int kHeadDim> struct TcConfig;
// Session 7 (H200, docs/perf-notes.md): `type` = kLean + kDqRed2 + kSplitS + kStMatrix +
// kHeadMajorCausal (call A: lean + red.v2 +5-9% over s6, split and stmatrix +0-2% each; call B:
// head-major causal +1-3% at d = 128 and, at d = 64, +2-3% causal N >= 4k), except d = 64 non-causal,
// which runs kLean + kDqRed2 alone (`noncausal`: call B 4% faster there than with split and
// stmatrix). Probe kept (FB_FLASH_BWD, grid_variant() in flash_bwd_common.cuh): `lean` (kLean +
// kDqRed2, tile-major causal). Measured and dropped (flags left in TcGridTraits): kDqFirst
// (-1..-4%), kLatePrefetch (-1..+1%); the probes `s6` (session 6's loop: -5..-9% against lean) and
// `desc` (`type` + kDescend: level with `type`), removed in session 8 to save their builds.
// `split` (session 8): `type` with kHeadSplit, run wherever the launcher splits a GQA/MQA group's
// query heads over blocks (MainArgs::head_split > 1); at d = 64 it keeps kSplitS (its speed with
// kStagger was not measured).
// Session 9 (call A, probe `stagger`, removed after it): kStagger in place of kSplitS lost 4% at d = 128
// (both masks) and d = 64 non-causal, won 0.4-0.7% at d = 64 causal, whose `type` has it now.
// Session 11 (call A, probe `dqtile`): every default runs with kDqTiled (`dq_tiled`, `noncausal_dq_tiled`,
// `tail_dq_tiled`: +7.5-10.5% on every long-N row); `type`, `noncausal` and `tail` run under `dqrows`
// (and `tail` under the probe `tail`), `split` (row-major dQ) wherever the GQA head split runs.
// Session 12 (call A, probe `splittile`: +4.2-15.2% on causal MQA): `split_dq_tiled` = `split` with
// kDqTiled, where the head split runs at d = 128; session 13 (call B, the same probe: +7.9-9.1%) at d = 64
// too; `split` under the probe `splitrows` (flash_bwd.cu split_dq_tiled()).
template <typename Elem> struct TcConfig<Elem, 128> {
  using type = TcGridTraits<Elem, 128, 128, 64, 4, 4, 2, true, false, true, false, true, true, true, true,
                            false, true>;
  using noncausal = type;
  using lean = TcGridTraits<Elem, 128, 128, 64, 4, 4, 2, true, false, true, false, true, true>;
  using fallback = TcTraits<Elem, 128, 128, 64, 64, 1>;
  using split = TcGridTraits<Elem, 128, 128, 64, 4, 4, 2, true, false, true, false, true, true, true, true,
                             false, true, false, false, true>;
  // `noncausal` with kTailSplit, where the launcher splits the last wave (session 11: the default at
  // d = 128 non-causal on grids of a wave or more; session 10's probe `tail`: +1.8-2.7% there).
  using tail = TcGridTraits<Elem, 128, 128, 64, 4, 4, 2, true, false, true, false, true, true, true, true,
                            false, true, false, false, false, false, false, true>;
  // `type` and `tail` with the tiled dQ accumulator (kDqTiled): the default since session 11 (probe
  // `dqtile` in call A: +7.5-10.5%); `type` and `tail` themselves run under the probe `dqrows`.
  using dq_tiled = TcGridTraits<Elem, 128, 128, 64, 4, 4, 2, true, false, true, false, true, true, true,
                                true, false, true, false, false, false, false, false, false, true>;
  using noncausal_dq_tiled = dq_tiled;
  using tail_dq_tiled = TcGridTraits<Elem, 128, 128, 64, 4, 4, 2, true, false, true, false, true, true, true,
                                     true, false, true, false, false, false, false, false, true, true>;
  // `split` with the tiled dQ accumulator: the default under a head split since session 12.
  using split_dq_tiled = TcGridTraits<Elem, 128, 128, 64, 4, 4, 2, true, false, true, false, true, true, true,
                                      true, false, true, false, false, true, false, false, false, true>;
  // `dq_tiled` with kDescend: the default on non-causal MHA passes since session 18 (flash_bwd.cu descend_walk()); the
  // probe `desc2` runs it causal too (at d = 128 `noncausal_dq_tiled` is `dq_tiled`).
  using desc_dq_tiled = TcGridTraits<Elem, 128, 128, 64, 4, 4, 2, true, false, true, false, true, true, true,
                                     true, false, true, true, false, false, false, false, false, true>;
  using noncausal_desc_dq_tiled = desc_dq_tiled;
};
template <typename Elem> struct TcConfig<Elem, 64> {
  // Causal: kStagger in place of kSplitS (session 9, call A: +0.4-0.7% in both interleaved runs at
  // N = 1k/4k/16k; the same kernel lost 4% on every other (d, mask), which keep kSplitS or lean).
  using type = TcGridTraits<Elem, 64, 128, 128, 4, 4, 4, true, false, true, false, true, true, false,
                            true, false, true, false, false, false, true>;
  using lean = TcGridTraits<Elem, 64, 128, 128, 4, 4, 4, true, false, true, false, true, true>;
  using noncausal = lean;
  using fallback = TcTraits<Elem, 64, 128, 128, 64, 1>;
  using split = TcGridTraits<Elem, 64, 128, 128, 4, 4, 4, true, false, true, false, true, true, true, true,
                             false, true, false, false, true>;
  using tail = TcGridTraits<Elem, 64, 128, 128, 4, 4, 4, true, false, true, false, true, true, false,
                            false, false, false, false, false, false, false, false, true>;
  // `type` and `noncausal` with the tiled dQ accumulator (kDqTiled): the default since session 11;
  // `type` and `noncausal` themselves run under the probe `dqrows`.
  using dq_tiled = TcGridTraits<Elem, 64, 128, 128, 4, 4, 4, true, false, true, false, true, true, false,
                                true, false, true, false, false, false, true, false, false, true>;
  using noncausal_dq_tiled = TcGridTraits<Elem, 64, 128, 128, 4, 4, 4, true, false, true, false, true, true,
                                          false, false, false, false, false, false, false, false, false,
                                          false, true>;
  // `noncausal_dq_tiled` with kTailSplit: grids of less than one wave, every block a tail block, as at d = 128 (the
  // default since session 39's call A, probe `subwave64`: 1.088-1.376x on ten drawn shapes).
  using tail_dq_tiled = TcGridTraits<Elem, 64, 128, 128, 4, 4, 4, true, false, true, false, true, true, false,
                                     false, false, false, false, false, false, false, false, true, true>;
  // `split` with the tiled dQ accumulator: the default under a head split since session 13 (call B, probe
  // `splittile`: +7.9-9.1% on causal MQA).
  using split_dq_tiled = TcGridTraits<Elem, 64, 128, 128, 4, 4, 4, true, false, true, false, true, true, true,
                                      true, false, true, false, false, true, false, false, false, true>;
  // The probe `desc2` (session 18): `dq_tiled` and `noncausal_dq_tiled` with kDescend.
  using desc_dq_tiled = TcGridTraits<Elem, 64, 128, 128, 4, 4, 4, true, false, true, false, true, true, false,
                                     true, false, true, true, false, false, true, false, false, true>;
  using noncausal_desc_dq_tiled = TcGridTraits<Elem, 64, 128, 128, 4, 4, 4, true, false, true, false, true, true,
                                               false, false, false, false, true, false, false, false, false,
                                               false, true>;
};
template <typename Elem> struct TcConfig<Elem, 32> {
  using type = TcTraits<Elem, 32, 64, 64, 64, 2>;
  using fallback = type;
};

// The least shared memory a block of the (dtype, head_dim) backward needs: the capability check.
template <typename Elem, int kHeadDim> int main_tc_smem_bytes() {
  using Cfg = TcConfig<Elem, kHeadDim>;
  return std::min(Cfg::type::kSmemBytes, Cfg::fallback::kSmemBytes);
}

template <typename Elem, int kHeadDim> SplitTiles main_tc_split_tiles() {
  if constexpr (kHeadDim == 32) {
    return {};
  } else {
    using Tr = typename TcConfig<Elem, kHeadDim>::split;
    return {Tr::kBlockN, Tr::kBlockM, Tr::kSmemBytes};
  }
}

template <typename Elem, int kHeadDim> int main_tc_key_tile() {
  using Cfg = TcConfig<Elem, kHeadDim>;
  static_assert(Cfg::type::kBlockN == Cfg::fallback::kBlockN, "one key tile per head_dim");
  return Cfg::type::kBlockN;
}

// The tiled dQ accumulator (DqTiledLayout of Tr) -> dQ: one block per (batch * head, query tile). The
// float4s are read in storage order (coalesced) and scattered into a padded shared tile of the element
// type, which then goes out as whole 16-byte row pieces.
constexpr int kConvertTiledThreads = 256;
template <typename Tr>
__global__ void __launch_bounds__(kConvertTiledThreads)
    bwd_convert_dq_tiled_kernel(const float* dq_acc, typename Tr::Elem* dq, int seq_q, int seq_pad,
                                int m_tiles) {
  using Elem = typename Tr::Elem;
  using Layout = DqTiledLayout<Tr>;
  constexpr int D = Tr::kHeadDim;
  __shared__ __align__(16) Elem tile[Tr::kBlockM * Tr::kRowStride];  // (kBlockM, kRowStride)
  const std::int64_t bh = blockIdx.x / unsigned(m_tiles);
  const int m0 = int(blockIdx.x % unsigned(m_tiles)) * Tr::kBlockM;
  const float4* src = reinterpret_cast<const float4*>(dq_acc + (bh * seq_pad + m0) * D);
  for (int v = threadIdx.x; v < Layout::kTileFloats / 4; v += kConvertTiledThreads) {
    const float4 x = src[v];
    const auto at = Layout::place(v);
    Elem* t = tile + at.row * Tr::kRowStride + at.col;
    *reinterpret_cast<std::uint32_t*>(t) = ptx::pack2<Elem>(x.x, x.y);
    *reinterpret_cast<std::uint32_t*>(t + 8 * Tr::kRowStride) = ptx::pack2<Elem>(x.z, x.w);
  }
  __syncthreads();
  Elem* out = dq + (bh * seq_q + m0) * D;
  for (int idx = threadIdx.x; idx < Tr::kBlockM * Tr::kVecsPerRow; idx += kConvertTiledThreads) {
    const int r = idx / Tr::kVecsPerRow;
    const int col = (idx % Tr::kVecsPerRow) * Tr::kVecElems;
    if (m0 + r < seq_q)
      *reinterpret_cast<uint4*>(out + std::int64_t(r) * D + col) =
          *reinterpret_cast<const uint4*>(tile + r * Tr::kRowStride + col);
  }
}

template <typename Elem, int kHeadDim>
void run_convert_dq_tiled(const float* dq_acc, void* dq, std::int64_t batch_heads, int seq_q, int seq_pad,
                          cudaStream_t stream) {
  using Cfg = TcConfig<Elem, kHeadDim>;
  using Tr = typename Cfg::dq_tiled;
  // Every kDqTiled kernel of this head_dim writes the same layout.
  using Nc = typename Cfg::noncausal_dq_tiled;
  using Sp = typename Cfg::split_dq_tiled;
  static_assert(Nc::kBlockM == Tr::kBlockM && Nc::kDqWarpsM == Tr::kDqWarpsM && Nc::kDqCols == Tr::kDqCols &&
                    Sp::kBlockM == Tr::kBlockM && Sp::kDqWarpsM == Tr::kDqWarpsM && Sp::kDqCols == Tr::kDqCols,
                "one tiled dQ layout per head_dim");
  const int m_tiles = (seq_q + Tr::kBlockM - 1) / Tr::kBlockM;
  const std::int64_t blocks = batch_heads * m_tiles;
  bwd_convert_dq_tiled_kernel<Tr><<<dim3(unsigned(blocks)), kConvertTiledThreads, 0, stream>>>(
      dq_acc, static_cast<Elem*>(dq), seq_q, seq_pad, m_tiles);
  FB_CUDA_CHECK_LAUNCH();
}

template <typename Tr> void launch_main_tc(const MainArgs& a, cudaStream_t stream) {
  const std::int64_t blocks =
      std::int64_t((a.mask.seq_k + Tr::kBlockN - 1) / Tr::kBlockN) * a.batch * a.kv_heads;
  if constexpr (Tr::kWarpGrid) {
    std::int64_t units = blocks * (Tr::kHeadSplit ? a.head_split : 1);
    if constexpr (Tr::kTailSplit) {
      int dev = 0, sms = 0;
      FB_CUDA_CHECK(cudaGetDevice(&dev));
      FB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
      units = blocks + std::int64_t(tail_blocks(blocks, sms)) * (a.head_split - 1);
    }
    set_smem_limit(reinterpret_cast<const void*>(&bwd_main_tc_grid_kernel<Tr>), Tr::kSmemBytes);
    bwd_main_tc_grid_kernel<Tr><<<dim3(unsigned(units)), Tr::kThreads, Tr::kSmemBytes, stream>>>(a);
  } else {
    set_smem_limit(reinterpret_cast<const void*>(&bwd_main_tc_kernel<Tr>), Tr::kSmemBytes);
    bwd_main_tc_kernel<Tr><<<dim3(unsigned(blocks)), Tr::kThreads, Tr::kSmemBytes, stream>>>(a);
  }
  FB_CUDA_CHECK_LAUNCH();
}

template <typename Elem, int kHeadDim>
void run_main_tc(const MainArgs& a, TcLaunch how, cudaStream_t stream) {
  using Cfg = TcConfig<Elem, kHeadDim>;
  int dev = 0, optin = 0;
  FB_CUDA_CHECK(cudaGetDevice(&dev));
  FB_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  if (Cfg::type::kSmemBytes <= optin) {
    if constexpr (Cfg::type::kWarpGrid) {
      // The launcher (flash_bwd.cu: tail_split(), head_split(), dq_tiled()) asks for the tail split
      // (non-causal), the head split and the tiled dQ only where this kernel runs, never for the tail
      // split with the head split, and for the head split with the tiled dQ only where
      // split_dq_tiled() allows it.
      if (how.tail) {
        if (a.mask.causal || a.head_split < 2)
          throw std::logic_error("flash backward: tail split on a causal grid or without its count");
        if (how.dq_tiled) {
          launch_main_tc<typename Cfg::tail_dq_tiled>(a, stream);
          return;
        }
        launch_main_tc<typename Cfg::tail>(a, stream);
        return;
      }
      if (a.head_split > 1) {
        if (how.dq_tiled) {
          launch_main_tc<typename Cfg::split_dq_tiled>(a, stream);
        } else {
          launch_main_tc<typename Cfg::split>(a, stream);
        }
        return;
      }
      if (how.dq_tiled) {
        if (how.descend && a.head_split <= 1) {  // kDescend's walk (flash_bwd.cu descend_walk())
          if (a.mask.causal) {
            launch_main_tc<typename Cfg::desc_dq_tiled>(a, stream);
          } else {
            launch_main_tc<typename Cfg::noncausal_desc_dq_tiled>(a, stream);
          }
          return;
        }
        if (a.mask.causal) {
          launch_main_tc<typename Cfg::dq_tiled>(a, stream);
        } else {
          launch_main_tc<typename Cfg::noncausal_dq_tiled>(a, stream);
        }
        return;
      }
      switch (grid_variant()) {
        case GridVariant::lean: launch_main_tc<typename Cfg::lean>(a, stream); return;
        case GridVariant::standard:
        case GridVariant::tail:
        case GridVariant::notail:
        case GridVariant::dqrows:
        case GridVariant::splitrows:
        case GridVariant::cap8:
        case GridVariant::desc2:
        case GridVariant::nodesc2:
        case GridVariant::headmajor:
        case GridVariant::nosubwave: break;
      }
      if (!a.mask.causal) {
        launch_main_tc<typename Cfg::noncausal>(a, stream);
        return;
      }
    }
    launch_main_tc<typename Cfg::type>(a, stream);
  } else {
    if (a.head_split > 1 || how.tail || how.dq_tiled)
      throw std::logic_error("flash backward: head split, tail split or tiled dQ without their kernel");
    launch_main_tc<typename Cfg::fallback>(a, stream);
  }
}

}  // namespace fb::cuda::flash::bwd
