// Split-KV decode (flash-decoding), fp16/bf16, mma.sync (sm_80+).
//
// Split kernel: grid (batch x K/V head, KV split, row chunk). A CTA streams its split's keys through a
// cp.async ring of kStages K/V tiles and applies each tile to all kRows query rows it holds (every
// query head of the GQA group, every query position): K and V are read from HBM once. On sm_90a the
// ring may instead be filled by TMA (kTma: 2-D boxes, 128-byte swizzle; an A/B option, flash_decode.h).
//   S = Q K^T        Q (A) and K (B) via ldmatrix from shared memory
//   online softmax   in registers, base 2 (p = exp2(s * scale*log2(e) - m))
//   O += P V         P re-packed to 16 bits as the A operand, V via ldmatrix.trans
// Warps split the rows, or (few rows) the keys of each tile; key groups merge through shared memory.
// With one split the CTA writes O and LSE; with more it writes a partial O (fp32, normalised by its
// own sum) and its LSE, and the combine kernel merges the splits exactly:
//   L = max_s LSE_s,  w_s = exp(LSE_s - L),  O = sum_s w_s O_s / sum_s w_s,  LSE = L + log sum_s w_s
// A split (or a row) that sees no key has LSE_s = -inf, weight 0; a row that sees no key in any split
// gets O = 0, LSE = -inf (attention.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include <cuda.h>  // CUtensorMap (a type only)
#include <cuda_runtime.h>

#include "common/mma_pv.cuh"
#include "common/pdl.cuh"
#include "common/ptx.cuh"
#include "common/ptx_sm90.cuh"
#include "common/softmax.cuh"
#include "common/splitkv.h"
#include "flash_decode/flash_decode_traits.h"

namespace fb::cuda::decode {

template <typename Elem> struct DecodeArgs {
  const Elem* q;    // [batch, heads, seq_q, D]: the rows of one (batch, K/V head) are contiguous
  const Elem* k;    // [batch, kv_heads, seq_k, D]
  const Elem* v;
  Elem* o;          // [batch, heads, seq_q, D]
  float* lse;       // [batch, heads, seq_q], natural log
  float* part_o;    // [splits, total_rows, D] (splits > 1)
  float* part_lse;  // [splits, total_rows]
  long long total_rows;  // batch * heads * seq_q
  int rows;              // query rows per (batch, K/V head): group * seq_q
  CausalMask mask;
  SplitPlan plan;
  float scale_log2;  // softmax scale * log2(e)
  // Stream-K (stream_keys > 0): keys a CTA takes of the kv_planes * seq_k (K/V head, key) pairs; the
  // partial slots of a head are its pieces (stream_pieces), a.plan is unused.
  long long kv_planes = 0;  // batch * kv_heads
  long long stream_keys = 0;
  int rotate = 0;  // FB_DECODE_ROTATE: each item's tiles in a rotated order (split_item)
  // The TMA ring only: K and V as (d, seq_k, batch * kv_heads), boxes (64, kBc, 1), 128-byte swizzle.
  CUtensorMap tm_k;
  CUtensorMap tm_v;
};

// Stream-K: the CTAs whose key ranges meet K/V head `bkv`'s keys, first .. first + count - 1; CTA
// first + j writes the head's partial slot j (count == 1: the one CTA writes O and LSE itself).
struct StreamPieces {
  long long first;
  int count;
};
__host__ __device__ __forceinline__ StreamPieces stream_pieces(long long bkv, int seq_k, long long keys_per_cta) {
  const long long first = bkv * seq_k / keys_per_cta;
  const long long last = ((bkv + 1) * seq_k - 1) / keys_per_cta;
  return {first, int(last - first + 1)};
}

// One 16-byte cp.async of the K/V ring (zero-filled when !valid) with the L2 hint of FB_DECODE_L2
// (flash_decode.h): a prefetch size, optionally under an evict-first policy.
template <L2Hint kL2>
__device__ __forceinline__ void cp_async_kv(void* smem_dst, const void* gmem_src, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  const std::uint32_t dst = ptx::smem_addr(smem_dst);
  if constexpr (kL2 == L2Hint::p128) {
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem_src), "r"(src_bytes));
  } else if constexpr (kL2 == L2Hint::p256) {
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem_src), "r"(src_bytes));
  } else if constexpr (kL2 == L2Hint::evict256) {
    std::uint64_t policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
    asm volatile("cp.async.cg.shared.global.L2::cache_hint.L2::256B [%0], [%1], 16, %2, %3;\n" ::"r"(dst),
                 "l"(gmem_src), "r"(src_bytes), "l"(policy));
  } else {
    ptx::cp_async_16_zfill(smem_dst, gmem_src, valid);
  }
}

