// FlashAttention backward for Hopper (sm_90a): TMA loads, wgmma, a producer warpgroup and two
// consumer warpgroups. The roles, tiles and the dQ accumulator's layout are described in
// flash_sm90_bwd_traits.h; the host side (pre-pass, launch, dQ convert) is in flash_sm90_bwd.cu.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <cuda.h>  // CUtensorMap (a type only)
#include <cuda_runtime.h>

#include "common/exp2_poly.h"
#include "common/ptx.cuh"
#include "common/ptx_sm90.cuh"
#include "common/mask.h"
#include "common/pdl.cuh"
#include "common/tile_order.h"
#include "flash_sm90/flash_sm90_bwd_traits.h"

namespace fb::cuda::flash_sm90 {

// Everything the kernel reads, passed by value as a __grid_constant__ parameter.
struct BwdParams {
  CUtensorMap tm_q;    // (d, seq_q, batch * heads), box (64, kBlockM, 1)
  CUtensorMap tm_do;   // same shape as Q
  CUtensorMap tm_k;    // (d, seq_k, batch * kv_heads), box (64, kBlockN, 1)
  CUtensorMap tm_v;
  const float* lse;    // [batch * heads, seq_pad]: LSE * log2(e), +inf on padding rows and rows
                       // with no visible key (P = 0 there)
  const float* dsum;   // [batch * heads, seq_pad]: D = rowsum(dO o O), 0 on padding rows
  float* dq_acc;       // [batch * heads, seq_pad / kDqRows, kDqBlocks, kDqWgFloats], zeroed
  void* dk;            // [batch, kv_heads, seq_k, d]
  void* dv;
  int heads;
  int kv_heads;
  int group;
  int seq_pad;         // padded_seq(seq_q)
  int kv_planes;       // batch * kv_heads
  int key_tiles;       // ceil(seq_k / kBlockN)
  int plane_group;     // K/V planes whose blocks run together (block order, see the kernel)
  float scale_log2;    // softmax scale * log2(e)
  float scale;
  CausalMask mask;     // seq_q, seq_k and the causal rule (kernels/common/mask.h)
  int n_tiles;         // key_tiles * kv_planes work tiles (persistent: a block takes several)
  // Head split (kHeadSplit, flash_sm90_bwd_traits.h): each K/V plane's query heads are split into
  // head_split subsets, and kv_heads, group, kv_planes above count virtual K/V heads and planes (a plane
  // and a subset; plane = virtual / head_split). Fields added after n_tiles keep the parameter block
  // of the other variants at 640 bytes.
  int head_split;
  float* dkv_acc;      // [kv planes, key_tiles * kBlockN / 64, kDqBlocks, kDqWgFloats] of dK, then dV's
                       // (kDynTiles: the tile counter, an unsigned the pre-pass zeroed)
  // Key tail order (kKeyTail, flash_sm90_bwd_traits.h): key tiles [0, grouped_tiles) in plane groups, the
  // rest over all planes. In the padding of the 640-byte block: no other variant's parameters move.
  int grouped_tiles;
  // Query tail (kQTail, flash_sm90_bwd_traits.h): tiles [tail_first, n_tiles) run as tail_parts units each,
  // blocks [tail_first + (t - tail_first) * tail_parts, ... + tail_parts) for tile t; their partial dK, dV go to
  // dkv_acc ([2][n_tiles - tail_first tiles][kBlockN / 64][kDqBlocks][kDkvBlockFloats], dK then dV).
  // Shared tail (kTailShare): tiles [0, tail_first) round-robin, the rest shared out (bwd_for_each_tail_piece);
  // the same accumulators.
  int tail_first;
  int tail_parts;
};
static_assert(sizeof(BwdParams) == 640, "the parameter block keeps its size (the default kernels' PTX)");

template <typename Tr> struct BwdBarriers {
  std::uint32_t base;
  __device__ __forceinline__ std::uint32_t at(int i) const { return base + i * Tr::kBarBytes; }
  __device__ __forceinline__ std::uint32_t kv_full() const { return at(0); }
  __device__ __forceinline__ std::uint32_t q_full(int s) const { return at(1 + s); }
  __device__ __forceinline__ std::uint32_t do_full(int s) const { return at(1 + Tr::kStages + s); }
  __device__ __forceinline__ std::uint32_t empty(int s) const {
    return at(1 + Tr::kStages + Tr::kDoStages + s);
  }
  // Split head only: dO stage s is free (Q's stage frees with empty()).
  __device__ __forceinline__ std::uint32_t do_empty(int s) const {
    return at(1 + 2 * Tr::kStages + Tr::kDoStages + s);
  }
  // Persistent only: the consumers are done with this tile's K and V.
  __device__ __forceinline__ std::uint32_t kv_empty() const { return at(Tr::kNumBars - 1); }
};

template <typename Tr> struct BwdSmem {
  std::uint32_t base;  // 1024-byte aligned
  __device__ __forceinline__ std::uint32_t k() const { return base + Tr::kOffK; }
  __device__ __forceinline__ std::uint32_t v() const { return base + Tr::kOffV; }
  __device__ __forceinline__ std::uint32_t q(int s) const { return base + Tr::kOffQ + s * Tr::kQBytes; }
  __device__ __forceinline__ std::uint32_t dout(int s) const {
    return base + Tr::kOffDo + s * Tr::kQBytes;
  }
  __device__ __forceinline__ std::uint32_t ds(int b) const {
    return base + Tr::kOffDs + b * Tr::kDsBytes;
  }
  __device__ __forceinline__ std::uint32_t p(int b) const {
    return base + Tr::kOffP + b * Tr::kDsBytes;
  }
  __device__ __forceinline__ std::uint32_t dq(int cw) const {
    return base + Tr::kOffDq + cw * Tr::kDqWgBytes;
  }
  __device__ __forceinline__ std::uint32_t lse(int s) const {
    return base + Tr::kOffLse + s * Tr::kRowVecBytes;
  }
  __device__ __forceinline__ std::uint32_t dsum(int s) const {
    return base + Tr::kOffD + s * Tr::kRowVecBytes;
  }
};

// The block's work: keys [n0, n0 + kBlockN) of K/V plane kv_bh; steps = the group's query heads
// times their query tiles from m_begin on (causal: the tiles before the first row that sees key n0
// see none of the keys). Head split: kv_bh is the virtual plane, kv_plane() the one K/V come from.
struct BwdWork {
  int n0;
  int kv_bh;
  int q_bh0;     // first query plane of the group
  int m_begin;   // first query tile
  int per_head;  // query tiles per head
  int steps;
  __device__ __forceinline__ int q_bh(int step) const { return q_bh0 + step / per_head; }
  __device__ __forceinline__ int m_tile(int step) const { return m_begin + step % per_head; }
};

template <typename Tr>
__device__ __forceinline__ int kv_plane(const BwdParams& prm, const BwdWork& w) {
  if constexpr (Tr::kHeadSplit) return w.kv_bh / prm.head_split;
  return w.kv_bh;
}

#if FB_PTX_SM90A

__device__ __forceinline__ uint4 ld_shared_u32x4(std::uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}

// The rest of a work tile once its key tile n0 and K/V plane kv_bh are known: the first query head, and
// the query tiles it runs (the last query row sees every key, so per_head >= 1).
template <typename Tr>
__device__ __forceinline__ void bwd_work_rows(const BwdParams& prm, BwdWork& w) {
  const int b = w.kv_bh / prm.kv_heads;
  w.q_bh0 = b * prm.heads + (w.kv_bh % prm.kv_heads) * prm.group;
  w.m_begin = prm.mask.first_q_tile(w.n0, Tr::kBlockM);
  w.per_head = (prm.mask.seq_q + Tr::kBlockM - 1) / Tr::kBlockM - w.m_begin;
  w.steps = w.per_head * prm.group;
}

// kKeyTail (the causal MHA order at d = 128 since session 13): the first kv_planes * grouped_tiles tiles are
// key tiles [0, grouped_tiles) in bwd_work's order (plane groups, key tiles outermost in a group); the rest
// are key tiles [grouped_tiles, key_tiles) of every plane, one key tile of all planes after the other (the
// longest first under the causal mask), so that the last blocks to start are the shortest of every plane.
template <typename Tr>
__device__ __forceinline__ BwdWork bwd_work_key_tail(const BwdParams& prm, unsigned tile) {
  const unsigned grouped = unsigned(prm.kv_planes) * unsigned(prm.grouped_tiles);
  BwdWork w;
  if (tile < grouped) {
    const int group_blocks = prm.plane_group * prm.grouped_tiles;
    const int grp = tile / group_blocks;
    const int first_plane = grp * prm.plane_group;
    const int planes_here = min(prm.plane_group, prm.kv_planes - first_plane);
    const int within = tile - grp * group_blocks;
    w.n0 = within / planes_here * Tr::kBlockN;
    w.kv_bh = first_plane + within % planes_here;
  } else {
    const unsigned t = tile - grouped;
    w.n0 = (prm.grouped_tiles + int(t / unsigned(prm.kv_planes))) * Tr::kBlockN;
    w.kv_bh = int(t % unsigned(prm.kv_planes));
  }
  bwd_work_rows<Tr>(prm, w);
  return w;
}

// Work tile `tile` (blockIdx.x, or the persistent loop's index). Order: groups of plane_group K/V
// planes, and within a group key tiles outermost. The tiles that run at the same time then share a
// few planes' Q, dO and dQ accumulator, which stay in L2 (one plane per block would stream them from
// memory once per key tile); and with a causal mask the first key tiles, which see the most queries,
// start first, which balances the tail.
template <typename Tr>
__device__ __forceinline__ BwdWork bwd_work(const BwdParams& prm, unsigned tile) {
  if constexpr (Tr::kKeyTail) return bwd_work_key_tail<Tr>(prm, tile);
  const int group_blocks = prm.plane_group * prm.key_tiles;
  const int grp = tile / group_blocks;  // unsigned division, as blockIdx.x
  const int first_plane = grp * prm.plane_group;
  const int planes_here = min(prm.plane_group, prm.kv_planes - first_plane);
  const int within = tile - grp * group_blocks;
  BwdWork w;
  w.n0 = within / planes_here * Tr::kBlockN;
  w.kv_bh = first_plane + within % planes_here;
  bwd_work_rows<Tr>(prm, w);
  return w;
}

// Block `block` of a query-tail grid (kQTail): blocks below tail_first are their tiles; the rest are units,
// tail_parts a tile, unit s of tile t walking query tiles [s n / S, (s + 1) n / S) of the n its heads see
// (every one without a causal mask; S = tail_parts <= n, so none is empty).
template <typename Tr>
__device__ __forceinline__ BwdWork bwd_work_qtail(const BwdParams& prm, unsigned block) {
  if (block < unsigned(prm.tail_first)) return bwd_work<Tr>(prm, block);
  const int unit = int(block - unsigned(prm.tail_first));
  const int part = unit % prm.tail_parts;
  BwdWork w = bwd_work<Tr>(prm, unsigned(prm.tail_first + unit / prm.tail_parts));
  const int n = w.per_head;
  const int lo = part * n / prm.tail_parts, hi = (part + 1) * n / prm.tail_parts;
  w.m_begin += lo;
  w.per_head = hi - lo;
  w.steps = w.per_head * prm.group;
  return w;
}

// A persistent block's whole tiles are blockIdx.x, + gridDim.x, ... below this (kTailShare: the whole rounds).
template <typename Tr> __device__ __forceinline__ int bwd_whole_end(const BwdParams& prm) {
  return Tr::kTailShare ? prm.tail_first : prm.n_tiles;
}

// kTailShare, after the whole rounds: f(w, slot) for each piece of this block's run of the tail's query tiles
// (common/tile_order.h, tail_run_begin and tail_piece; slot: the piece's tile - tail_first, every head of its group).
// Producer and consumers walk the same pieces.
template <typename Tr, typename F>
__device__ __forceinline__ void bwd_for_each_tail_piece(const BwdParams& prm, F&& f) {
  if constexpr (Tr::kTailShare) {
    const int n = bwd_work<Tr>(prm, unsigned(prm.tail_first)).per_head;  // non-causal: every tile's
    const long long total = static_cast<long long>(prm.n_tiles - prm.tail_first) * n;
    long long pos = tail_run_begin(total, gridDim.x, blockIdx.x);
    const long long end = tail_run_begin(total, gridDim.x, blockIdx.x + 1);
    while (pos < end) {
      const TailPiece piece = tail_piece(pos, end, n);
      BwdWork w = bwd_work<Tr>(prm, unsigned(prm.tail_first + piece.slot));
      w.m_begin += piece.lo;
      w.per_head = piece.hi - piece.lo;
      w.steps = w.per_head * prm.group;
      f(w, piece.slot);
      pos = static_cast<long long>(piece.slot) * n + piece.hi;
    }
  }
}

// The block's work (one block per tile or unit; persistent kernels find their tiles with bwd_work and
// bwd_for_each_tail_piece).
template <typename Tr> __device__ __forceinline__ BwdWork bwd_block_work(const BwdParams& prm) {
  if constexpr (Tr::kQTail) return bwd_work_qtail<Tr>(prm, blockIdx.x);
  return bwd_work<Tr>(prm, blockIdx.x);
}

// kShort (flash_sm90_bwd_traits.h): the block's steps as its whole ones (every head's tiles but a short last one, in
// bwd_work's order) and then the short ones (the last tile of each head); tail.steps == 0 where the last tile is whole
// or the block (a query tail's unit) does not reach it. Producer and consumer walk the same order; the whole steps'
// loop is the one every other 80-query kernel runs.
struct BwdShortSplit {
  BwdWork whole, tail;
};
template <typename Tr>
__device__ __forceinline__ BwdShortSplit bwd_short_split(const BwdParams& prm, const BwdWork& w) {
  BwdShortSplit r{w, w};
  r.tail.steps = 0;
  const int last_tile = (prm.mask.seq_q - 1) / Tr::kBlockM;
  if (prm.mask.seq_q - last_tile * Tr::kBlockM <= Tr::kShortRows && w.m_begin + w.per_head - 1 == last_tile) {
    r.whole.per_head = w.per_head - 1;
    r.whole.steps = r.whole.per_head * prm.group;
    r.tail.m_begin = last_tile;
    r.tail.per_head = 1;
    r.tail.steps = prm.group;
  }
  return r;
}

template <typename Tr>
__device__ __forceinline__ void bwd_produce_kv(const BwdParams& prm, const BwdSmem<Tr>& sm,
                                               const BwdBarriers<Tr>& bars, const BwdWork& w) {
  ptx::mbar_arrive_expect_tx(bars.kv_full(), 2 * Tr::kKVBytes);
#pragma unroll
  for (int c = 0; c < Tr::kChunks; ++c) {
    ptx::tma_load_3d(sm.k() + c * Tr::kKVChunkBytes, &prm.tm_k, bars.kv_full(),
                     c * Tr::kChunkElems, w.n0, kv_plane<Tr>(prm, w));
    ptx::tma_load_3d(sm.v() + c * Tr::kKVChunkBytes, &prm.tm_v, bars.kv_full(),
                     c * Tr::kChunkElems, w.n0, kv_plane<Tr>(prm, w));
  }
}

// Q, dO, LSE and D of step `it` of w into ring slot g (g = it unless persistent: the block's steps
// counted over its tiles).
template <typename Tr>
__device__ __forceinline__ void bwd_produce_step(const BwdParams& prm, const BwdSmem<Tr>& sm,
                                                 const BwdBarriers<Tr>& bars, const BwdWork& w, int it,
                                                 int g) {
  const int s = g % Tr::kStages;
  const std::uint32_t free_parity = ((g / Tr::kStages) & 1) ^ 1;
  const int sd = g % Tr::kDoStages;  // == s unless split head
  const int bh = w.q_bh(it);
  const int m0 = w.m_tile(it) * Tr::kBlockM;
  const std::int64_t row0 = std::int64_t(bh) * prm.seq_pad + m0;
  // A (kBlockM, d) tile of Q or dO and its row vector (LSE or D) onto one full barrier.
  auto load_rows = [&](const CUtensorMap* tmap, std::uint32_t dst, const float* vec,
                       std::uint32_t vec_dst, std::uint32_t bar) {
    ptx::mbar_arrive_expect_tx(bar, Tr::kQBytes + Tr::kRowVecBytes);
#pragma unroll
    for (int c = 0; c < Tr::kChunks; ++c)
      ptx::tma_load_3d(dst + c * Tr::kQChunkBytes, tmap, bar, c * Tr::kChunkElems, m0, bh);
    ptx::bulk_load(vec_dst, vec + row0, Tr::kRowVecBytes, bar);
  };
  ptx::mbar_wait(bars.empty(s), free_parity);
  load_rows(&prm.tm_q, sm.q(s), prm.lse, sm.lse(s), bars.q_full(s));
  if constexpr (Tr::kSplitHead)
    ptx::mbar_wait(bars.do_empty(sd), ((g / Tr::kDoStages) & 1) ^ 1);
  load_rows(&prm.tm_do, sm.dout(sd), prm.dsum, sm.dsum(sd), bars.do_full(sd));
}

// w: the block's tile (unless persistent: then the loop below finds each).
template <typename Tr>
__device__ __forceinline__ void bwd_produce(const BwdParams& prm, const BwdSmem<Tr>& sm,
                                            const BwdBarriers<Tr>& bars, const BwdWork& w0) {
  ptx::prefetch_tensormap(&prm.tm_q);
  ptx::prefetch_tensormap(&prm.tm_do);
  ptx::prefetch_tensormap(&prm.tm_k);
  ptx::prefetch_tensormap(&prm.tm_v);
  if constexpr (Tr::kShort) {
    bwd_produce_kv<Tr>(prm, sm, bars, w0);
    const BwdShortSplit sp = bwd_short_split<Tr>(prm, w0);
    for (int it = 0; it < sp.whole.steps; ++it) bwd_produce_step<Tr>(prm, sm, bars, sp.whole, it, it);
    for (int h = 0; h < sp.tail.steps; ++h) bwd_produce_step<Tr>(prm, sm, bars, sp.tail, h, sp.whole.steps + h);
  } else if constexpr (!Tr::kPersistent) {
    bwd_produce_kv<Tr>(prm, sm, bars, w0);
    for (int it = 0; it < w0.steps; ++it) bwd_produce_step<Tr>(prm, sm, bars, w0, it, it);
  } else {
    int g = 0;  // ring slot of the next step
    int i = 0;  // tiles (and tail pieces) done
    // The first step's Q and dO load while the consumers finish the previous tile; its K and V once
    // they are done with the previous ones (the first wait passes at once).
    // kDynTiles: the tile's number goes to the consumers with its K and V (kOffTile, read after the K/V full barrier).
    const std::uint32_t slot = sm.base + Tr::kOffTile;
    auto produce = [&](const BwdWork& w, int tile) {
      bwd_produce_step<Tr>(prm, sm, bars, w, 0, g++);
      ptx::mbar_wait(bars.kv_empty(), (i & 1) ^ 1);
      if constexpr (Tr::kDynTiles) ptx::st_shared_u32(slot, std::uint32_t(tile));
      bwd_produce_kv<Tr>(prm, sm, bars, w);
      for (int it = 1; it < w.steps; ++it) bwd_produce_step<Tr>(prm, sm, bars, w, it, g++);
    };
    if constexpr (Tr::kDynTiles) {
      // Each next tile gridDim.x + the counter's next value (a block's first: blockIdx.x), so that the tiles in flight
      // are a window of the order, as under the hardware's block scheduler; past the last, -1 with a bare arrival once
      // the consumers are done with the last tile's K and V.
      for (int tile = blockIdx.x; tile < prm.n_tiles; ++i) {
        produce(bwd_work<Tr>(prm, tile), tile);
        tile = int(gridDim.x + atomicAdd(reinterpret_cast<unsigned*>(prm.dkv_acc), 1u));
      }
      ptx::mbar_wait(bars.kv_empty(), (i & 1) ^ 1);
      ptx::st_shared_u32(slot, ~0u);
      ptx::mbar_arrive(bars.kv_full());
    } else {
      for (int tile = blockIdx.x; tile < bwd_whole_end<Tr>(prm); tile += gridDim.x, ++i)
        produce(bwd_work<Tr>(prm, tile), tile);
    }
    bwd_for_each_tail_piece<Tr>(prm, [&](const BwdWork& w, int) {
      produce(w, -1);
      ++i;
    });
  }
}

// The wgmma descriptors of one consumer (cw) and its five GEMMs. K-major operands step 32 bytes
// along a 128-byte row per k16 (a new chunk every 4 steps); MN-major operands step 16 rows.
template <typename Tr> struct BwdGemms {
  using Elem = typename Tr::Elem;
  static constexpr int kStepsPerChunk = Tr::kChunkElems / Tr::kMmaK;
  std::uint64_t desc_k, desc_v;     // this consumer's 64 keys, K-major (A of S^T, dP^T)
  std::uint64_t desc_q0, desc_do0;  // stage 0 of Q / dO, K-major (B of S^T, dP^T)
  std::uint64_t desc_qt0, desc_dot0;  // stage 0 of Q / dO, MN-major (B of dK, dV)
  std::uint64_t desc_dsq;           // A of dQ, MN-major: dS^T buffer 0 (split dQ), its chunk of this
                                    // consumer's query rows (split dQ rows) or this consumer's rows
  std::uint64_t desc_kt;            // B of dQ, MN-major: K's chunk of this consumer's dQ columns
                                    // (split dQ), all of K (split dQ rows) or this consumer's rows

  static constexpr std::uint64_t units(int bytes) { return std::uint64_t(bytes / Tr::kUnitBytes); }

  __device__ __forceinline__ BwdGemms(const BwdSmem<Tr>& sm, int cw)
      : desc_k(ptx::make_desc_sw128(sm.k() + cw * Tr::kWgKVBytes, Tr::kUnitBytes, Tr::kAtomBytes)),
        desc_v(ptx::make_desc_sw128(sm.v() + cw * Tr::kWgKVBytes, Tr::kUnitBytes, Tr::kAtomBytes)),
        desc_q0(ptx::make_desc_sw128(sm.q(0), Tr::kUnitBytes, Tr::kAtomBytes)),
        desc_do0(ptx::make_desc_sw128(sm.dout(0), Tr::kUnitBytes, Tr::kAtomBytes)),
        desc_qt0(ptx::make_desc_sw128(sm.q(0), Tr::kQChunkBytes, Tr::kAtomBytes)),
        desc_dot0(ptx::make_desc_sw128(sm.dout(0), Tr::kQChunkBytes, Tr::kAtomBytes)),
        desc_dsq(ptx::make_desc_sw128(sm.ds(0) + (Tr::kSplitDq       ? 0
                                                  : Tr::kSplitDqRows ? cw * Tr::kDsChunkBytes
                                                                     : cw * Tr::kWgKVBytes),
                                      Tr::kDsBytes, Tr::kAtomBytes)),
        desc_kt(ptx::make_desc_sw128(sm.k() + (Tr::kSplitDq       ? cw * Tr::kKVChunkBytes
                                               : Tr::kSplitDqRows ? 0
                                                                  : cw * Tr::kWgKVBytes),
                                     Tr::kKVChunkBytes, Tr::kAtomBytes)) {}

  // acc = A B^T over d, A = this consumer's K or V rows, B = Q or dO of stage s (both K-major); kN: the
  // step's queries (the stage's first kN rows; Q80's short step: kShortRows).
  template <int kN = Tr::kBlockM>
  __device__ __forceinline__ static void nt(float (&acc)[kN / 2], std::uint64_t a, std::uint64_t b, int s) {
#pragma unroll
    for (int kk = 0; kk < Tr::kQKSteps; ++kk) {
      const int in_row = (kk % kStepsPerChunk) * Tr::kMmaKBytes;
      const int chunk = kk / kStepsPerChunk;
      ptx::wgmma_ss<Elem, kN>(acc, a + units(chunk * Tr::kKVChunkBytes + in_row),
                              b + units(s * Tr::kQBytes + chunk * Tr::kQChunkBytes + in_row), kk > 0);
    }
  }
  // A step's first GEMMs: S^T once stage st's Q is in, dP^T once its dO is; returns when S^T is done
  // (dP^T may still run).
  template <int kN = Tr::kBlockM>
  __device__ __forceinline__ void s_dp_t(float (&s)[kN / 2], float (&dp)[kN / 2], const BwdBarriers<Tr>& bars,
                                         int st, std::uint32_t parity) const {
    ptx::mbar_wait(bars.q_full(st), parity);
    ptx::wgmma_fence();
    nt<kN>(s, desc_k, desc_q0, st);
    ptx::wgmma_commit();
    ptx::mbar_wait(bars.do_full(st), parity);
    ptx::wgmma_fence();
    nt<kN>(dp, desc_v, desc_do0, st);
    ptx::wgmma_commit();
    ptx::wgmma_wait<1>();
    ptx::fence_operands(s);
  }
  // acc += X^T B, X^T (keys x kN queries) from registers, B = dO or Q of stage s read MN-major.
  template <int kN = Tr::kBlockM>
  __device__ __forceinline__ static void tn(float (&acc)[Tr::kDkvRegs], const std::uint32_t (&x)[kN / 4],
                                            std::uint64_t b, int s) {
#pragma unroll
    for (int kk = 0; kk < kN / Tr::kMmaK; ++kk) {
      const std::uint32_t a[4] = {x[4 * kk], x[4 * kk + 1], x[4 * kk + 2], x[4 * kk + 3]};
      ptx::wgmma_rs<Elem, Tr::kHeadDim>(acc, a, b + units(s * Tr::kQBytes + kk * Tr::kMmaKRowsBytes),
                                        1);
    }
  }
  template <int kN = Tr::kBlockM>
  __device__ __forceinline__ void dv(float (&acc)[Tr::kDkvRegs], const std::uint32_t (&p)[kN / 4], int s) const {
    tn<kN>(acc, p, desc_dot0, s);
  }
  template <int kN = Tr::kBlockM>
  __device__ __forceinline__ void dk(float (&acc)[Tr::kDkvRegs], const std::uint32_t (&ds)[kN / 4], int s) const {
    tn<kN>(acc, ds, desc_qt0, s);
  }
  // P^T (S^T after the exponentials) packed into p and dV issued on it; returns when dP^T (issued by
  // s_dp_t) is done, dV may still run.
  template <int kN = Tr::kBlockM>
  __device__ __forceinline__ void p_dv(std::uint32_t (&p)[kN / 4], const float (&s)[kN / 2],
                                       float (&acc_dv)[Tr::kDkvRegs], int st) const {
#pragma unroll
    for (int i = 0; i < kN / 4; ++i) p[i] = ptx::pack2<Elem>(s[2 * i], s[2 * i + 1]);
    ptx::wgmma_fence();
    dv<kN>(acc_dv, p, st);
    ptx::wgmma_commit();
    ptx::wgmma_wait<1>();
  }
  // acc = dS K over the block's keys for this consumer's columns (split dQ) or its 64 query rows
  // (split dQ rows), or over this consumer's keys for every column; dS from dS^T buffer b (both
  // operands MN-major).
  __device__ __forceinline__ void dq(float (&acc)[Tr::kDqRegs], int b) const {
#pragma unroll
    for (int kk = 0; kk < Tr::kDqSteps; ++kk)
      ptx::wgmma_ss_tt<Elem, Tr::kDqCols>(acc,
                                          desc_dsq + units(b * Tr::kDsBytes + kk * Tr::kMmaKRowsBytes),
                                          desc_kt + units(kk * Tr::kMmaKRowsBytes), kk > 0);
  }
};

// Stage consumer cw's dQ block (times the softmax scale) in its shared buffer and add it into the fp32
// accumulator at dst_of() with one bulk reduction: first wait until the previous reduction has read
// the buffer. dst_of is evaluated by the issuing thread only. kRegs < kDqRegs (Q80's short step): the
// block's first kRegs / 4 float4 groups of every thread, the first 8 kRegs / 4 queries of a dQ^T block.
template <typename Tr, int kRegs = Tr::kDqRegs, typename DstOf>
__device__ __forceinline__ void send_dq_block(const BwdParams& prm, const BwdSmem<Tr>& sm, int cw, int ctid,
                                              const float (&acc)[kRegs], DstOf&& dst_of) {
  static_assert(kRegs % 4 == 0 && kRegs <= Tr::kDqRegs, "whole float4 groups of a dQ block");
  if (ctid == 0) ptx::bulk_wait_group_read_all();  // the previous reduction has read the buffer
  ptx::named_bar_sync(Tr::kBarDq0 + cw, Tr::kWgThreads);
#pragma unroll
  for (int g = 0; g < kRegs / 4; ++g)
    ptx::st_shared_f32x4(sm.dq(cw) + (g * Tr::kWgThreads + ctid) * 16, acc[4 * g] * prm.scale,
                         acc[4 * g + 1] * prm.scale, acc[4 * g + 2] * prm.scale,
                         acc[4 * g + 3] * prm.scale);
  ptx::fence_proxy_async_smem();
  ptx::named_bar_sync(Tr::kBarDq0 + cw, Tr::kWgThreads);
  if (ctid == 0) {
    ptx::bulk_reduce_add_f32(dst_of(), sm.dq(cw), kRegs * Tr::kWgThreads * int(sizeof(float)));
    ptx::bulk_commit_group();
  }
}

// Head split: registers [r0, r0 + kDqRegs) of a dK or dV accumulator (one 64-column block: the
// m64nN accumulator holds its n8 column groups in order), times mul, added into the fp32 block at dst
// as send_dq_block adds a dQ block (the same staging buffer, after its last reduction has read it).
template <typename Tr, int kRegs>
__device__ __forceinline__ void send_acc_block(const BwdSmem<Tr>& sm, int cw, int ctid,
                                               const float (&acc)[kRegs], int r0, float mul,
                                               float* dst) {
  if (ctid == 0) ptx::bulk_wait_group_read_all();
  ptx::named_bar_sync(Tr::kBarDq0 + cw, Tr::kWgThreads);
#pragma unroll
  for (int g = 0; g < Tr::kDkvBlockRegs / 4; ++g)
    ptx::st_shared_f32x4(sm.dq(cw) + (g * Tr::kWgThreads + ctid) * 16, acc[r0 + 4 * g] * mul,
                         acc[r0 + 4 * g + 1] * mul, acc[r0 + 4 * g + 2] * mul,
                         acc[r0 + 4 * g + 3] * mul);
  ptx::fence_proxy_async_smem();
  ptx::named_bar_sync(Tr::kBarDq0 + cw, Tr::kWgThreads);
  if (ctid == 0) {
    ptx::bulk_reduce_add_f32(dst, sm.dq(cw), Tr::kDkvBlockBytes);
    ptx::bulk_commit_group();
  }
}

// A partial dK (times the softmax scale) and dV for consumer cw's 64 keys, each 64-column block staged as
// send_acc_block does and added into the fp32 accumulators at blocks block0 + c of dK's and of dV's (dv_blocks
// further on); then, unless persistent, wait for the reductions.
template <typename Tr>
__device__ __forceinline__ void send_dkv_blocks(const BwdParams& prm, const BwdSmem<Tr>& sm, int cw, int ctid,
                                                const float (&dk)[Tr::kDkvRegs], const float (&dv)[Tr::kDkvRegs],
                                                std::int64_t block0, std::int64_t dv_blocks) {
  float* const acc_dv = prm.dkv_acc + dv_blocks * Tr::kDkvBlockFloats;
#pragma unroll
  for (int c = 0; c < Tr::kDqBlocks; ++c) {
    send_acc_block<Tr>(sm, cw, ctid, dk, c * Tr::kDkvBlockRegs, prm.scale,
                       prm.dkv_acc + (block0 + c) * Tr::kDkvBlockFloats);
    send_acc_block<Tr>(sm, cw, ctid, dv, c * Tr::kDkvBlockRegs, 1.f, acc_dv + (block0 + c) * Tr::kDkvBlockFloats);
  }
  // Persistent: the kernel waits for the reductions after its last unit.
  if constexpr (!Tr::kPersistent)
    if (ctid == 0) ptx::bulk_wait_group_all();
}

// Head split: this unit's partial dK (times the softmax scale) and dV for consumer cw's 64 keys, each
// 64-column block staged as send_acc_block does and added into the fp32 accumulators (the convert
// kernel writes dK and dV); then, unless persistent, wait for the reductions.
template <typename Tr>
__device__ __forceinline__ void send_dkv_partials(const BwdParams& prm, const BwdSmem<Tr>& sm,
                                                  const BwdWork& w, int cw, int ctid, int wg_key0,
                                                  const float (&dk)[Tr::kDkvRegs],
                                                  const float (&dv)[Tr::kDkvRegs]) {
  const std::int64_t planes = prm.kv_planes / prm.head_split;
  const std::int64_t key_tiles64 = std::int64_t(prm.key_tiles) * (Tr::kBlockN / Tr::kWgKeys);
  const std::int64_t block0 =
      (std::int64_t(kv_plane<Tr>(prm, w)) * key_tiles64 + wg_key0 / Tr::kWgKeys) * Tr::kDqBlocks;
  send_dkv_blocks<Tr>(prm, sm, cw, ctid, dk, dv, block0, planes * key_tiles64 * Tr::kDqBlocks);
}

// This query-tail unit's tile among the tail's (kQTail: blocks from tail_first on, tail_parts a tile).
__device__ __forceinline__ std::int64_t qtail_slot(const BwdParams& prm) {
  return (blockIdx.x - unsigned(prm.tail_first)) / unsigned(prm.tail_parts);
}

// Query tail (kQTail): a unit's partial dK, dV into the tail's accumulators (BwdParams::tail_first), at its tile's
// slot among the tail's tiles (qtail_slot). The shared tail (kTailShare) too: slot = the piece's tile - tail_first.
template <typename Tr>
__device__ __forceinline__ void send_dkv_tail(const BwdParams& prm, const BwdSmem<Tr>& sm, int cw, int ctid,
                                              const float (&dk)[Tr::kDkvRegs], const float (&dv)[Tr::kDkvRegs],
                                              std::int64_t slot) {
  constexpr int kHalves = Tr::kBlockN / Tr::kWgKeys;
  const std::int64_t tail_tiles = prm.n_tiles - prm.tail_first;
  send_dkv_blocks<Tr>(prm, sm, cw, ctid, dk, dv, (slot * kHalves + cw) * Tr::kDqBlocks,
                      tail_tiles * kHalves * Tr::kDqBlocks);
}

// The staged dK/dV epilogue (BwdTraits::kEpiSmem; bwd_consume and bwd_consume_q80): dK (times the
// softmax scale) and dV through shared memory, written out as whole rows (16-byte units; straight from
// the accumulators each warp store covered 8 rows and half of each 32-byte sector). Rows of 16-byte
// units, unit u of row r at u ^ (r % 8): the accumulator stores (8 rows, one unit each, per warp) and
// the row reads (a quarter warp reads 128 contiguous bytes) are free of bank conflicts. The consumer's
// 64 keys start at wg_key0; rows past seq_k are not written.
template <typename Tr> struct DkvRowStore {
  using Elem = typename Tr::Elem;
  static constexpr int kRowBytes = Tr::kHeadDim * int(sizeof(Elem));
  static constexpr int kRowUnits = kRowBytes / Tr::kUnitBytes;
  static constexpr int kRowsPerPass = Tr::kWgThreads / kRowUnits;
  const BwdWork& w;
  int ctid, key_row, col_lane, wg_key0, seq_k;

  // This thread's accumulator pairs of acc, times mul, into the rows at buf.
  __device__ __forceinline__ void stage(std::uint32_t buf, const float (&acc)[Tr::kDkvRegs], float mul) const {
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const int r = key_row + hf * 8;
#pragma unroll
      for (int j = 0; j < Tr::kHeadDim / Tr::kMmaN; ++j) {
        const int i = 4 * j + 2 * hf;
        ptx::st_shared_u32(buf + r * kRowBytes + ((j ^ (r % Tr::kAtomRows)) * Tr::kUnitBytes) +
                               col_lane * int(sizeof(Elem)),
                           ptx::pack2<Elem>(acc[i] * mul, acc[i + 1] * mul));
      }
    }
  }
  // The staged rows of buf out to dst (dK or dV), rows past seq_k left out.
  __device__ __forceinline__ void copy_out(std::uint32_t buf, Elem* dst) const {
#pragma unroll
    for (int pass = 0; pass < Tr::kWgKeys / kRowsPerPass; ++pass) {
      const int r = pass * kRowsPerPass + ctid / kRowUnits;
      const int u = ctid % kRowUnits;
      const int key = wg_key0 + r;
      const uint4 v = ld_shared_u32x4(buf + r * kRowBytes + ((u ^ (r % Tr::kAtomRows)) * Tr::kUnitBytes));
      if (key < seq_k)
        *reinterpret_cast<uint4*>(dst + (std::int64_t(w.kv_bh) * seq_k + key) * Tr::kHeadDim +
                                  u * (Tr::kUnitBytes / int(sizeof(Elem)))) = v;
    }
  }
  // One block per tile: dK to ring stage free_st, the one the next step would have used (both
  // consumers finished with it before the last step's barrier, and the producer loads nothing more),
  // Q's half for consumer 0 and dO's for consumer 1; dV to this consumer's dQ staging buffer, once
  // ctid 0's bulk wait (the caller's) says the last reduction has read it.
  __device__ __forceinline__ void via_ring(const BwdSmem<Tr>& sm, int cw, int free_st,
                                           const float (&dk)[Tr::kDkvRegs],
                                           const float (&dv)[Tr::kDkvRegs], float scale, Elem* gdk,
                                           Elem* gdv) const {
    const std::uint32_t buf_k = cw == 0 ? sm.q(free_st) : sm.dout(free_st);
    const std::uint32_t buf_v = sm.dq(cw);
    stage(buf_k, dk, scale);
    ptx::named_bar_sync(Tr::kBarDq0 + cw, Tr::kWgThreads);  // ctid 0 waited: buf_v is free
    stage(buf_v, dv, 1.f);
    ptx::named_bar_sync(Tr::kBarDq0 + cw, Tr::kWgThreads);
    copy_out(buf_k, gdk);
    copy_out(buf_v, gdv);
  }
};

