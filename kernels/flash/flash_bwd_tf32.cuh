// Flash backward main kernel for fp32 on TF32 tensor cores (mma.sync m16n8k8, sm_80+), with the
// 3xTF32 split (Fp32Math::tf32x3: every product hi*hi + hi*lo + lo*hi, fp32-level accuracy) or without
// it (tf32x1, the diagnostic). See flash_fwd_tf32.cuh for the split and the fragment layouts.
//
// The decomposition is the 16-bit kernel's (flash_bwd_tc.cuh): one block per (batch, K/V head, tile of
// kBlockN keys), warp w owns keys [16w, 16w + 16); per query tile of kBlockM rows
//   S^T  = K Q^T, dP^T = V dO^T        A = K / V (ldmatrix), B = Q / dO (ldmatrix: [query][d] rows)
//   P^T  = exp2(S^T scale log2e - LSE log2e), dS^T = P^T o (dP^T - D)
//   dV  += P^T dO, dK += dS^T Q         k = queries in the permuted order (k = t -> query 2t, t + 4 ->
//                                       2t + 1), so the accumulator registers are the A fragment; B =
//                                       dO / Q read as scalars in the same order (rows 2t, 2t + 1,
//                                       column g)
//   dQ  += scale dS K                   dS through shared memory as [query][key] with the keys of each
//                                       8-block stored in the permuted order, so that ldmatrix hands out
//                                       the A fragment of the permuted k step; B = K scalars (rows 2t,
//                                       2t + 1), then fp32 atomics as in the 16-bit kernel.
// Nothing accumulates inside the tensor core for long (it truncates): dK and dV join their fp32
// registers once per query tile (a fresh tensor-core sum over kBlockM queries, then an fp32 add); S^T,
// dP^T and this block's dQ share are summed in chunks of kChunkSteps k8 steps (one) added in fp32.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/check.h"
#include "common/mask.h"
#include "common/ptx.cuh"
#include "flash/flash_bwd_common.cuh"
#include "flash/flash_bwd_tc.cuh"  // detail::load_rows, detail::atomic_add4
#include "flash/flash_fwd_tf32.cuh"  // mma_tf32, tf32_parts
#include "flash/fp32_math.h"
#include "common/softmax.cuh"

namespace fb::cuda::flash::bwd {

// Tile configuration: kBlockN keys per block (16 per warp), kBlockM queries per main-loop step,
// kChunkSteps k8 steps per tensor-core partial sum, kMinBlocks for __launch_bounds__.
template <int kHeadDim_, int kBlockN_, int kBlockM_, int kChunkSteps_, int kMinBlocks_>
struct Tf32BwdTraits {
  using Elem = float;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockN = kBlockN_;
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kChunkSteps = kChunkSteps_;
  static constexpr int kMinBlocks = kMinBlocks_;

  static constexpr int kMmaM = 16;  // mma.m16n8k8 (TF32)
  static constexpr int kMmaN = 8;
  static constexpr int kMmaK = 8;
  static constexpr int kWarps = kBlockN / kMmaM;
  static constexpr int kThreads = 32 * kWarps;

  // 4 floats (16 bytes) of padding per shared row: a row stride of 4 mod 32 floats keeps ldmatrix
  // conflict-free (odd 16-byte chunks) and spreads the scalar B reads (rows 2t, columns g) over 32
  // banks; the dS stores (rows 2t + e, 8 key columns) as well.
  static constexpr int kPad = 4;
  static constexpr int kRowStride = kHeadDim + kPad;  // sK, sV, sQ, sdO rows
  static constexpr int kDsStride = kBlockN + kPad;    // sdS rows (queries x keys)
  static constexpr int kVecElems = 4;                 // floats per 16-byte copy
  static constexpr int kVecsPerRow = kHeadDim / kVecElems;

  static constexpr int kQKSteps = kHeadDim / kMmaK;  // k8 steps of S^T, dP^T (over d)
  static constexpr int kMSteps = kBlockM / kMmaK;    // k8 steps of dV, dK (over queries)
  static constexpr int kNSteps = kBlockN / kMmaK;    // k8 steps of dQ (over keys)

  // dQ = dS K: warps tile the (kBlockM x kHeadDim) output as kDqWarpsM x kDqWarpsN.
  static constexpr int kDqWarpsM = kBlockM / kMmaM;
  static constexpr int kDqWarpsN = kWarps / kDqWarpsM;
  static constexpr int kDqCols = kHeadDim / kDqWarpsN;