// Rows [0, kRows) of a (kRows, D) tile from global (row stride D) into shared (row stride
// kRowStride); rows >= rows_valid are zero-filled and never read from global. Issued by kIssuers
// threads, `idx` being this thread's index among them (the CTA's threads, or one warp's lanes).
template <typename Tr, int kRows, int kIssuers = Tr::kThreads, L2Hint kL2 = L2Hint::none>
__device__ __forceinline__ void load_rows_async(typename Tr::Elem* smem, const typename Tr::Elem* gmem,
                                                int rows_valid, int idx) {
  constexpr int kChunks = kRows * Tr::kRowChunks;
#pragma unroll
  for (int c = idx; c < kChunks; c += kIssuers) {
    const int row = c / Tr::kRowChunks;
    const int col = (c % Tr::kRowChunks) * Tr::kChunkElems;
    const bool valid = row < rows_valid;
    const auto* src = gmem + (valid ? std::int64_t(row) * Tr::kHeadDim + col : 0);
    cp_async_kv<kL2>(smem + row * Tr::kRowStride + col, src, valid);
  }
}

// The TMA ring's barrier and copy operations under names every device pass has: bodies only for sm_90a,
// the one pass that runs a kTma kernel (elsewhere such a kernel traps at its start).
namespace tma {
__device__ __forceinline__ void init(std::uint32_t bar) {
#if FB_PTX_SM90A
  ptx::mbar_init(bar, 1);
#endif
}
__device__ __forceinline__ void fence_init() {
#if FB_PTX_SM90A
  ptx::fence_mbar_init();
#endif
}
__device__ __forceinline__ void expect(std::uint32_t bar, std::uint32_t bytes) {
#if FB_PTX_SM90A
  ptx::mbar_arrive_expect_tx(bar, bytes);
#endif
}
__device__ __forceinline__ void load(std::uint32_t dst, const CUtensorMap* map, std::uint32_t bar, int col, int row,
                                     int plane) {
#if FB_PTX_SM90A
  ptx::tma_load_3d(dst, map, bar, col, row, plane);
#endif
}
__device__ __forceinline__ void wait(std::uint32_t bar, std::uint32_t parity) {
#if FB_PTX_SM90A
  ptx::mbar_wait(bar, parity);
#endif
}
}  // namespace tma