// Consumer warpgroup cw: keys [n0 + 64 cw, n0 + 64 cw + 64). g0: ring slot of the tile's first step,
// tile_i: tiles this block has done before (both 0 unless persistent); tail_slot: a shared tail's piece's slot
// (kTailShare; -1: a whole tile).
template <typename Tr>
__device__ __forceinline__ void bwd_consume(const BwdParams& prm, const BwdSmem<Tr>& sm,
                                            const BwdBarriers<Tr>& bars, const BwdWork& w, int cw,
                                            int g0 = 0, int tile_i = 0, int tail_slot = -1) {
  using Elem = typename Tr::Elem;
  const int ctid = threadIdx.x % Tr::kWgThreads;
  const int warp = ctid / Tr::kWarpSize;
  const int lane = ctid % Tr::kWarpSize;
  const int wg_key0 = w.n0 + cw * Tr::kWgKeys;
  const int key_row = warp * Tr::kWarpKeys + lane / 4;  // this thread's first row among the 64
  const int col_lane = 2 * (lane % 4);                   // first accumulator column
  const int seq_k = prm.mask.seq_k;
  const int offset = prm.mask.offset();  // causal: query i sees keys <= i + offset
  const int n_dq_tiles = prm.seq_pad / Tr::kDqRows;
  const BwdGemms<Tr> gemm(sm, cw);

  float dk[Tr::kDkvRegs], dv[Tr::kDkvRegs];
#pragma unroll
  for (int i = 0; i < Tr::kDkvRegs; ++i) dk[i] = dv[i] = 0.f;
  float s[Tr::kSRegs], dp[Tr::kSRegs], dq[Tr::kDqRegs];
  std::uint32_t p[Tr::kPRegs], ds[Tr::kPRegs];

  ptx::mbar_wait(bars.kv_full(), tile_i & 1);
  for (int it = 0; it < w.steps; ++it) {
    const int g = g0 + it;  // ring slot
    const int st = g % Tr::kStages;
    const std::uint32_t parity = (g / Tr::kStages) & 1;
    const int m0 = w.m_tile(it) * Tr::kBlockM;
    // This step's first dQ accumulator block. Split dQ rows computes it here: in the send below, the
    // division in q_bh() kept its operands live across the step (ptxas spilled them at d = 64).
    auto dq_block_of = [&] {
      return (std::int64_t(w.q_bh(it)) * n_dq_tiles + m0 / Tr::kDqRows) * Tr::kDqBlocks;
    };
    const std::int64_t dq_block_early = Tr::kSplitDqRows ? dq_block_of() : 0;

    gemm.s_dp_t(s, dp, bars, st, parity);

    // P^T = exp2(S^T * scale log2 e - LSE log2 e); causal: 0 right of the (bottom-right aligned)
    // diagonal. Keys past seq_k need no mask: they are zeros, and their dK/dV rows are never stored.
    const bool need_mask = prm.mask.causal && wg_key0 + Tr::kWgKeys - 1 > m0 + offset;
    // with_mask: false compiles P^T without the mask's compares (mask branch: taken when no key of
    // this consumer's 64 is right of the diagonal for any of the step's queries, always without a
    // causal mask); true keeps them, under the runtime need_mask.
    auto p_tile = [&](auto with_mask) {
      // Key row key_row + 8 hf is hidden from query column m0 + col_lane + c where key > query + offset, that is
      // c - 8 hf < lim: with c and hf literals, one compare with an immediate a score and no column sums.
      const int lim = wg_key0 + key_row - offset - m0 - col_lane;
#pragma unroll
      for (int j = 0; j < Tr::kBlockM / Tr::kMmaN; ++j) {
        const int col = j * Tr::kMmaN + col_lane;
        const float2 lse = ptx::ld_shared_f32x2(sm.lse(st) + col * int(sizeof(float)));
#pragma unroll
        for (int i = 4 * j; i < 4 * j + 4; ++i) {
          const float l = i % 2 == 0 ? lse.x : lse.y;
          const float arg = fmaf(s[i], prm.scale_log2, -l);
          // Poly: i % 8 < kExp2PolyEighths on the FMA pipe (arg <= ~0 here; -inf gives 0 either way).
          float x = i % 8 < Tr::kExp2PolyEighths ? exp2_poly(arg) : ptx::exp2_approx(arg);
          if (decltype(with_mask)::value && need_mask) {
            if (j * Tr::kMmaN + i % 2 - 8 * ((i / 2) % 2) < lim) x = 0.f;
          }
          s[i] = x;
        }
      }
    };
    if constexpr (Tr::kMaskBranch) {
      if (need_mask)
        p_tile(std::true_type{});
      else
        p_tile(std::false_type{});
    } else {
      p_tile(std::true_type{});
    }
    if constexpr (!Tr::kSplitDqRows) {
      // dV runs while dS^T is computed: P^T (packed), S^T and dP^T live at once.
      gemm.p_dv(p, s, dv, st);
    } else {
      // 128 queries: S^T and dP^T are 64 registers each, dK and dV 32 each. P^T is packed in the
      // dS^T loop below, as S^T dies, and dV is issued after it (packing first and issuing dV here
      // would keep 224 accumulator registers live: ptxas spilled and serialised the wgmmas).
      ptx::wgmma_wait<0>();
    }
    ptx::fence_operands(dp);

    // dS^T = P^T o (dP^T - D), into registers (A of dK) and into shared memory (A of dQ).
    const int buf = g % Tr::kDsBuffers;
#pragma unroll
    for (int j = 0; j < Tr::kBlockM / Tr::kMmaN; ++j) {
      const int col = j * Tr::kMmaN + col_lane;
      const float2 dd = ptx::ld_shared_f32x2(sm.dsum(st) + col * int(sizeof(float)));
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int i = 4 * j + 2 * hf;
        const std::uint32_t pair =
            ptx::pack2<Elem>(s[i] * (dp[i] - dd.x), s[i + 1] * (dp[i + 1] - dd.y));
        ds[2 * j + hf] = pair;
        if constexpr (Tr::kSplitDqRows) p[2 * j + hf] = ptx::pack2<Elem>(s[i], s[i + 1]);
        const int r = cw * Tr::kWgKeys + key_row + hf * 8;  // row of dS^T in the block's keys
        const int unit = j % Tr::kAtomRows;                  // 16-byte unit of the chunk's row
        const std::uint32_t addr = sm.ds(buf) + (j / Tr::kAtomRows) * Tr::kDsChunkBytes +
                                   r * Tr::kSwizzleBytes +
                                   ((unit ^ (r % Tr::kAtomRows)) * Tr::kUnitBytes) +
                                   col_lane * int(sizeof(Elem));
        ptx::st_shared_u32(addr, pair);
      }
    }
    if constexpr (Tr::kSplitDqRows) {  // dV runs across the barrier
      ptx::wgmma_fence();
      gemm.dv(dv, p, st);
      ptx::wgmma_commit();
    }
    ptx::fence_proxy_async_smem();  // dQ's wgmma reads what the stores above wrote
    ptx::named_bar_sync(Tr::kBarDs0 + (Tr::kSharedDs ? 0 : cw), Tr::kBarDsThreads);
    // dQ before dK: dQ is staged and sent off while the tensor cores compute dK.
    ptx::wgmma_fence();
    gemm.dq(dq, buf);
    ptx::wgmma_commit();
    gemm.dk(dk, ds, st);
    ptx::wgmma_commit();
    ptx::wgmma_wait<1>();  // dV, dQ done; dK may still run
    ptx::fence_operands(dv);
    ptx::fence_operands(dq);
    ptx::fence_operands(p);

    // dQ += scale * dS K: stage this consumer's block, then one bulk reduction into global memory.
    send_dq_block<Tr>(prm, sm, cw, ctid, dq, [&] {
      // split dQ: this consumer's column block; split dQ rows: its 64-row tile.
      const std::int64_t dq_block = Tr::kSplitDqRows ? dq_block_early : dq_block_of();
      return prm.dq_acc + (dq_block + (Tr::kSplitDq || Tr::kSplitDqRows ? cw : 0)) * Tr::kDqWgFloats;
    });
    ptx::wgmma_wait<0>();  // dK done: Q and dO of this stage are free
    ptx::fence_operands(dk);
    ptx::fence_operands(ds);
    // Every consumer thread arrives: each has read this stage's LSE and D with ordinary loads, and
    // its own arrival orders those reads before the producer's next copy into the stage.
    ptx::mbar_arrive(bars.empty(st));
  }
  if constexpr (Tr::kPersistent) {
    // Every GEMM that reads K or V is done (the last step waited for all): the producer may load
    // the next tile's while this one's dK and dV are stored. The caller waits for the reductions.
    ptx::mbar_arrive(bars.kv_empty());
  } else if constexpr (!Tr::kHeadSplit && !Tr::kTail) {  // split: send_acc_block waits for what it needs
    if (ctid == 0) ptx::bulk_wait_group_all();
  }

  if constexpr (Tr::kHeadSplit) {
    send_dkv_partials<Tr>(prm, sm, w, cw, ctid, wg_key0, dk, dv);
    return;
  }
  if constexpr (Tr::kQTail) {
    if (blockIdx.x >= unsigned(prm.tail_first)) {
      send_dkv_tail<Tr>(prm, sm, cw, ctid, dk, dv, qtail_slot(prm));
      return;
    }
  }
  if constexpr (Tr::kTailShare) {
    if (tail_slot >= 0) {
      send_dkv_tail<Tr>(prm, sm, cw, ctid, dk, dv, tail_slot);
      return;
    }
  }
  Elem* gdk = static_cast<Elem*>(prm.dk);
  Elem* gdv = static_cast<Elem*>(prm.dv);
  if constexpr (Tr::kEpiSmem) {
    // Staged (DkvRowStore). One block per tile (d = 128): dK to the ring stage the next step would
    // have used and dV to this consumer's dQ staging buffer (DkvRowStore::via_ring). Persistent
    // (d = 64: the ring holds the next tile's first step): both in the dQ buffer (2 x 8 KB of its
    // 16 KB).
    const DkvRowStore<Tr> out{w, ctid, key_row, col_lane, wg_key0, seq_k};
    if constexpr (Tr::kPersistent) {
      const std::uint32_t buf_k = sm.dq(cw);
      const std::uint32_t buf_v = buf_k + Tr::kWgKeys * out.kRowBytes;
      if (ctid == 0) ptx::bulk_wait_group_read_all();  // the last reduction has read the buffer
      ptx::named_bar_sync(Tr::kBarDq0 + cw, Tr::kWgThreads);
      out.stage(buf_k, dk, prm.scale);
      out.stage(buf_v, dv, 1.f);
      ptx::named_bar_sync(Tr::kBarDq0 + cw, Tr::kWgThreads);
      out.copy_out(buf_k, gdk);
      out.copy_out(buf_v, gdv);
      // The next write of the buffer (send_dq_block) syncs the warpgroup before it.
    } else if constexpr (Tr::kTail) {
      // dK to the stage the next step would have used, dV to the last step's once both consumers
      // are done with its Q and dO (their last dK and dV waited above): no wait for the last dQ
      // reduction on this path; only its read of the dQ buffer before the block's exit.
      const int free_st = (g0 + w.steps) % Tr::kStages;
      const int last_st = (g0 + w.steps - 1) % Tr::kStages;
      const std::uint32_t buf_k = cw == 0 ? sm.q(free_st) : sm.dout(free_st);
      const std::uint32_t buf_v = cw == 0 ? sm.q(last_st) : sm.dout(last_st);
      out.stage(buf_k, dk, prm.scale);
      ptx::named_bar_sync(Tr::kBarDs0, Tr::kBarDsThreads);  // both consumers: the last stage is free
      out.stage(buf_v, dv, 1.f);
      ptx::named_bar_sync(Tr::kBarDq0 + cw, Tr::kWgThreads);
      out.copy_out(buf_k, gdk);
      out.copy_out(buf_v, gdv);
      if (ctid == 0) ptx::bulk_wait_group_read_all();  // the shared memory outlives its last read
    } else {
      out.via_ring(sm, cw, (g0 + w.steps) % Tr::kStages, dk, dv, prm.scale, gdk, gdv);
    }
  } else {
    // dK (times the softmax scale) and dV for this consumer's keys, straight from the accumulators.
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const int key = wg_key0 + key_row + hf * 8;
      if (key >= seq_k) continue;
      const std::int64_t row = (std::int64_t(w.kv_bh) * seq_k + key) * Tr::kHeadDim;
#pragma unroll
      for (int j = 0; j < Tr::kHeadDim / Tr::kMmaN; ++j) {
        const int i = 4 * j + 2 * hf;
        const int col = j * Tr::kMmaN + col_lane;
        *reinterpret_cast<std::uint32_t*>(gdk + row + col) =
            ptx::pack2<Elem>(dk[i] * prm.scale, dk[i + 1] * prm.scale);
        *reinterpret_cast<std::uint32_t*>(gdv + row + col) = ptx::pack2<Elem>(dv[i], dv[i + 1]);
      }
    }
  }
}