  // Shared memory, bytes.
  static constexpr int kKvTileBytes = kBlockN * kRowStride * 4;
  static constexpr int kQTileBytes = kBlockM * kRowStride * 4;
  static constexpr int kOffK = 0;
  static constexpr int kOffV = kOffK + kKvTileBytes;
  static constexpr int kOffQ = kOffV + kKvTileBytes;      // 2 buffers
  static constexpr int kOffDo = kOffQ + 2 * kQTileBytes;  // 2 buffers
  static constexpr int kOffDs = kOffDo + 2 * kQTileBytes;
  static constexpr int kOffLse = kOffDs + kBlockM * kDsStride * 4;  // 2 buffers
  static constexpr int kOffD = kOffLse + 2 * kBlockM * 4;          // 2 buffers
  static constexpr int kSmemBytes = kOffD + 2 * kBlockM * 4;

  static_assert(kHeadDim % (2 * kMmaN) == 0, "head_dim: whole pairs of n8 tiles");
  static_assert(kBlockN % kMmaM == 0 && kWarps >= 1, "kBlockN: 16 keys per warp");
  static_assert(kSeqPadMultiple % kBlockM == 0, "LSE/D tiles stay inside the padded rows");
  static_assert(kBlockM % (2 * kMmaN) == 0, "one ldmatrix.x4 of Q / dO feeds two n8 query tiles");
  static_assert(kQKSteps % kChunkSteps == 0 && kNSteps % kChunkSteps == 0, "whole chunks");
  static_assert(kWarps % kDqWarpsM == 0 && kDqWarpsN >= 1, "dQ warp grid");
  static_assert(kDqCols % (2 * kMmaN) == 0, "dQ warp columns: pairs of n8 tiles");
  static_assert(kRowStride % 32 == 4 && kDsStride % 32 == 4, "bank spread (see kPad)");
  static_assert(kBlockM * 4 / 16 * 2 <= kThreads, "one thread per 16-byte LSE/D copy");
  static_assert(kOffQ % 16 == 0 && kOffDo % 16 == 0 && kOffDs % 16 == 0 && kOffLse % 16 == 0,
                "16-byte aligned shared tiles");
};

namespace detail {

// Column of key k (0..7) of an 8-key block in the dS tile: keys 2t and 2t + 1 at columns t and t + 4,
// so that ldmatrix's k = t, t + 4 are the permuted k step's keys.
__device__ __forceinline__ int permuted_key_column(int k) { return k / 2 + 4 * (k % 2); }

// dst += part (four accumulator registers), in fp32 with round to nearest.
__device__ __forceinline__ void add4(float (&dst)[4], const float (&part)[4]) {
#pragma unroll
  for (int e = 0; e < 4; ++e) dst[e] += part[e];
}

}  // namespace detail

template <typename Tr, Fp32Math kMath>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinBlocks)
    bwd_main_tf32_kernel(const MainArgs a) {
  static_assert(kMath == Fp32Math::tf32x3 || kMath == Fp32Math::tf32x1, "tensor-core modes only");
  constexpr bool kSplit = kMath == Fp32Math::tf32x3;
  constexpr int D = Tr::kHeadDim;
  constexpr int kNTilesD = D / Tr::kMmaN;         // n8 tiles across head_dim
  constexpr int kNTilesM = Tr::kBlockM / Tr::kMmaN;  // n8 tiles across the query tile
  constexpr int kDqNTiles = Tr::kDqCols / Tr::kMmaN;
  constexpr int kRS = Tr::kRowStride;

  extern __shared__ __align__(16) unsigned char smem[];
  float* sK = reinterpret_cast<float*>(smem + Tr::kOffK);    // (kBlockN, kRowStride)
  float* sV = reinterpret_cast<float*>(smem + Tr::kOffV);    // (kBlockN, kRowStride)
  float* sQ = reinterpret_cast<float*>(smem + Tr::kOffQ);    // 2 x (kBlockM, kRowStride)
  float* sDo = reinterpret_cast<float*>(smem + Tr::kOffDo);  // 2 x (kBlockM, kRowStride)
  float* sDs = reinterpret_cast<float*>(smem + Tr::kOffDs);  // (kBlockM, kDsStride): dS, keys permuted
  float* sLse = reinterpret_cast<float*>(smem + Tr::kOffLse);  // 2 x (kBlockM)
  float* sD = reinterpret_cast<float*>(smem + Tr::kOffD);      // 2 x (kBlockM)

  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int g = lane / 4;  // fragment row within an 8-row group
  const int c = lane % 4;  // fragment column pair / k index

  // Block -> (batch, K/V head, K/V tile): as the 16-bit kernel (causal tile-major, longest first).
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

  // Query tiles: causal skips those before the first row that sees key n0 (the last query row sees
  // every key, so at least one remains); otherwise each K/V tile starts at its own diagonal query
  // tile and wraps around (as the 16-bit kernel).
  const int m_tiles = (seq_q + Tr::kBlockM - 1) / Tr::kBlockM;
  const int m_begin = mask.first_q_tile(n0, Tr::kBlockM);
  const int per_head = m_tiles - m_begin;
  const int m_rot = mask.causal ? 0 : (n0 / Tr::kBlockM) % per_head;
  const int n_iters = group * per_head;

  const float* q = static_cast<const float*>(a.q);
  const float* dout = static_cast<const float*>(a.dout);
  const float* lse = static_cast<const float*>(a.lse);
  const float* dvec = static_cast<const float*>(a.d);
  const std::int64_t kv_off = (std::int64_t(bkv) * seq_k + n0) * D;

  auto head_of = [&](int it) { return hk * group + it / per_head; };
  auto mtile_of = [&](int it) { return m_begin + (m_rot + it % per_head) % per_head; };

  auto load_q_tile = [&](int it, int buf) {
    const std::int64_t bh = std::int64_t(b) * a.heads + head_of(it);
    const int m0 = mtile_of(it) * Tr::kBlockM;
    const std::int64_t q_off = (bh * seq_q + m0) * D;
    detail::load_rows<Tr>(sQ + buf * Tr::kBlockM * kRS, q + q_off, Tr::kBlockM, seq_q - m0, tid);
    detail::load_rows<Tr>(sDo + buf * Tr::kBlockM * kRS, dout + q_off, Tr::kBlockM, seq_q - m0, tid);
    constexpr int kVecs = Tr::kBlockM * 4 / 16;
    const std::int64_t row_off = bh * a.seq_pad + m0;
    if (tid < kVecs) {
      ptx::cp_async_16(sLse + buf * Tr::kBlockM + 4 * tid, lse + row_off + 4 * tid);
    } else if (tid < 2 * kVecs) {
      ptx::cp_async_16(sD + buf * Tr::kBlockM + 4 * (tid - kVecs), dvec + row_off + 4 * (tid - kVecs));
    }
  };

  detail::load_rows<Tr>(sK, static_cast<const float*>(a.k) + kv_off, Tr::kBlockN, seq_k - n0, tid);
  detail::load_rows<Tr>(sV, static_cast<const float*>(a.v) + kv_off, Tr::kBlockN, seq_k - n0, tid);
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

  // ldmatrix lane addresses (bytes in the shared window). A from K / V: this warp's 16 key rows,
  // lanes 16-31 at the second 4-float block. B from Q / dO (rows = queries): lanes 0-7 / 8-15 queries
  // 0-7 at d blocks 0 / 1, lanes 16-31 the same for queries 8-15.
  constexpr int kRowBytes = kRS * 4;
  constexpr int kKStepBytes = Tr::kMmaK * 4;
  constexpr int kQTileBytes = Tr::kQTileBytes;
  const std::uint32_t k_a = ptx::smem_addr(sK) + (warp * Tr::kMmaM + lane % 16) * kRowBytes + (lane / 16) * 16;
  const std::uint32_t v_a = ptx::smem_addr(sV) + (warp * Tr::kMmaM + lane % 16) * kRowBytes + (lane / 16) * 16;
  const int qb_row = (lane / 16) * 8 + lane % 8, qb_blk = (lane / 8) % 2;
  const std::uint32_t q_b = ptx::smem_addr(sQ) + qb_row * kRowBytes + qb_blk * 16;
  const std::uint32_t do_b = ptx::smem_addr(sDo) + qb_row * kRowBytes + qb_blk * 16;

  const int key_lo = n0 + warp * Tr::kMmaM + g;  // this thread's accumulator keys: key_lo, key_lo + 8

  for (int it = 0; it < n_iters; ++it) {
    const int buf = it & 1;
    if (it + 1 < n_iters) load_q_tile(it + 1, buf ^ 1);
    ptx::cp_async_commit();
    ptx::cp_async_wait<1>();
    __syncthreads();

    const int m0 = mtile_of(it) * Tr::kBlockM;
    const bool need_mask = mask.tile_needs_mask(m0, n0, Tr::kBlockN);
    const float* sQb = sQ + buf * Tr::kBlockM * kRS;
    const float* sDob = sDo + buf * Tr::kBlockM * kRS;
    const float* sLseb = sLse + buf * Tr::kBlockM;
    const float* sDb = sD + buf * Tr::kBlockM;

    // ---- S^T = K Q^T and dP^T = V dO^T: (16 keys, kBlockM queries) per warp ----
    float acc_s[kNTilesM][4], acc_dp[kNTilesM][4];
#pragma unroll
    for (int j = 0; j < kNTilesM; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_s[j][e] = acc_dp[j][e] = 0.f;
    // Unrolled by 2 only: fully unrolled, ptxas hoists later chunks' ldmatrix and spills.
#pragma unroll 2
    for (int ch = 0; ch < Tr::kQKSteps; ch += Tr::kChunkSteps) {
      float part_s[kNTilesM][4], part_dp[kNTilesM][4];
#pragma unroll
      for (int j = 0; j < kNTilesM; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) part_s[j][e] = part_dp[j][e] = 0.f;
#pragma unroll
      for (int ks = ch; ks < ch + Tr::kChunkSteps; ++ks) {
        std::uint32_t raw[4], ak_hi[4], ak_lo[4], av_hi[4], av_lo[4];
        ptx::ldmatrix_x4(raw, k_a + ks * kKStepBytes);
        tf32_parts_bits<kSplit>(raw, ak_hi, ak_lo);
        ptx::ldmatrix_x4(raw, v_a + ks * kKStepBytes);
        tf32_parts_bits<kSplit>(raw, av_hi, av_lo);
#pragma unroll
        for (int j = 0; j < kNTilesM; j += 2) {
          const std::uint32_t off = buf * kQTileBytes + j * Tr::kMmaN * kRowBytes + ks * kKStepBytes;
          std::uint32_t bq_hi[4], bq_lo[4], bo_hi[4], bo_lo[4];
          ptx::ldmatrix_x4(raw, q_b + off);
          tf32_parts_bits<kSplit>(raw, bq_hi, bq_lo);
          ptx::ldmatrix_x4(raw, do_b + off);
          tf32_parts_bits<kSplit>(raw, bo_hi, bo_lo);
          mma_tf32<kSplit>(part_s[j], ak_hi, ak_lo, {bq_hi[0], bq_hi[1]}, {bq_lo[0], bq_lo[1]});
          mma_tf32<kSplit>(part_s[j + 1], ak_hi, ak_lo, {bq_hi[2], bq_hi[3]}, {bq_lo[2], bq_lo[3]});
          mma_tf32<kSplit>(part_dp[j], av_hi, av_lo, {bo_hi[0], bo_hi[1]}, {bo_lo[0], bo_lo[1]});
          mma_tf32<kSplit>(part_dp[j + 1], av_hi, av_lo, {bo_hi[2], bo_hi[3]}, {bo_lo[2], bo_lo[3]});
        }
      }
#pragma unroll
      for (int j = 0; j < kNTilesM; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          acc_s[j][e] += part_s[j][e];
          acc_dp[j][e] += part_dp[j][e];
        }
    }

    // ---- P^T = exp2(S^T * scale*log2e - LSE*log2e); dS^T = P^T o (dP^T - D) ----
#pragma unroll
    for (int j = 0; j < kNTilesM; ++j) {
      const int ql = j * Tr::kMmaN + 2 * c;  // local query of elements 0 and 2
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

    // dS to shared memory as [query][key], keys of each 8-block in the permuted column order.
    {
      const int col_lo = warp * Tr::kMmaM + detail::permuted_key_column(g);  // key g of the block
#pragma unroll
      for (int j = 0; j < kNTilesM; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int ql = j * Tr::kMmaN + 2 * c + (e % 2);
          sDs[ql * Tr::kDsStride + col_lo + (e / 2) * 8] = acc_dp[j][e];
        }
    }

    // ---- dV += P^T dO and dK += dS^T Q (k = queries, permuted: k = t -> 2t, t + 4 -> 2t + 1) ----
    {
      std::uint32_t pa_hi[Tr::kMSteps][4], pa_lo[Tr::kMSteps][4];
      std::uint32_t da_hi[Tr::kMSteps][4], da_lo[Tr::kMSteps][4];
#pragma unroll
      for (int s = 0; s < Tr::kMSteps; ++s) {
        const float xp[4] = {acc_s[s][0], acc_s[s][2], acc_s[s][1], acc_s[s][3]};
        const float xd[4] = {acc_dp[s][0], acc_dp[s][2], acc_dp[s][1], acc_dp[s][3]};
        tf32_parts<kSplit>(xp, pa_hi[s], pa_lo[s]);
        tf32_parts<kSplit>(xd, da_hi[s], da_lo[s]);
      }
      // Per n8 tile of d: a fresh tensor-core sum over the tile's queries, added in fp32.
#pragma unroll
      for (int nt = 0; nt < kNTilesD; ++nt) {
        float part_v[4] = {0.f, 0.f, 0.f, 0.f}, part_k[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int s = 0; s < Tr::kMSteps; ++s) {
          const int off = (s * Tr::kMmaK + 2 * c) * kRS + nt * Tr::kMmaN + g;
          const float xo[2] = {sDob[off], sDob[off + kRS]};  // queries 8s + 2c, 8s + 2c + 1
          const float xq[2] = {sQb[off], sQb[off + kRS]};
          std::uint32_t bo_hi[2], bo_lo[2], bq_hi[2], bq_lo[2];
          tf32_parts<kSplit>(xo, bo_hi, bo_lo);
          tf32_parts<kSplit>(xq, bq_hi, bq_lo);
          mma_tf32<kSplit>(part_v, pa_hi[s], pa_lo[s], bo_hi, bo_lo);
          mma_tf32<kSplit>(part_k, da_hi[s], da_lo[s], bq_hi, bq_lo);
        }
        detail::add4(acc_dv[nt], part_v);
        detail::add4(acc_dk[nt], part_k);
      }
    }
    __syncthreads();  // every warp's dS is in sDs

    // ---- dQ share = scale * dS K: (kBlockM, D) over the kDqWarpsM x kDqWarpsN warp grid ----
    {
      const int wm = warp % Tr::kDqWarpsM;
      const int wn = warp / Tr::kDqWarpsM;
      // A = dS (m = queries, k = keys in the permuted order): ldmatrix rows = this warp's 16 queries.
      const std::uint32_t ds_a = ptx::smem_addr(sDs) +
                                 ((wm * Tr::kMmaM + lane % 16) * Tr::kDsStride + (lane / 16) * 4) * 4;
      // B = K (k = keys 2t, 2t + 1 of the block, n = d column g).
      const float* k_b = sK + (2 * c) * kRS + wn * Tr::kDqCols + g;
      float acc_dq[kDqNTiles][4];
#pragma unroll
      for (int j = 0; j < kDqNTiles; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_dq[j][e] = 0.f;
#pragma unroll 2
      for (int ch = 0; ch < Tr::kNSteps; ch += Tr::kChunkSteps) {
        float part[kDqNTiles][4];
#pragma unroll
        for (int j = 0; j < kDqNTiles; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) part[j][e] = 0.f;
#pragma unroll
        for (int kk = ch; kk < ch + Tr::kChunkSteps; ++kk) {
          std::uint32_t raw[4], ad_hi[4], ad_lo[4];
          ptx::ldmatrix_x4(raw, ds_a + kk * kKStepBytes);
          tf32_parts_bits<kSplit>(raw, ad_hi, ad_lo);
#pragma unroll
          for (int j = 0; j < kDqNTiles; ++j) {
            const float* kp = k_b + kk * Tr::kMmaK * kRS + j * Tr::kMmaN;
            const float xk[2] = {kp[0], kp[kRS]};
            std::uint32_t bk_hi[2], bk_lo[2];
            tf32_parts<kSplit>(xk, bk_hi, bk_lo);
            mma_tf32<kSplit>(part[j], ad_hi, ad_lo, bk_hi, bk_lo);
          }
        }
#pragma unroll
        for (int j = 0; j < kDqNTiles; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc_dq[j][e] += part[j][e];
      }
      // Lanes c and c^1 swap halves so each holds 4 consecutive columns of one row (as the 16-bit
      // kernel): one 16-byte reduction per lane and n8 tile.
      const bool odd = c & 1;
      const int row = m0 + wm * Tr::kMmaM + g + (odd ? 8 : 0);
      const std::int64_t bh = std::int64_t(b) * a.heads + head_of(it);
      float* dq_row = static_cast<float*>(a.dq_acc) + (bh * seq_q + row) * D + wn * Tr::kDqCols +
                      2 * (c & ~1);
#pragma unroll
      for (int j = 0; j < kDqNTiles; ++j) {
        const float send0 = odd ? acc_dq[j][0] : acc_dq[j][2];
        const float send1 = odd ? acc_dq[j][1] : acc_dq[j][3];
        const float recv0 = __shfl_xor_sync(kFullWarp, send0, 1);
        const float recv1 = __shfl_xor_sync(kFullWarp, send1, 1);
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

  // dK (times scale) and dV through shared memory (each warp its own 16 rows of sK / sV, once all
  // warps are done reading sK) for 16-byte coalesced stores.
  ptx::cp_async_wait<0>();
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kNTilesD; ++j) {
    const int col = j * Tr::kMmaN + 2 * c;
    const int r = warp * Tr::kMmaM + g;
    *reinterpret_cast<float2*>(sK + r * kRS + col) = make_float2(scale * acc_dk[j][0], scale * acc_dk[j][1]);
    *reinterpret_cast<float2*>(sK + (r + 8) * kRS + col) =
        make_float2(scale * acc_dk[j][2], scale * acc_dk[j][3]);
    *reinterpret_cast<float2*>(sV + r * kRS + col) = make_float2(acc_dv[j][0], acc_dv[j][1]);
    *reinterpret_cast<float2*>(sV + (r + 8) * kRS + col) = make_float2(acc_dv[j][2], acc_dv[j][3]);
  }
  __syncthreads();
  float* dk = static_cast<float*>(a.dk) + kv_off;
  float* dv = static_cast<float*>(a.dv) + kv_off;
  for (int i = tid; i < Tr::kBlockN * Tr::kVecsPerRow; i += Tr::kThreads) {
    const int r = i / Tr::kVecsPerRow;
    const int col = (i % Tr::kVecsPerRow) * Tr::kVecElems;
    if (n0 + r < seq_k) {
      *reinterpret_cast<float4*>(dk + std::int64_t(r) * D + col) =
          *reinterpret_cast<const float4*>(sK + r * kRS + col);
      *reinterpret_cast<float4*>(dv + std::int64_t(r) * D + col) =
          *reinterpret_cast<const float4*>(sV + r * kRS + col);
    }
  }
}

// Tiles per head_dim, chosen to fit the A100's 164 KB of shared memory as well as the H100's (fp32
// tiles take twice the bytes of the 16-bit ones) and to keep spills small: 64 keys (4 warps) at d = 128
// and 32, 128 keys (8 warps) at d = 64; 32 queries per step, 16 at d = 128 (dK and dV alone hold 128
// registers a thread there: ptxas spilled 164 bytes with 32 queries, 36 with 16). S^T, dP^T and dQ
// added in fp32 after every k8 step. Not tuned on a GPU yet.
template <int kHeadDim> struct Tf32BwdConfig;
template <> struct Tf32BwdConfig<128> { using type = Tf32BwdTraits<128, 64, 16, 1, 1>; };
template <> struct Tf32BwdConfig<64> { using type = Tf32BwdTraits<64, 128, 32, 1, 1>; };
template <> struct Tf32BwdConfig<32> { using type = Tf32BwdTraits<32, 64, 32, 1, 1>; };

template <int kHeadDim> int main_tf32_smem_bytes() { return Tf32BwdConfig<kHeadDim>::type::kSmemBytes; }
template <int kHeadDim> int main_tf32_key_tile() { return Tf32BwdConfig<kHeadDim>::type::kBlockN; }

template <int kHeadDim, Fp32Math kMath> void run_main_tf32(const MainArgs& a, cudaStream_t stream) {
  using Tr = typename Tf32BwdConfig<kHeadDim>::type;
  const void* kernel = reinterpret_cast<const void*>(&bwd_main_tf32_kernel<Tr, kMath>);
  set_smem_limit(kernel, Tr::kSmemBytes);
  const std::int64_t blocks =
      std::int64_t((a.mask.seq_k + Tr::kBlockN - 1) / Tr::kBlockN) * a.batch * a.kv_heads;
  bwd_main_tf32_kernel<Tr, kMath><<<dim3(unsigned(blocks)), Tr::kThreads, Tr::kSmemBytes, stream>>>(a);
  FB_CUDA_CHECK_LAUNCH();
}

}  // namespace fb::cuda::flash::bwd