// One work item of the split kernel: keys [k_lo, k_hi) of K/V head `bkv` (batch * kv_heads + head)
// against its query rows r0 .. r0 + kRows (r0 from blockIdx.z), from the pipeline's prologue to the
// merge of the key groups; the result goes to O and LSE (slot < 0) or to partial slot `slot`.
// kTma: the K/V ring is filled by TMA (one thread issues each tile's boxes; swizzled, unpadded rows) and
// read with swizzled ldmatrix addresses; else by every thread's cp.async into padded rows.
template <typename Tr, bool kTma, bool kWarpRing, L2Hint kL2>
__device__ __forceinline__ void split_item(const DecodeArgs<typename Tr::Elem>& a, unsigned char* smem_raw,
                                           long long bkv, int k_lo, int k_hi, int slot) {
  using Elem = typename Tr::Elem;
  constexpr int D = Tr::kHeadDim;
  constexpr int RT = Tr::kRowTiles;
  constexpr int Bc = Tr::kBc;
  constexpr float kNegInf = -INFINITY;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;  // m16n8 accumulator: rows g, g + 8; columns 2t, 2t + 1
  const int wk = warp % Tr::kKeyGroups;  // which keys of each tile this warp takes
  const int wr = warp / Tr::kKeyGroups;  // which rows
  const int r0 = blockIdx.z * Tr::kRows;
  const int seq_k = a.mask.seq_k, seq_q = a.mask.seq_q;
  const int n_tiles = (k_hi - k_lo + Bc - 1) / Bc;  // 0 for a split past the keys

  const Elem* gQ = a.q + (bkv * a.rows + r0) * D;
  const Elem* gK = a.k + (bkv * seq_k + k_lo) * D;
  const Elem* gV = a.v + (bkv * seq_k + k_lo) * D;
  Elem* sQ = reinterpret_cast<Elem*>(smem_raw);  // (kRows, D)
  // TMA: the ring on the next 1024-byte boundary after Q (stage s: K's boxes, then V's), then barriers.
  const std::uint32_t ring_off =
      kTma ? ((ptx::smem_addr(smem_raw) + std::uint32_t(Tr::kQBytes) + 1023u) & ~1023u) - ptx::smem_addr(smem_raw)
           : std::uint32_t(Tr::kQBytes);
  Elem* sK = reinterpret_cast<Elem*>(smem_raw + ring_off);  // kStages x (Bc, D); TMA: merge space only
  Elem* sV = sK + Tr::kStages * Tr::kKVTileElems;            // kStages x (Bc, D) (cp.async ring)
  const std::uint32_t ring = ptx::smem_addr(smem_raw) + ring_off;
  const std::uint32_t bar0 = ring + std::uint32_t(Tr::kTmaBarOffset);

  const int warp_key0 = wk * Tr::kWarpKeys;  // first key of this warp within a tile
  // FB_DECODE_ROTATE (a.rotate): the item's tiles run in the order rot, rot + 1, .., n_tiles - 1, 0, ..,
  // rot - 1, rot a hash of the item (softmax and the masks do not depend on the order): CTAs that start
  // together then read at scattered offsets of their K/V ranges, not at the same offset of ranges a
  // power of two apart. `tile` below is the position in the ring, phys(tile) the tile of the keys.
  const int rot = a.rotate && n_tiles > 1
                      ? int(((unsigned(bkv) * 64u + unsigned(k_lo / Bc)) * 2654435761u >> 8) % unsigned(n_tiles))
                      : 0;
  auto phys = [&](int tile) { return tile + rot < n_tiles ? tile + rot : tile + rot - n_tiles; };
  auto load_kv = [&](int tile) {
    const int stage = tile % Tr::kStages;
    const int pt = phys(tile);
    if constexpr (kWarpRing) {  // this warp's kWarpKeys rows of the tile, by its lanes
      const std::int64_t off = (std::int64_t(pt) * Bc + warp_key0) * D;
      const int valid = k_hi - (k_lo + pt * Bc + warp_key0);
      const int soff = stage * Tr::kKVTileElems + warp_key0 * Tr::kRowStride;
      load_rows_async<Tr, Tr::kWarpKeys, 32, kL2>(sK + soff, gK + off, valid, lane);
      load_rows_async<Tr, Tr::kWarpKeys, 32, kL2>(sV + soff, gV + off, valid, lane);
    } else {
      const std::int64_t off = std::int64_t(pt) * Bc * D;
      const int valid = k_hi - (k_lo + pt * Bc);
      load_rows_async<Tr, Bc, Tr::kThreads, kL2>(sK + stage * Tr::kKVTileElems, gK + off, valid, tid);
      load_rows_async<Tr, Bc, Tr::kThreads, kL2>(sV + stage * Tr::kKVTileElems, gV + off, valid, tid);
    }
  };
  // TMA: thread 0 issues a tile's K and V boxes on its stage's barrier. Rows past seq_k read as zeros;
  // rows past the split's end but inside seq_k are real keys, masked like any key past key_lim.
  const int plane = int(bkv);
  auto issue_tma = [&](int tile) {
    const int stage = tile % Tr::kStages;
    const std::uint32_t bar = bar0 + stage * 8;
    const std::uint32_t k_dst = ring + std::uint32_t(stage * 2 * Tr::kTmaTileBytes);
    const std::uint32_t v_dst = k_dst + std::uint32_t(Tr::kTmaTileBytes);
    tma::expect(bar, std::uint32_t(2 * Tr::kTmaTileBytes));
    const int row = k_lo + phys(tile) * Bc;
#pragma unroll
    for (int b = 0; b < Tr::kBoxes; ++b) {
      tma::load(k_dst + std::uint32_t(b * Tr::kBoxBytes), &a.tm_k, bar, b * Tr::kBoxCols, row, plane);
      tma::load(v_dst + std::uint32_t(b * Tr::kBoxBytes), &a.tm_v, bar, b * Tr::kBoxCols, row, plane);
    }
  };

  // Prologue. cp.async: group 0 = Q and tile 0, groups 1 .. kStages - 2 = the next tiles (possibly
  // empty groups, so that every thread counts the same groups). TMA: barriers set up, tiles
  // 0 .. kStages - 2 issued, Q (cp.async) waited for before the loop's first block barrier.
  if constexpr (kTma) {
    if (tid == 0) {
#pragma unroll
      for (int s = 0; s < Tr::kStages; ++s) tma::init(bar0 + s * 8);
      tma::fence_init();
    }
    __syncthreads();
    if (tid == 0) {
#pragma unroll 1
      for (int s = 0; s < Tr::kStages - 1 && s < n_tiles; ++s) issue_tma(s);
    }
    load_rows_async<Tr, Tr::kRows>(sQ, gQ, a.rows - r0, tid);
    ptx::cp_async_commit();
    ptx::cp_async_wait<0>();
  } else {
    load_rows_async<Tr, Tr::kRows>(sQ, gQ, a.rows - r0, tid);
#pragma unroll
    for (int s = 0; s < Tr::kStages - 1; ++s) {
      if (s < n_tiles) load_kv(s);
      ptx::cp_async_commit();
    }
  }

  // ldmatrix row addresses of this lane (as in the flash forward): A from Q, B from K, B^T from V.
  const int a_row = lane % 16, a_col = (lane / 16) * 8;
  const int k_row = (lane / 16) * 8 + lane % 8, k_col = ((lane / 8) % 2) * 8;
  const int v_row = ((lane / 8) % 2) * 8 + lane % 8, v_col = (lane / 16) * 8;
  constexpr int kEB = sizeof(Elem);
  constexpr int kRowBytes = Tr::kRowStride * kEB;
  constexpr int kKVTileBytes = Tr::kKVTileElems * kEB;
  const int warp_row0 = wr * Tr::kWarpRows;  // first CTA row of this warp
  const std::uint32_t q_lane = ptx::smem_addr(sQ) + (warp_row0 + a_row) * kRowBytes + a_col * kEB;
  const std::uint32_t k_lane = ptx::smem_addr(sK) + (warp_key0 + k_row) * kRowBytes + k_col * kEB;
  const std::uint32_t v_lane = ptx::smem_addr(sV) + (warp_key0 + v_row) * kRowBytes + v_col * kEB;
  // TMA ring: rows of a box are 128 bytes, and 16-byte chunk c of row r sits at chunk c ^ (r % 8). Every
  // row this lane addresses is lane % 8 modulo 8, and the chunk it adds (K: (lane / 8) % 2, V: lane / 16)
  // to an even chunk index never carries, so the XOR is one per-lane constant.
  const std::uint32_t k_lane_t = ring + (warp_key0 + k_row) * 128;
  const std::uint32_t v_lane_t = ring + std::uint32_t(Tr::kTmaTileBytes) + (warp_key0 + v_row) * 128;
  const std::uint32_t k_x = std::uint32_t(((lane / 8) % 2) ^ (lane % 8));
  const std::uint32_t v_x = std::uint32_t((lane / 16) ^ (lane % 8));

  // The keys each of this lane's rows sees in this split: [k_lo, key_lim). A row's query position
  // is its index modulo seq_q (rows run over heads, then positions); rows past the end see none.
  int key_lim[RT][2];
#pragma unroll
  for (int mt = 0; mt < RT; ++mt)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const int r = r0 + warp_row0 + mt * Tr::kMmaM + g + hf * 8;
      const int end = r < a.rows ? a.mask.key_end(r % seq_q) : 0;
      key_lim[mt][hf] = end < k_hi ? end : k_hi;
    }

  float acc_o[RT][Tr::kONTiles][4];
  float row_max[RT][2], row_sum[RT][2];  // row_max in the exp2 domain; row_sum this lane's share