// The two 16-bit values of a packed pair as floats (lo = the first, as ptx::pack2 packs them).
template <typename Elem> __device__ __forceinline__ float2 unpack2_f32(std::uint32_t w);
template <> __device__ __forceinline__ float2 unpack2_f32<__nv_bfloat16>(std::uint32_t w) {
  return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xFFFF0000u));
}
template <> __device__ __forceinline__ float2 unpack2_f32<__half>(std::uint32_t w) {
  __half2 h;
  memcpy(&h, &w, sizeof(w));
  return __half22float2(h);
}

// Q80 (d = 128; BwdTraits::kQ80): consumer cw's keys [n0 + 64 cw, n0 + 64 cw + 64), 80
// queries a step. The order of bwd_consume (dV issued as P^T is packed, dQ before dK); dS goes to
// shared memory query-major (row q: the block's 128 keys as two 64-key chunks, chunk cw written by
// consumer cw) and dQ^T = K^T dS^T (A = K's chunk cw of d, MN-major; B = dS, K-major).
// kQ80Mask (session 12): also causal passes, and the GQA head split's units (partial dK, dV into fp32
// accumulators, as bwd_consume's split). kShort (session 34): a head's last tile of at most 32 rows as a step
// of 32 queries.
template <typename Tr>
__device__ __forceinline__ void bwd_consume_q80(const BwdParams& prm, const BwdSmem<Tr>& sm,
                                                const BwdBarriers<Tr>& bars, const BwdWork& w, int cw) {
  using Elem = typename Tr::Elem;
  constexpr int kStepsPerChunk = Tr::kChunkElems / Tr::kMmaK;
  auto units = [](int bytes) { return std::uint64_t(bytes / Tr::kUnitBytes); };
  const int ctid = threadIdx.x % Tr::kWgThreads;
  const int warp = ctid / Tr::kWarpSize;
  const int lane = ctid % Tr::kWarpSize;
  const int wg_key0 = w.n0 + cw * Tr::kWgKeys;
  const int col_lane = 2 * (lane % 4);  // first accumulator column
  const int seq_k = prm.mask.seq_k;
  const int offset = prm.mask.offset();  // causal: query i sees keys <= i + offset
  const int n_dq_tiles = prm.seq_pad / Tr::kBlockM;
  const BwdGemms<Tr> gemm(sm, cw);  // S^T, dP^T, dV, dK as bwd_consume's (N = 80, 5 k16 steps)
  // A of dQ^T: K's chunk cw (this consumer's 64 columns of d), MN-major; B: dS, K-major.
  const std::uint64_t desc_kta =
      ptx::make_desc_sw128(sm.k() + cw * Tr::kKVChunkBytes, Tr::kKVChunkBytes, Tr::kAtomBytes);
  const std::uint64_t desc_dsb = ptx::make_desc_sw128(sm.ds(0), Tr::kUnitBytes, Tr::kAtomBytes);
  // stmatrix: lane l gives row l % 8 of tile l / 8; tile i of instruction t is dS^T's 8 x 8 block
  // (keys 16 warp + 8 (i % 2) .., queries 8 (2t + i / 2) ..), stored as 8 query rows of 8 keys (one
  // 16-byte unit, unit 2 warp + i % 2 of chunk cw's row, swizzled by the row).
  const int st_row = lane % 8;
  const int st_tile = lane / 8;
  const int st_unit = (2 * warp + st_tile % 2) ^ st_row;  // (q % 8 == st_row for every q of the tile)
  const std::uint32_t st_base =
      cw * Tr::kDsChunkBytes + (8 * (st_tile / 2) + st_row) * Tr::kSwizzleBytes + st_unit * Tr::kUnitBytes;

  float dk[Tr::kDkvRegs], dv[Tr::kDkvRegs];
#pragma unroll
  for (int i = 0; i < Tr::kDkvRegs; ++i) dk[i] = dv[i] = 0.f;

  // Step i of ww (the block's work; kShort: its whole or its short steps), the block's step it (its ring slot): query
  // tile mt, its kN queries from the tile's first (kN = kBlockM; kShortRows for a short last tile). Everything per step
  // lives here: only dK and dV cross steps.
  auto step = [&](auto queries, const BwdWork& ww, int i, int it) {
    const int st = it % Tr::kStages;
    const std::uint32_t parity = (it / Tr::kStages) & 1;
    const int mt = ww.m_tile(i);
    constexpr int kN = decltype(queries)::value;
    constexpr int kColGroups = kN / Tr::kMmaN;  // n8 groups of queries (10 in a whole step)
    float s[kN / 2], dp[kN / 2], dq[kN / 2];
    std::uint32_t p[kN / 4], ds[kN / 4];

    gemm.template s_dp_t<kN>(s, dp, bars, st, parity);

    // P^T = exp2(S^T * scale log2 e - LSE log2 e); keys past seq_k are zeros. kQ80Mask: 0 right of
    // the (bottom-right aligned) causal diagonal, on the steps where some of this consumer's keys are
    // right of the step's first query's diagonal (the step's rows before the key tile's first visible
    // row too: they see none of its keys).
    const int m0 = mt * Tr::kBlockM;
    const bool need_mask = Tr::kQ80Mask && prm.mask.causal && wg_key0 + Tr::kWgKeys - 1 > m0 + offset;
#pragma unroll
    for (int j = 0; j < kColGroups; ++j) {
      const int col = j * Tr::kMmaN + col_lane;
      const float2 lse = ptx::ld_shared_f32x2(sm.lse(st) + col * int(sizeof(float)));
#pragma unroll
      for (int i = 4 * j; i < 4 * j + 4; ++i) {
        float x = ptx::exp2_approx(fmaf(s[i], prm.scale_log2, i % 2 == 0 ? -lse.x : -lse.y));
        if (need_mask) {  // false at compile time without kQ80Mask
          // (Not p_tile's literal columns: here they cost the bf16 kQ80Mask | kBwd128Short kernels 20 bytes of spills.)
          const int key = wg_key0 + warp * Tr::kWarpKeys + lane / 4 + ((i / 2) % 2) * 8;
          if (key > m0 + col + i % 2 + offset) x = 0.f;
        }
        s[i] = x;
      }
    }
    // P^T packed (S^T dies), dV issued; dS^T = P^T o (dP^T - D) then reads P^T back from the packed
    // 16-bit pairs. Keeping S^T in fp32 for dS^T while dV is issued is 228 live accumulator registers
    // at 80 queries (ptxas serialised the wgmmas), and waiting for dP^T before dV's issue lets ptxas
    // hoist that wait above most of the exponentials (no overlap with dP^T then). The extra rounding
    // is P^T's to 16 bits (2^-9 relative in bf16), which dV's operand has anyway.
    gemm.template p_dv<kN>(p, s, dv, st);
    ptx::fence_operands(dp);
    const int buf = it % Tr::kDsBuffers;
#pragma unroll
    for (int j = 0; j < kColGroups; ++j) {
      const int col = j * Tr::kMmaN + col_lane;
      const float2 dd = ptx::ld_shared_f32x2(sm.dsum(st) + col * int(sizeof(float)));
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int i = 4 * j + 2 * hf;
        const float2 pf = unpack2_f32<Elem>(p[2 * j + hf]);
        ds[2 * j + hf] = ptx::pack2<Elem>(pf.x * (dp[i] - dd.x), pf.y * (dp[i + 1] - dd.y));
      }
    }
    // dS^T transposed into shared memory (B of dQ^T), while dV runs; a short step writes the buffer's first kN
    // query rows, all that its dQ^T reads.
#pragma unroll
    for (int t = 0; t < kColGroups / 2; ++t)  // tiles (j, hf) = (2t, 0), (2t, 1), (2t + 1, 0), (2t + 1, 1)
      ptx::stmatrix_x4_trans(sm.ds(buf) + st_base + t * 2 * Tr::kMmaN * Tr::kSwizzleBytes, ds[4 * t],
                             ds[4 * t + 1], ds[4 * t + 2], ds[4 * t + 3]);
    ptx::fence_proxy_async_smem();  // dQ^T's wgmma reads what the stores above wrote
    ptx::named_bar_sync(Tr::kBarDs0, Tr::kBarDsThreads);  // both consumers' keys are in
    // dV done before dQ^T is issued: with P^T's packed registers still read by dV beside dQ^T's 40
    // accumulators, dS^T, dK and dV (208), ptxas serialised the wgmmas (C7512).
    ptx::wgmma_wait<0>();
    ptx::fence_operands(dv);
    ptx::fence_operands(p);
    // dQ^T over the block's 128 keys (both chunks of dS), then dK.
    ptx::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Tr::kDqSteps; ++kk)
      ptx::wgmma_ss_at<Elem, kN>(
          dq, desc_kta + units(kk * Tr::kMmaKRowsBytes),
          desc_dsb + units(buf * Tr::kDsBytes + (kk / kStepsPerChunk) * Tr::kDsChunkBytes +
                           (kk % kStepsPerChunk) * Tr::kMmaKBytes),
          kk > 0);
    ptx::wgmma_commit();
    gemm.template dk<kN>(dk, ds, st);
    ptx::wgmma_commit();
    ptx::wgmma_wait<1>();  // dQ^T done; dK may still run
    ptx::fence_operands(dq);

    // dQ^T block (this consumer's 64 columns of d, the step's queries) into the accumulator: a short step
    // adds the first kN queries of the tile's block (its float4 groups are the n8 groups of queries in order).
    send_dq_block<Tr, kN / 2>(prm, sm, cw, ctid, dq, [&] {
      return prm.dq_acc +
             ((std::int64_t(ww.q_bh(i)) * n_dq_tiles + mt) * Tr::kDqBlocks + cw) * Tr::kDqWgFloats;
    });
    ptx::wgmma_wait<0>();  // dK done: Q and dO of this stage are free
    ptx::fence_operands(dk);
    ptx::fence_operands(ds);
    ptx::mbar_arrive(bars.empty(st));
  };

  ptx::mbar_wait(bars.kv_full(), 0);
  if constexpr (Tr::kShort) {  // the whole steps, then the short ones (bwd_short_split)
    const BwdShortSplit sp = bwd_short_split<Tr>(prm, w);
    for (int it = 0; it < sp.whole.steps; ++it) step(std::integral_constant<int, Tr::kBlockM>{}, sp.whole, it, it);
    for (int h = 0; h < sp.tail.steps; ++h)
      step(std::integral_constant<int, Tr::kShortRows>{}, sp.tail, h, sp.whole.steps + h);
  } else {
    for (int it = 0; it < w.steps; ++it) step(std::integral_constant<int, Tr::kBlockM>{}, w, it, it);
  }
  if constexpr (Tr::kHeadSplit) {
    // The unit decoded again (one block per unit): kept across the loop, its plane was the one value
    // ptxas spilled (4 bytes, bf16).
    send_dkv_partials<Tr>(prm, sm, bwd_work<Tr>(prm, blockIdx.x), cw, ctid, wg_key0, dk, dv);
    return;
  }
  if constexpr (Tr::kQTail) {
    if (blockIdx.x >= unsigned(prm.tail_first)) {
      send_dkv_tail<Tr>(prm, sm, cw, ctid, dk, dv, qtail_slot(prm));
      return;
    }
  }
  if (ctid == 0) ptx::bulk_wait_group_all();

  // dK (times the softmax scale) and dV staged as whole rows, as bwd_consume's staged epilogue.
  Elem* gdk = static_cast<Elem*>(prm.dk);
  Elem* gdv = static_cast<Elem*>(prm.dv);
  const int key_row = warp * Tr::kWarpKeys + lane / 4;
  const DkvRowStore<Tr> out{w, ctid, key_row, col_lane, wg_key0, seq_k};
  out.via_ring(sm, cw, w.steps % Tr::kStages, dk, dv, prm.scale, gdk, gdv);
}

