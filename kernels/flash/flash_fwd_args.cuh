// What both forward kernels read: the raw pointers and sizes of AttentionParams, typed, plus the
// constants derived from them once on the host.
#pragma once

#include <cstdint>

#include "attention.h"
#include "common/device_caps.h"
#include "common/mask.h"
#include "common/softmax.cuh"
#include "common/tile_order.h"

namespace fb::cuda::flash {

template <typename Elem, typename Accum>
struct FwdArgs {
  const Elem* q;  // [batch, heads, seq_q, d]
  const Elem* k;  // [batch, kv_heads, seq_k, d]
  const Elem* v;  // [batch, kv_heads, seq_k, d]
  Elem* o;        // [batch, heads, seq_q, d]
  Accum* lse;     // [batch, heads, seq_q], natural log (-inf for a row with no visible key)
  int heads;
  int kv_heads;
  int group;         // query heads per K/V head
  Accum scale;       // softmax scale
  Accum scale_log2;  // scale * log2(e): scores go straight into exp2
  CausalMask mask;  // also carries seq_q and seq_k
  // Work tiles (common/tile_order.h): block t of the 1-D grid runs grouped_tile(t, ...).
  int planes;       // batch * heads
  int q_tiles;      // query tiles per plane
  int plane_group;  // planes whose tiles run together, their K/V sized to stay in L2
  // kFwdL2Prefetch: blocks the device holds at once (0: no prefetch). 8-byte aligned, past the 4 bytes of padding
  // after plane_group: the kernels that do not read it load their parameters as before (nvcc loads plane_group
  // and a field next to it as one 8-byte pair).
  alignas(8) int prefetch_ahead;
  // kFwdQBandTail: query tiles [0, band_tail) of every plane run last, in grouped order (banded_tail_tile). In an
  // 8-byte slot of its own (not in prefetch_ahead's padding, where nvcc would load the pair as one 8-byte
  // vector): the kernels that do not read it keep their code, only the parameter's size grows by 8 bytes.
  alignas(8) int band_tail;
  // kFwdPdlTail: the first work tile of this launch (block b runs tile tile_base + b). Its own 8-byte slot, last, as
  // band_tail's: the kernels that do not read it keep their code.
  alignas(8) int tile_base;
  // kFwdKvTail (in slots after tile_base's, so that the kernels that do not read them keep their code): the tail
  // launch's blocks a work tile (1: none; block b runs tile tile_base + b / kv_splits, piece b % kv_splits), the
  // first launch's count of tail counters to zero (blocks [0, tail_zero) zero one each), and in params.workspace the
  // pieces' partials (kv_tail_part_floats a piece, in order: tail tile, then piece) and the tail's counters.
  alignas(8) int kv_splits;
  int tail_zero;
  float* tail_part;
  unsigned* tail_count;
};

template <typename Elem, typename Accum>
FwdArgs<Elem, Accum> make_fwd_args(const AttentionParams& p) {
  FwdArgs<Elem, Accum> a;
  a.q = static_cast<const Elem*>(p.q);
  a.k = static_cast<const Elem*>(p.k);
  a.v = static_cast<const Elem*>(p.v);
  a.o = static_cast<Elem*>(p.o);
  a.lse = static_cast<Accum*>(p.lse);
  a.heads = p.heads;
  a.kv_heads = p.kv_heads;
  a.group = p.group();
  a.scale = Accum(p.scale);
  a.scale_log2 = Accum(p.scale * kLog2e);
  a.mask = p.mask();
  a.prefetch_ahead = 0;
  a.band_tail = 0;
  a.tile_base = 0;
  a.kv_splits = 1;
  a.tail_zero = 0;
  a.tail_part = nullptr;
  a.tail_count = nullptr;
  return a;
}

// The launch order of a forward with query tiles of `br` rows: fills a's tile fields and returns the
// blocks of its 1-D grid. Non-causal: a plane group's K/V (group() query planes share one K/V plane)
// is sized to stay in L2 (d = 128: 1.5-2.5% less kernel time under ncu). Causal: one group, every
// plane's longest tiles first, as before: groups cost 3-10% there (results/h200/s5/l2-order/).
template <typename Elem, typename Accum>
unsigned set_tile_order(FwdArgs<Elem, Accum>& a, const AttentionParams& p, int br) {
  const std::int64_t planes = std::int64_t(p.batch) * p.heads;
  a.planes = int(planes);
  a.q_tiles = (p.seq_q + br - 1) / br;
  const std::int64_t kv_plane_bytes = 2 * std::int64_t(p.seq_k) * p.head_dim * std::int64_t(sizeof(Elem));
  const std::int64_t kv_planes = std::int64_t(p.batch) * p.kv_heads;
  const std::int64_t group = std::int64_t(l2_plane_group(kv_plane_bytes, kv_planes)) * p.group();
  a.plane_group = int(p.causal || group > planes ? planes : group);
  return unsigned(planes * a.q_tiles);
}

// A causal order with L2 reuse (kernels built with kFwdQBand): work tile t of planes x q_tiles in bands of
// `band` adjacent query tiles, the last band (the longest tiles) first; within a band one plane after another,
// each plane's tiles longest first. grouped_tile's causal order (one group of every plane) runs one query tile
// of every plane at a time, so at N = 1k-2k (256-512 planes) the blocks that run together read a different
// plane's K/V each, from HBM; here `band` blocks of a plane start together and walk the same keys, and the
// lengths still fall band by band. When band does not divide q_tiles the last band (the shortest tiles,
// 0 .. q_tiles % band - 1) is the short one.
FB_HOST_DEVICE inline PlaneTile banded_tile(int t, int planes, int q_tiles, int band) {
  const int band_tiles = band * planes;  // blocks in a full band; only the last band can be short
  const int bi = t / band_tiles;
  const int hi = q_tiles - 1 - bi * band;  // this band's longest query tile
  const int width = hi + 1 < band ? hi + 1 : band;
  const int within = t - bi * band_tiles;
  const int plane = within / width;
  return PlaneTile{plane, hi - (within - plane * width)};
}

// banded_tile's order over query tiles [tail, q_tiles) of every plane, then query tiles [0, tail) in grouped_tile's
// order (one tile of every plane at a time, longest first: the tail of the grid balances as band0's does). The
// shortest tiles read the fewest keys, so the bands' L2 reuse matters least there. tail = 0: banded_tile's order;
// tail >= q_tiles: grouped_tile's (one group).
FB_HOST_DEVICE inline PlaneTile banded_tail_tile(int t, int planes, int q_tiles, int band, int tail) {
  const int tail_tiles = tail < q_tiles ? tail : q_tiles;
  const int banded = planes * (q_tiles - tail_tiles);  // work tiles of query tiles tail_tiles .. q_tiles - 1
  if (t < banded) {
    const PlaneTile b = banded_tile(t, planes, q_tiles - tail_tiles, band);
    return PlaneTile{b.bh, b.q_tile + tail_tiles};
  }
  return grouped_tile(t - banded, planes, tail_tiles, planes);
}

// Offsets (in elements) of the first row of a (batch, head) slice: Q/O and K/V of query head h.
struct HeadOffsets {
  std::int64_t q;   // into Q and O
  std::int64_t kv;  // into K and V
  std::int64_t row; // into LSE
};
template <typename Args>
__device__ __forceinline__ HeadOffsets head_offsets(const Args& a, int bh, int head_dim) {
  const int b = bh / a.heads;
  const int h = bh - b * a.heads;
  const int kvh = h / a.group;
  HeadOffsets off;
  off.row = std::int64_t(bh) * a.mask.seq_q;
  off.q = off.row * head_dim;
  off.kv = (std::int64_t(b) * a.kv_heads + kvh) * a.mask.seq_k * head_dim;
  return off;
}

// Dynamic shared memory a kernel may use without opting in through cudaFuncSetAttribute.
inline constexpr int kDefaultDynamicSmemBytes = 48 * 1024;

// The one dynamic shared-memory array of the forward kernels (16-byte aligned for vector access).
__device__ __forceinline__ unsigned char* fwd_smem() {
  extern __shared__ __align__(16) unsigned char fb_flash_fwd_smem[];
  return fb_flash_fwd_smem;
}

}  // namespace fb::cuda::flash