#pragma unroll
  for (int mt = 0; mt < RT; ++mt) {
#pragma unroll
    for (int nt = 0; nt < Tr::kONTiles; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_o[mt][nt][e] = 0.f;
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      row_max[mt][hf] = kNegInf;
      row_sum[mt][hf] = 0.f;
    }
  }

  for (int j = 0; j < n_tiles; ++j) {
    const int stage = j % Tr::kStages;
    if constexpr (kTma) {
      // Every warp is done with tile j - 1, whose stage thread 0 refills; then tile j's bytes landed.
      __syncthreads();
      if (tid == 0 && j + Tr::kStages - 1 < n_tiles) issue_tma(j + Tr::kStages - 1);
      tma::wait(bar0 + stage * 8, std::uint32_t(j / Tr::kStages) & 1u);
    } else {
      // Tile j landed for every thread, and every warp is done with tile j - 1, whose stage the
      // prefetch below refills. Warp ring: the same for this warp's keys, which only it reads and
      // writes; Q (every thread's first group) still needs the block barrier once, before tile 0.
      ptx::cp_async_wait<Tr::kStages - 2>();
      if (!kWarpRing || j == 0) __syncthreads();
      else __syncwarp();
      if (j + Tr::kStages - 1 < n_tiles) load_kv(j + Tr::kStages - 1);
      ptx::cp_async_commit();
    }
    const int k0 = k_lo + phys(j) * Bc + warp_key0;  // first key of this warp's share
    const std::uint32_t k_stage = k_lane + stage * kKVTileBytes;
    const std::uint32_t v_stage = v_lane + stage * kKVTileBytes;

    // ---- S = Q K^T: (kWarpRows, kWarpKeys) per warp ----
    float s[RT][Tr::kSNTiles][4];
#pragma unroll
    for (int mt = 0; mt < RT; ++mt)
#pragma unroll
      for (int nt = 0; nt < Tr::kSNTiles; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.f;
#pragma unroll
    for (int ks = 0; ks < Tr::kQKSteps; ++ks) {
      std::uint32_t qa[RT][4];
#pragma unroll
      for (int mt = 0; mt < RT; ++mt)
        ptx::ldmatrix_x4(qa[mt], q_lane + (mt * Tr::kMmaM * kRowBytes + ks * Tr::kMmaK * kEB));
#pragma unroll
      for (int nt = 0; nt < Tr::kSNTiles; nt += 2) {
        std::uint32_t kb[4];
        if constexpr (kTma) {
          const int kChunk = 2 * ks;  // first 16-byte chunk of this k16 step
          ptx::ldmatrix_x4(kb, k_lane_t + std::uint32_t(stage * 2 * Tr::kTmaTileBytes) +
                                   std::uint32_t((kChunk / 8) * Tr::kBoxBytes + nt * Tr::kMmaN * 128) +
                                   ((std::uint32_t(kChunk % 8) ^ k_x) << 4));
        } else {
          ptx::ldmatrix_x4(kb, k_stage + (nt * Tr::kMmaN * kRowBytes + ks * Tr::kMmaK * kEB));
        }
        const std::uint32_t b0[2] = {kb[0], kb[1]};
        const std::uint32_t b1[2] = {kb[2], kb[3]};
#pragma unroll
        for (int mt = 0; mt < RT; ++mt) {
          ptx::mma_m16n8k16<Elem>(s[mt][nt], qa[mt], b0);
          ptx::mma_m16n8k16<Elem>(s[mt][nt + 1], qa[mt], b1);
        }
      }
    }
    // ---- mask: the split's tail tile and (causal) the last seq_q keys only ----
    if (k0 + Tr::kWarpKeys > k_hi || a.mask.tile_needs_mask(0, k0, Tr::kWarpKeys)) {
#pragma unroll
      for (int mt = 0; mt < RT; ++mt)
#pragma unroll
        for (int nt = 0; nt < Tr::kSNTiles; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = k0 + nt * Tr::kMmaN + 2 * t + e % 2;
            if (key >= key_lim[mt][e / 2]) s[mt][nt][e] = kNegInf;
          }
    }
    // ---- online softmax ----
#pragma unroll
    for (int mt = 0; mt < RT; ++mt)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const float alpha = online_softmax_row(s[mt], hf, row_max[mt][hf], row_sum[mt][hf], a.scale_log2);
#pragma unroll
        for (int nt = 0; nt < Tr::kONTiles; ++nt) {
          acc_o[mt][nt][2 * hf] *= alpha;
          acc_o[mt][nt][2 * hf + 1] *= alpha;
        }
      }
    // ---- O += P V ----
    if constexpr (kTma) {
      const std::uint32_t v_st = v_lane_t + std::uint32_t(stage * 2 * Tr::kTmaTileBytes);
#pragma unroll
      for (int kk = 0; kk < Tr::kPVSteps; ++kk) {
        std::uint32_t pa[RT][4];
#pragma unroll
        for (int mt = 0; mt < RT; ++mt) {
          pa[mt][0] = ptx::pack2<Elem>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
          pa[mt][1] = ptx::pack2<Elem>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
          pa[mt][2] = ptx::pack2<Elem>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
          pa[mt][3] = ptx::pack2<Elem>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
        }
#pragma unroll
        for (int nt = 0; nt < Tr::kONTiles; nt += 2) {  // 16-byte chunk nt (+ lane / 16) of V's rows
          std::uint32_t vb[4];
          ptx::ldmatrix_x4_trans(vb, v_st + std::uint32_t((nt / 8) * Tr::kBoxBytes + kk * Tr::kMmaK * 128) +
                                         ((std::uint32_t(nt % 8) ^ v_x) << 4));
          const std::uint32_t b0[2] = {vb[0], vb[1]};
          const std::uint32_t b1[2] = {vb[2], vb[3]};
#pragma unroll
          for (int mt = 0; mt < RT; ++mt) {
            ptx::mma_m16n8k16<Elem>(acc_o[mt][nt], pa[mt], b0);
            ptx::mma_m16n8k16<Elem>(acc_o[mt][nt + 1], pa[mt], b1);
          }
        }
      }
    } else {
      mma_pv<Elem, RT, Tr::kPVSteps, Tr::kONTiles, kRowBytes>(acc_o, s, v_stage);
    }
  }

  // ---- merge the key groups through shared memory (the pipeline's space, now idle) ----
  ptx::cp_async_wait<0>();
  __syncthreads();
  float* sO = reinterpret_cast<float*>(sK);                           // (kKeyGroups, kRows, kMergeStride)
  float* sM = sO + Tr::kKeyGroups * Tr::kRows * Tr::kMergeStride;      // (kKeyGroups, kRows)
  float* sL = sM + Tr::kKeyGroups * Tr::kRows;