// Split head (d = 256, see flash_sm90_bwd_traits.h): both consumers on the block's 64 keys.
// Consumer cw computes S^T and dP^T for query columns [32 cw, 32 cw + 32) of each tile, and dK, dV,
// dQ for columns [128 cw, 128 cw + 128) of d. P^T and dS^T meet in shared memory.
template <typename Tr>
__device__ __forceinline__ void bwd_consume_split_head(const BwdParams& prm, const BwdSmem<Tr>& sm,
                                                       const BwdBarriers<Tr>& bars,
                                                       const BwdWork& w, int cw) {
  using Elem = typename Tr::Elem;
  constexpr int kStepsPerChunk = Tr::kChunkElems / Tr::kMmaK;
  constexpr int kColChunks = Tr::kWgCols / Tr::kChunkElems;  // d chunks per consumer
  auto units = [](int bytes) { return std::uint64_t(bytes / Tr::kUnitBytes); };
  const int ctid = threadIdx.x % Tr::kWgThreads;
  const int warp = ctid / Tr::kWarpSize;
  const int lane = ctid % Tr::kWarpSize;
  const int key_row = warp * Tr::kWarpKeys + lane / 4;  // this thread's first row among the 64
  const int col_lane = 2 * (lane % 4);                   // first accumulator column
  const int q_half = cw * Tr::kWgQueries;                // first query column of S^T, dP^T
  const int chunk0 = cw * kColChunks;                    // first d chunk of dK, dV, dQ
  const int seq_k = prm.mask.seq_k;
  const int offset = prm.mask.offset();  // causal: query i sees keys <= i + offset
  const int n_qtiles = prm.seq_pad / Tr::kBlockM;

  // K-major operands step 32 bytes along a 128-byte row per k16; MN-major ones 16 rows.
  const std::uint64_t desc_k = ptx::make_desc_sw128(sm.k(), Tr::kUnitBytes, Tr::kAtomBytes);
  const std::uint64_t desc_v = ptx::make_desc_sw128(sm.v(), Tr::kUnitBytes, Tr::kAtomBytes);
  // B of S^T / dP^T: this consumer's 32 rows of Q / dO (4 atoms into each chunk), K-major.
  const std::uint64_t desc_q = ptx::make_desc_sw128(sm.q(0) + q_half * Tr::kSwizzleBytes,
                                                    Tr::kUnitBytes, Tr::kAtomBytes);
  const std::uint64_t desc_do = ptx::make_desc_sw128(sm.dout(0) + q_half * Tr::kSwizzleBytes,
                                                     Tr::kUnitBytes, Tr::kAtomBytes);
  // B of dK / dV: Q / dO, N = this consumer's 128 columns (two chunks, LBO apart), MN-major.
  const std::uint64_t desc_qt = ptx::make_desc_sw128(sm.q(0) + chunk0 * Tr::kQChunkBytes,
                                                     Tr::kQChunkBytes, Tr::kAtomBytes);
  const std::uint64_t desc_dot = ptx::make_desc_sw128(sm.dout(0) + chunk0 * Tr::kQChunkBytes,
                                                      Tr::kQChunkBytes, Tr::kAtomBytes);
  // A of dV / dK: P^T / dS^T (keys x queries), K-major; A of dQ: dS^T read as dS, MN-major.
  const std::uint64_t desc_p = ptx::make_desc_sw128(sm.p(0), Tr::kUnitBytes, Tr::kAtomBytes);
  const std::uint64_t desc_ds = ptx::make_desc_sw128(sm.ds(0), Tr::kUnitBytes, Tr::kAtomBytes);
  const std::uint64_t desc_dsq = ptx::make_desc_sw128(sm.ds(0), Tr::kDsBytes, Tr::kAtomBytes);
  // B of dQ: chunk (chunk0 + piece) of K, MN-major.
  const std::uint64_t desc_kt = ptx::make_desc_sw128(sm.k() + chunk0 * Tr::kKVChunkBytes,
                                                     Tr::kKVChunkBytes, Tr::kAtomBytes);

  float dk[Tr::kDkvRegs], dv[Tr::kDkvRegs];
#pragma unroll
  for (int i = 0; i < Tr::kDkvRegs; ++i) dk[i] = dv[i] = 0.f;
  float s[Tr::kSRegs], dp[Tr::kSRegs];
  float dq[Tr::kDqPieces][Tr::kDqRegs];

  // acc = A B^T over d: A = K or V (all 64 keys), B = this consumer's rows of Q or dO (stage s).
  auto nt = [&](float (&acc)[Tr::kSRegs], std::uint64_t a, std::uint64_t b, int stage_bytes) {
#pragma unroll
    for (int kk = 0; kk < Tr::kQKSteps; ++kk) {
      const int in_row = (kk % kStepsPerChunk) * Tr::kMmaKBytes;
      const int chunk = kk / kStepsPerChunk;
      ptx::wgmma_ss<Elem, Tr::kWgQueries>(
          acc, a + units(chunk * Tr::kKVChunkBytes + in_row),
          b + units(stage_bytes + chunk * Tr::kQChunkBytes + in_row), kk > 0);
    }
  };
  // acc += X^T B: X^T (keys x queries) from buffer b, B = dO or Q (stage) over this consumer's columns.
  auto tn = [&](float (&acc)[Tr::kDkvRegs], std::uint64_t x, std::uint64_t b, int buf_bytes,
                int stage_bytes) {
#pragma unroll
    for (int kk = 0; kk < Tr::kKVSteps; ++kk)
      ptx::wgmma_ss_bt<Elem, Tr::kWgCols>(acc, x + units(buf_bytes + kk * Tr::kMmaKBytes),
                                          b + units(stage_bytes + kk * Tr::kMmaKRowsBytes), 1);
  };
  // dQ block `piece` of this consumer = dS K over the block's 64 keys.
  auto dq_gemm = [&](float (&acc)[Tr::kDqRegs], int piece, int buf_bytes) {
#pragma unroll
    for (int kk = 0; kk < Tr::kDqSteps; ++kk)
      ptx::wgmma_ss_tt<Elem, Tr::kDqCols>(
          acc, desc_dsq + units(buf_bytes + kk * Tr::kMmaKRowsBytes),
          desc_kt + units(piece * Tr::kKVChunkBytes + kk * Tr::kMmaKRowsBytes), kk > 0);
  };
  // Stage dQ block `piece` and reduce it into the accumulator in global memory.
  auto send_dq = [&](const float (&acc)[Tr::kDqRegs], int piece, std::int64_t tile) {
    send_dq_block<Tr>(prm, sm, cw, ctid, acc, [&] {
      return prm.dq_acc + (tile * Tr::kDqBlocks + cw * Tr::kDqPieces + piece) * Tr::kDqWgFloats;
    });
  };

  ptx::mbar_wait(bars.kv_full(), 0);
  for (int it = 0; it < w.steps; ++it) {
    const int st = it % Tr::kStages;
    const std::uint32_t parity = (it / Tr::kStages) & 1;
    const int sd = it % Tr::kDoStages;
    const std::uint32_t do_parity = (it / Tr::kDoStages) & 1;
    const int m0 = w.m_tile(it) * Tr::kBlockM;
    const int buf = it % Tr::kDsBuffers;

    ptx::mbar_wait(bars.q_full(st), parity);
    ptx::wgmma_fence();
    nt(s, desc_k, desc_q, st * Tr::kQBytes);
    ptx::wgmma_commit();
    ptx::mbar_wait(bars.do_full(sd), do_parity);
    ptx::wgmma_fence();
    nt(dp, desc_v, desc_do, sd * Tr::kQBytes);
    ptx::wgmma_commit();
    ptx::wgmma_wait<1>();
    ptx::fence_operands(s);

    // P^T = exp2(S^T * scale log2 e - LSE log2 e); causal: 0 right of the (bottom-right aligned)
    // diagonal. Keys past seq_k are zeros (no dK/dV rows stored; their dQ terms are times K = 0).
    const bool need_mask = prm.mask.causal && w.n0 + Tr::kBlockN - 1 > m0 + q_half + offset;
#pragma unroll
    for (int j = 0; j < Tr::kWgQueries / Tr::kMmaN; ++j) {
      const int col = q_half + j * Tr::kMmaN + col_lane;  // query within the tile
      const float2 lse = ptx::ld_shared_f32x2(sm.lse(st) + col * int(sizeof(float)));
#pragma unroll
      for (int i = 4 * j; i < 4 * j + 4; ++i) {
        const float l = i % 2 == 0 ? lse.x : lse.y;
        float x = ptx::exp2_approx(fmaf(s[i], prm.scale_log2, -l));
        if (need_mask) {
          const int key = w.n0 + key_row + ((i / 2) % 2) * 8;
          if (key > m0 + col + i % 2 + offset) x = 0.f;
        }
        s[i] = x;
      }
    }
    ptx::wgmma_wait<0>();
    ptx::fence_operands(dp);

    // P^T and dS^T = P^T o (dP^T - D) into this consumer's columns of the 128-byte swizzled rows.
#pragma unroll
    for (int j = 0; j < Tr::kWgQueries / Tr::kMmaN; ++j) {
      const int col = q_half + j * Tr::kMmaN + col_lane;
      const int unit = col / Tr::kMmaN;  // 16-byte unit of the row
      const float2 dd = ptx::ld_shared_f32x2(sm.dsum(sd) + col * int(sizeof(float)));
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int i = 4 * j + 2 * hf;
        const int r = key_row + hf * 8;
        const std::uint32_t at = r * Tr::kSwizzleBytes + ((unit ^ (r % Tr::kAtomRows)) * Tr::kUnitBytes) +
                                 col_lane * int(sizeof(Elem));
        ptx::st_shared_u32(sm.p(buf) + at, ptx::pack2<Elem>(s[i], s[i + 1]));
        ptx::st_shared_u32(sm.ds(buf) + at,
                           ptx::pack2<Elem>(s[i] * (dp[i] - dd.x), s[i + 1] * (dp[i + 1] - dd.y)));
      }
    }
    ptx::fence_proxy_async_smem();  // the wgmmas below read what the stores above wrote
    ptx::named_bar_sync(Tr::kBarDs0, Tr::kBarDsThreads);  // both halves are in

    const int buf_bytes = buf * Tr::kDsBytes;
    ptx::wgmma_fence();
    dq_gemm(dq[0], 0, buf_bytes);
    ptx::wgmma_commit();
    tn(dv, desc_p, desc_dot, buf_bytes, sd * Tr::kQBytes);
    ptx::wgmma_commit();
#pragma unroll
    for (int pc = 1; pc < Tr::kDqPieces; ++pc) {
      dq_gemm(dq[pc], pc, buf_bytes);
      ptx::wgmma_commit();
    }
    tn(dk, desc_ds, desc_qt, buf_bytes, st * Tr::kQBytes);
    ptx::wgmma_commit();

    const std::int64_t tile = std::int64_t(w.q_bh(it)) * n_qtiles + m0 / Tr::kBlockM;
    ptx::wgmma_wait<Tr::kDqPieces + 1>();  // dQ block 0 done
    ptx::fence_operands(dq[0]);
    send_dq(dq[0], 0, tile);
    ptx::wgmma_wait<1>();  // dV and every dQ block done; dK may still run
    ptx::fence_operands(dv);
    // Every consumer thread arrives: each has read D with ordinary loads, and its own arrival
    // orders those reads before the producer's next copy into the stage.
    ptx::mbar_arrive(bars.do_empty(sd));
#pragma unroll
    for (int pc = 1; pc < Tr::kDqPieces; ++pc) {
      ptx::fence_operands(dq[pc]);
      send_dq(dq[pc], pc, tile);
    }
    ptx::wgmma_wait<0>();  // dK done: Q of this stage is free
    ptx::fence_operands(dk);
    ptx::mbar_arrive(bars.empty(st));
  }
  if (ctid == 0) ptx::bulk_wait_group_all();

  // dK (times the softmax scale) and dV for the block's keys, this consumer's columns.
  Elem* gdk = static_cast<Elem*>(prm.dk);
  Elem* gdv = static_cast<Elem*>(prm.dv);
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const int key = w.n0 + key_row + hf * 8;
    if (key >= seq_k) continue;
    const std::int64_t row = (std::int64_t(w.kv_bh) * seq_k + key) * Tr::kHeadDim;