#pragma unroll
  for (int mt = 0; mt < RT; ++mt)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const int lr = wk * Tr::kRows + warp_row0 + mt * Tr::kMmaM + g + hf * 8;
      const float sum = quad_sum(row_sum[mt][hf]);
      if (t == 0) {
        sM[lr] = row_max[mt][hf];
        sL[lr] = sum;
      }
#pragma unroll
      for (int nt = 0; nt < Tr::kONTiles; ++nt)
        *reinterpret_cast<float2*>(sO + lr * Tr::kMergeStride + nt * Tr::kMmaN + 2 * t) =
            make_float2(acc_o[mt][nt][2 * hf], acc_o[mt][nt][2 * hf + 1]);
    }
  __syncthreads();
  constexpr int kQuads = D / 4;  // float4 columns per row
  const bool direct = slot < 0;
  for (int idx = tid; idx < Tr::kRows * kQuads; idx += Tr::kThreads) {
    const int lr = idx / kQuads, c = (idx % kQuads) * 4;
    const int r = r0 + lr;
    if (r >= a.rows) continue;
    float m = kNegInf;
#pragma unroll
    for (int w = 0; w < Tr::kKeyGroups; ++w) m = fmaxf(m, sM[w * Tr::kRows + lr]);
    const float sub = m == kNegInf ? 0.f : m;
    float l = 0.f;
    float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int w = 0; w < Tr::kKeyGroups; ++w) {
      const int wl = w * Tr::kRows + lr;
      const float f = ptx::exp2_approx(sM[wl] - sub);
      l += f * sL[wl];
      const float4 x = *reinterpret_cast<const float4*>(sO + wl * Tr::kMergeStride + c);
      o.x += f * x.x;
      o.y += f * x.y;
      o.z += f * x.z;
      o.w += f * x.w;
    }
    // A row with no visible key here has l = 0: O = 0, LSE = -inf.
    const float inv = l > 0.f ? 1.f / l : 0.f;
    const float lse = l > 0.f ? (m + log2f(l)) * float(kLn2) : kNegInf;
    const long long row = bkv * a.rows + r;
    if (direct) {
      const std::uint32_t packed[2] = {ptx::pack2<Elem>(o.x * inv, o.y * inv), ptx::pack2<Elem>(o.z * inv, o.w * inv)};
      *reinterpret_cast<uint2*>(a.o + row * D + c) = make_uint2(packed[0], packed[1]);
      if (c == 0) a.lse[row] = lse;
    } else {
      const long long prow = slot * a.total_rows + row;
      *reinterpret_cast<float4*>(a.part_o + prow * D + c) = make_float4(o.x * inv, o.y * inv, o.z * inv, o.w * inv);
      if (c == 0) a.part_lse[prow] = lse;
    }
  }
}

// kWarpRing (cp.async ring, warps splitting each tile's keys): each warp loads its own keys of every
// tile and waits for them alone (cp.async groups + __syncwarp): no block barrier in the key loop, so a
// warp whose loads landed computes while another still waits. kL2: the ring's L2 hint. kStreamK (up
// to sixteen rows, cp.async): CTA c takes keys [c * L, (c + 1) * L) of all (K/V head, key) pairs laid
// end to end, L = a.stream_keys, i.e. a piece of one or more heads' keys, each a work item (see
// stream_pieces); otherwise the grid is (batch x K/V head, split, row chunk), one item a CTA.
template <typename Tr, bool kTma, bool kWarpRing = false, L2Hint kL2 = L2Hint::none, bool kStreamK = false>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kCtas)
    decode_split_kernel(const __grid_constant__ DecodeArgs<typename Tr::Elem> a) {
  static_assert(!kWarpRing || (!kTma && Tr::kKeyGroups == Tr::kWarps),
                "a warp-private ring needs every warp on its own keys of each tile (and cp.async)");
  static_assert(!kStreamK || !kTma, "stream-K items run the cp.async ring (the TMA ring's barriers are per launch)");
#if !FB_PTX_SM90A
  if constexpr (kTma) __trap();  // never launched: the host picks the TMA ring on sm_90a devices only
#endif
  pdl_launch_dependents();  // the combine grid (if any) may become resident now; it waits for this one
  extern __shared__ __align__(16) unsigned char smem_raw[];
  if constexpr (kStreamK) {
    const int seq_k = a.mask.seq_k;
    const long long total = a.kv_planes * seq_k;
    const long long f_lo = blockIdx.x * a.stream_keys;
    const long long f_hi = f_lo + a.stream_keys < total ? f_lo + a.stream_keys : total;
    for (long long f = f_lo; f < f_hi;) {
      const long long bkv = f / seq_k;
      const long long base = bkv * seq_k;
      const int k_lo = int(f - base);
      const int k_hi = f_hi - base < seq_k ? int(f_hi - base) : seq_k;
      const StreamPieces pc = stream_pieces(bkv, seq_k, a.stream_keys);
      if (f != f_lo) __syncthreads();  // the last item's merge read the ring's space this one refills
      split_item<Tr, kTma, kWarpRing, kL2>(a, smem_raw, bkv, k_lo, k_hi,
                                           pc.count == 1 ? -1 : int(blockIdx.x - pc.first));
      f = base + seq_k;
    }
  } else {
    const int split = blockIdx.y;
    const int seq_k = a.mask.seq_k;
    split_item<Tr, kTma, kWarpRing, kL2>(a, smem_raw, blockIdx.x, a.plan.key_begin(split, seq_k),
                                         a.plan.key_end(split, seq_k), a.plan.splits == 1 ? -1 : split);
  }
}