#pragma unroll
    for (int j = 0; j < Tr::kWgCols / Tr::kMmaN; ++j) {
      const int i = 4 * j + 2 * hf;
      const int col = chunk0 * Tr::kChunkElems + j * Tr::kMmaN + col_lane;
      *reinterpret_cast<std::uint32_t*>(gdk + row + col) =
          ptx::pack2<Elem>(dk[i] * prm.scale, dk[i + 1] * prm.scale);
      *reinterpret_cast<std::uint32_t*>(gdv + row + col) = ptx::pack2<Elem>(dv[i], dv[i + 1]);
    }
  }
}

#endif  // FB_PTX_SM90A

template <typename Tr>
__global__ void __launch_bounds__(Tr::kThreads, 1)
    flash_sm90_bwd_kernel(const __grid_constant__ BwdParams prm) {
#if FB_PTX_SM90A
  // FB_SM90_BWD_LAUNCHES=pdl (flash_sm90_bwd.cu, launch_setting()): the converts' blocks may start once every block
  // here has; this block sets up its barriers while the pre-pass may still run, then waits for it (and its writes:
  // LSE, D, the zeroed accumulators) before any role touches global memory. Both no-ops in stream order.
  pdl_launch_dependents();
  extern __shared__ __align__(16) unsigned char fb_sm90_bwd_smem[];
  const std::uint32_t base = (ptx::smem_addr(fb_sm90_bwd_smem) + Tr::kAtomBytes - 1) &
                             ~std::uint32_t(Tr::kAtomBytes - 1);
  const BwdSmem<Tr> sm{base};
  const BwdBarriers<Tr> bars{base + Tr::kOffBar};
  const BwdWork w = bwd_block_work<Tr>(prm);  // persistent: the first tile

  if (threadIdx.x == 0) {
    ptx::mbar_init(bars.kv_full(), 1);
#pragma unroll
    for (int s = 0; s < Tr::kStages; ++s) {
      ptx::mbar_init(bars.q_full(s), 1);
      ptx::mbar_init(bars.empty(s), Tr::kConsumerThreads);
    }
#pragma unroll
    for (int s = 0; s < Tr::kDoStages; ++s) {
      ptx::mbar_init(bars.do_full(s), 1);
      if constexpr (Tr::kSplitHead) ptx::mbar_init(bars.do_empty(s), Tr::kConsumerThreads);
    }
    if constexpr (Tr::kPersistent) ptx::mbar_init(bars.kv_empty(), Tr::kConsumerThreads);
    ptx::fence_mbar_init();
  }
  __syncthreads();
  pdl_wait_primary();

  const int wg = threadIdx.x / Tr::kWgThreads;
  if (wg == 0) {
    ptx::setmaxnreg_dec<Tr::kProducerRegs>();
    if (threadIdx.x == 0) bwd_produce<Tr>(prm, sm, bars, w);
  } else {
    ptx::setmaxnreg_inc<Tr::kConsumerRegs>();
    if constexpr (Tr::kPersistent) {
      int g = 0;  // ring slot of the tile's first step
      int i = 0;  // tiles (and tail pieces) done
      if constexpr (Tr::kDynTiles) {
        for (;; ++i) {  // the producer's tiles (bwd_produce); bwd_consume then waits on the same phase again
          ptx::mbar_wait(bars.kv_full(), i & 1);
          const int tile = int(ptx::ld_shared_u32(sm.base + Tr::kOffTile));
          if (tile < 0) break;
          const BwdWork w = bwd_work<Tr>(prm, unsigned(tile));
          bwd_consume<Tr>(prm, sm, bars, w, wg - 1, g, i);
          g += w.steps;
        }
      } else {
        for (int tile = blockIdx.x; tile < bwd_whole_end<Tr>(prm); tile += gridDim.x, ++i) {
          const BwdWork w = bwd_work<Tr>(prm, tile);
          bwd_consume<Tr>(prm, sm, bars, w, wg - 1, g, i);
          g += w.steps;
        }
      }
      bwd_for_each_tail_piece<Tr>(prm, [&](const BwdWork& w, int slot) {
        bwd_consume<Tr>(prm, sm, bars, w, wg - 1, g, i, slot);
        g += w.steps;
        ++i;
      });
      if (threadIdx.x % Tr::kWgThreads == 0) ptx::bulk_wait_group_all();
    } else if constexpr (Tr::kSplitHead) {
      bwd_consume_split_head<Tr>(prm, sm, bars, w, wg - 1);
    } else if constexpr (Tr::kQ80) {
      bwd_consume_q80<Tr>(prm, sm, bars, w, wg - 1);
    } else {
      bwd_consume<Tr>(prm, sm, bars, w, wg - 1);
    }
  }
#else
  __trap();
#endif
}

}  // namespace fb::cuda::flash_sm90