// One warp per query row: merges the splits' partial O and LSE (see the top of this file). Lane s % 32
// holds split s's weight; the partial O rows are then read kUnroll splits at a time with no branch
// between the loads, so that several are in flight (one split after the other, each waiting on its
// LSE, was ~2 L2 round trips per split: the tail of a batch-1 decode).
template <typename Elem, int D>
__global__ void __launch_bounds__(128) decode_combine_kernel(const DecodeArgs<Elem> a) {
  constexpr int kPerLane = D / 32;
  constexpr int kUnroll = 8;
  static_assert(kPerLane == 2 || kPerLane == 4, "a float2 or float4 of columns per lane");
  using Vec = std::conditional_t<kPerLane == 4, float4, float2>;
  pdl_wait_primary();
  const int lane = threadIdx.x % 32;
  const long long row = blockIdx.x * 4ll + threadIdx.x / 32;
  if (row >= a.total_rows) return;
  int splits = a.plan.splits;
  if (a.stream_keys > 0) {  // this row's head: its pieces, or none to merge (its one CTA wrote O)
    splits = stream_pieces(row / a.rows, a.mask.seq_k, a.stream_keys).count;
    if (splits == 1) return;
  }
  // Splits 0..31's LSEs stay in the lanes for their weights (one L2 round trip fewer up to 32 splits).
  const float lse_first = lane < splits ? a.part_lse[lane * a.total_rows + row] : -INFINITY;
  float m = lse_first;
  for (int s = lane + 32; s < splits; s += 32) m = fmaxf(m, a.part_lse[s * a.total_rows + row]);
#pragma unroll
  for (int x = 16; x > 0; x /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, x));
  const float sub = m == -INFINITY ? 0.f : m;
  float acc[kPerLane] = {};
  float w_sum = 0.f;
  const float* col = a.part_o + row * D + lane * kPerLane;
  const long long split_stride = a.total_rows * D;
  for (int base = 0; base < splits; base += 32) {
    const int n = min(32, splits - base);
    // 0 for a split with no visible key (its partial O is 0 too).
    const float lse = base == 0 ? lse_first : lane < n ? a.part_lse[(base + lane) * a.total_rows + row] : -INFINITY;
    const float w_mine = __expf(lse - sub);
    w_sum += w_mine;
    int i = 0;
    for (; i + kUnroll <= n; i += kUnroll) {
      Vec x[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) x[u] = *reinterpret_cast<const Vec*>(col + (base + i + u) * split_stride);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const float w = __shfl_sync(0xffffffffu, w_mine, i + u);
        const float* v = reinterpret_cast<const float*>(&x[u]);
#pragma unroll
        for (int e = 0; e < kPerLane; ++e) acc[e] += w * v[e];
      }
    }
    for (; i < n; ++i) {
      const Vec x = *reinterpret_cast<const Vec*>(col + (base + i) * split_stride);
      const float w = __shfl_sync(0xffffffffu, w_mine, i);
      const float* v = reinterpret_cast<const float*>(&x);
#pragma unroll
      for (int e = 0; e < kPerLane; ++e) acc[e] += w * v[e];
    }
  }
#pragma unroll
  for (int x = 16; x > 0; x /= 2) w_sum += __shfl_xor_sync(0xffffffffu, w_sum, x);
  const float inv = w_sum > 0.f ? 1.f / w_sum : 0.f;
  Elem* dst = a.o + row * D + lane * kPerLane;
#pragma unroll
  for (int i = 0; i < kPerLane; i += 2)
    *reinterpret_cast<std::uint32_t*>(dst + i) = ptx::pack2<Elem>(acc[i] * inv, acc[i + 1] * inv);
  if (lane == 0) a.lse[row] = w_sum > 0.f ? sub + logf(w_sum) : -INFINITY;
}

}  // namespace fb::cuda::decode
