// Tensor-core FlashAttention forward (fp16/bf16, sm_80+), FlashAttention-2 style.
//
// One block per (batch * head, query tile of kBr rows); warp w owns kWarpRows of those rows.
// For each KV tile (kBc keys), double-buffered in shared memory through cp.async (the next tile's K copies at the
// step's start, its V copies there too or, kFwdVAfterS, once S is done):
//   S = Q K^T        mma.sync m16n8k16, Q as A (ldmatrix), K as B (ldmatrix, K is already "col")
//   online softmax   in registers, base 2: p = exp2(s * scale*log2(e) - m)
//   O += P V         P re-packed to 16 bits in registers as the A operand (the m16n8 accumulator
//                    layout of two n8 blocks is the m16n8k16 A layout), V as B via ldmatrix.trans
// O is divided by the row sum once at the end, staged through shared memory for 16-byte stores.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>

#include <cuda_runtime.h>

#include "common/check.h"
#include "common/device_caps.h"
#include "common/mma_pv.cuh"
#include "common/pdl.cuh"
#include "common/ptx.cuh"
#include "common/softmax.cuh"
#include "flash/flash.h"
#include "flash/flash_fwd_args.cuh"
#include "flash/flash_fwd_traits.h"

namespace fb::cuda::flash {

// Copies rows [0, kRows) of a (kRows, kHeadDim) tile from global (row stride kHeadDim) to shared
// (row stride kRowStride) with cp.async; rows >= rows_valid are zero-filled, never read.
template <typename Tr, int kRows>
__device__ __forceinline__ void load_tile_async(typename Tr::Elem* smem,
                                                const typename Tr::Elem* gmem, int rows_valid,
                                                int tid) {
  constexpr int kChunks = kRows * Tr::kRowChunks;
  static_assert(kChunks % Tr::kThreads == 0, "whole copy steps");
#pragma unroll
  for (int i = 0; i < kChunks / Tr::kThreads; ++i) {
    const int c = tid + i * Tr::kThreads;
    const int row = c / Tr::kRowChunks;
    const int col = (c % Tr::kRowChunks) * Tr::kChunkElems;
    const bool valid = row < rows_valid;
    const auto* src = gmem + (valid ? std::int64_t(row) * Tr::kHeadDim + col : 0);
    ptx::cp_async_16_zfill(smem + row * Tr::kRowStride + col, src, valid);
  }
}

// The same copy with every thread's addresses a compile-time offset from one global and one shared
// address: a thread's chunks lie kThreads / kRowChunks rows apart. Past rows_valid the copies read
// nothing (src-size 0) from an address past the rows, which cp.async allows; no per-chunk pointer
// select, so no per-chunk pointers live across the KV loop (they took ~16 registers at 128 x 32, ~32 at
// 128 x 64, and ptxas spilled).
template <typename Tr, int kRows>
__device__ __forceinline__ void load_tile_async_lean(typename Tr::Elem* smem,
                                                     const typename Tr::Elem* gmem, int rows_valid,
                                                     int tid) {
  static_assert(Tr::kThreads % Tr::kRowChunks == 0, "a copy step covers whole rows");
  constexpr int kStepRows = Tr::kThreads / Tr::kRowChunks;
  static_assert(kRows % kStepRows == 0, "whole copy steps");
  const int row0 = tid / Tr::kRowChunks;
  const int col = (tid % Tr::kRowChunks) * Tr::kChunkElems;
  auto* s = smem + row0 * Tr::kRowStride + col;
  const auto* g = gmem + row0 * Tr::kHeadDim + col;
  const int valid_rows = rows_valid - row0;
#pragma unroll
  for (int i = 0; i < kRows / kStepRows; ++i)
    ptx::cp_async_16_zfill(s + i * kStepRows * Tr::kRowStride, g + i * kStepRows * Tr::kHeadDim,
                           i * kStepRows < valid_rows);
}

// Picks the K/V tile copy of the variant (kFwdLeanCopy: load_tile_async_lean).
template <typename Tr, bool kLean>
__device__ __forceinline__ void load_kv_async(typename Tr::Elem* smem, const typename Tr::Elem* gmem,
                                              int rows_valid, int tid) {
  if constexpr (kLean) {
    load_tile_async_lean<Tr, Tr::kBc>(smem, gmem, rows_valid, tid);
  } else {
    load_tile_async<Tr, Tr::kBc>(smem, gmem, rows_valid, tid);
  }
}

// Asks L2 for the first `bytes` (<= kMaxBytes) bytes at `base`, one prefetch per 128-byte line, the lines dealt
// round-robin to the block's kThreads threads. A hint: nothing waits for it, and no line past `bytes` is touched.
template <int kMaxBytes, int kThreads>
__device__ __forceinline__ void prefetch_l2(const void* base, int bytes, int tid) {
  constexpr int kLine = 128;
  constexpr int kSteps = (kMaxBytes + kLine * kThreads - 1) / (kLine * kThreads);
  const char* p = static_cast<const char*>(base);
#pragma unroll
  for (int i = 0; i < kSteps; ++i) {
    const int off = (tid + i * kThreads) * kLine;
    if (off < bytes) asm volatile("prefetch.global.L2 [%0];" ::"l"(p + off));
  }
}


// threadIdx.x through an asm the compiler cannot look into (nor move: volatile).
__device__ __forceinline__ int opaque_tid() {
  int v;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(v));
  return v;
}

// kFwdKvTail: the floats a piece's partial takes in the workspace: every thread's O accumulators and its rows'
// offsets and lane sums.
template <typename Tr> constexpr int kv_tail_part_floats() {
  return (Tr::kMTiles * (Tr::kHeadDim / Tr::kMmaN) * 4 + Tr::kMTiles * 4) * Tr::kThreads;
}

// Variant bits kOpt (kFwdWarpSkip, ...): flash_fwd_traits.h.
template <typename Tr, unsigned kOpt = 0>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinBlocksPerSm)
    flash_fwd_tc_kernel(const FwdArgs<typename Tr::Elem, float> a) {
  constexpr bool kWarpSkip = (kOpt & kFwdWarpSkip) != 0;
  constexpr bool kLeanCopy = (kOpt & kFwdLeanCopy) != 0;
  constexpr bool kLazy = (kOpt & kFwdLazyRescale) != 0;
  static_assert(Tr::kStages == 2, "the split K/V waits assume double buffering");
  using Elem = typename Tr::Elem;
  constexpr int D = Tr::kHeadDim;
  constexpr int kMT = Tr::kMTiles;
  constexpr float kNegInf = -INFINITY;

  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  // Quad coordinates of the m16n8 accumulator: rows g and g + 8, columns 2t and 2t + 1.
  const int g = lane / 4;
  const int t = lane % 4;

  // Tile order (common/tile_order.h): plane groups sized for L2, within a group the longest causal
  // tiles (the last ones: they see the most keys) first, which balances the tail of the grid.
  // kFwdQBand (launched on causal problems only): bands of a.plane_group query tiles, banded_tile.
  constexpr bool kQBand = (kOpt & kFwdQBand) != 0;
  // kFwdPersist (non-causal launches, Q from shared memory): the grid is one wave of blocks, block b runs work
  // tiles b, b + gridDim.x, ...; each tile's epilogue first puts the next tile's Q, K_0 and V_0 in flight, so they
  // load while O is normalised and stored, instead of after (the blocks of a non-causal wave all start and end
  // together, and their prologue and epilogue leave the tensor cores idle each time). Loading them during the
  // last KV step instead made ptxas spill 244-344 B.
  constexpr bool kPersist = (kOpt & kFwdPersist) != 0;
  // kFwdPersistEarly: the next tile's K_0 at the start of the last KV step, its Q and V_0 once that step's S is done
  // (instead of all three at the epilogue); their offsets wait in shared memory, not in registers.
  constexpr bool kEarly = kPersist && (kOpt & kFwdPersistEarly) != 0;
  static_assert(!kPersist || (!kQBand && !Tr::kQInRegs && Tr::kBr == 2 * Tr::kBc && Tr::kBc % Tr::kWarpRows == 0),
                "kFwdPersist: non-banded, Q from shared memory, O staged in one stage's K and V buffers");
  // kFwdL2Prefetch: the Q tile, K_0 and V_0 of work tile work + a.prefetch_ahead into L2 (the tile that, with
  // blocks finishing in launch order, starts on this SM when this one ends), in the last KV step. The blocks of a
  // non-causal launch all have one length, so they start (and wait for their first Q, K and V from HBM, the tensor
  // cores idle) together, wave after wave.
  constexpr bool kPrefetch = (kOpt & kFwdL2Prefetch) != 0;
  static_assert(!(kPrefetch && kPersist), "kFwdL2Prefetch: one work tile a block");
  // kFwdQBandTail (with kFwdQBand): the shortest a.band_tail query tiles of every plane last, in grouped order.
  constexpr bool kQBandTail = (kOpt & kFwdQBandTail) != 0;
  static_assert(!kQBandTail || kQBand, "kFwdQBandTail: a tail of the banded order");
  // kFwdLeanEpi, kFwdLeanPrologue: the per-block work before and after the KV loop with fewer instructions
  // (flash_fwd_traits.h); the KV loop is the default's.
  constexpr bool kLeanEpi = (kOpt & kFwdLeanEpi) != 0;
  constexpr bool kLeanPro = (kOpt & kFwdLeanPrologue) != 0;
  static_assert(!(kLeanEpi || kLeanPro) || !kPersist, "kFwdLeanEpi, kFwdLeanPrologue: one work tile a block");
  // kFwdFragPipe: S = Q K^T's fragments of the next k16 step loaded before the current step's MMAs.
  constexpr bool kFragPipe = (kOpt & kFwdFragPipe) != 0;
  static_assert(!kFragPipe || !Tr::kQInRegs, "kFwdFragPipe: Q fragments from shared memory");
  // kFwdVAfterS: the next K/V tile's V copies after S, before the softmax. The groups stay K_{j+1}, V_{j+1}, both
  // committed before the step's V wait, so the waits count as without it.
  constexpr bool kVLate = (kOpt & kFwdVAfterS) != 0;
  static_assert(!kVLate || !kPersist, "kFwdVAfterS: one work tile a block");
  auto tile_of = [&](int work) {
    if constexpr (kQBandTail) return banded_tail_tile(work, a.planes, a.q_tiles, a.plane_group, a.band_tail);
    return kQBand ? banded_tile(work, a.planes, a.q_tiles, a.plane_group)
                  : grouped_tile(work, a.planes, a.q_tiles, a.plane_group);
  };
  // kFwdPdlTail: this launch's blocks run tiles tile_base, tile_base + 1, ...; a dependent launch (the tail) may
  // start once every block here has started (its blocks then take SMs as they free).
  constexpr bool kPdlTail = (kOpt & kFwdPdlTail) != 0;
  static_assert(!kPdlTail || !kPersist, "kFwdPdlTail: one work tile a block");
  int work = int(blockIdx.x) + (kPdlTail ? a.tile_base : 0);
  // kFwdKvTail: in the tail launch (a.kv_splits > 1) block b runs piece b % kv_splits of work tile tile_base +
  // b / kv_splits (a tile's pieces on consecutive blocks: they start together and share its Q in L2); in the first
  // launch blocks [0, a.tail_zero) zero the tail's counters, which the tail reads only after griddepcontrol.wait.
  constexpr bool kKvTail = (kOpt & kFwdKvTail) != 0;
  static_assert(!kKvTail || kPdlTail, "kFwdKvTail: the tail launch of kFwdPdlTail");
  const bool kv_split = kKvTail && a.kv_splits > 1;
  int piece = 0;
  if constexpr (kKvTail) {
    if (kv_split) {
      work = a.tile_base + int(blockIdx.x) / a.kv_splits;
      piece = int(blockIdx.x) % a.kv_splits;
    } else if (tid == 0 && int(blockIdx.x) < a.tail_zero) {
      a.tail_count[blockIdx.x] = 0u;
    }
  }
  if constexpr (kPdlTail) pdl_launch_dependents();
  const int works = a.planes * a.q_tiles;
  int it0 = 0;  // kPersist: KV steps run by the earlier work tiles (the K/V stage parity continues)
  for (;;) {
  const PlaneTile tile = tile_of(work);
  const int q_tile = tile.q_tile;
  const int q0 = q_tile * Tr::kBr;
  const int seq_q = a.mask.seq_q, seq_k = a.mask.seq_k;
  const HeadOffsets off = head_offsets(a, tile.bh, D);
  const Elem* gQ = a.q + off.q + std::int64_t(q0) * D;
  const Elem* gK = a.k + off.kv;
  const Elem* gV = a.v + off.kv;
  const int next_work = work + int(gridDim.x);
  const bool has_next = kPersist && next_work < works;
  // kEarly: the next tile's Q and K/V offsets (elements) and its valid query rows, for the last KV step.
  __shared__ std::int64_t next_off[kEarly ? 3 : 1];
  if (kEarly && has_next && tid == 0) {  // read after the KV loop's barriers; the previous tile's reads are done
    const PlaneTile nt = tile_of(next_work);
    const HeadOffsets noff = head_offsets(a, nt.bh, D);
    next_off[0] = noff.q + std::int64_t(nt.q_tile) * Tr::kBr * D;
    next_off[1] = noff.kv;
    next_off[2] = seq_q - nt.q_tile * Tr::kBr;
  }

  // kFwdL2Prefetch: the later tile's Q offset (elements; -1: none), its K/V offset and its Q bytes.
  constexpr int kQBytes = Tr::kBr * D * int(sizeof(Elem));
  constexpr int kKVBytes = Tr::kBc * D * int(sizeof(Elem));
  auto prefetch_target = [&](std::int64_t& q_off, std::int64_t& kv_off, int& q_bytes) {
    const int pw = work + a.prefetch_ahead;
    q_off = -1;
    kv_off = 0;
    q_bytes = 0;
    if (pw < works) {
      const PlaneTile pt = tile_of(pw);
      const HeadOffsets poff = head_offsets(a, pt.bh, D);
      const int pq0 = pt.q_tile * Tr::kBr;
      q_off = poff.q + std::int64_t(pq0) * D;
      kv_off = poff.kv;
      q_bytes = min(seq_q - pq0, Tr::kBr) * D * int(sizeof(Elem));
    }
  };
  auto prefetch = [&](std::int64_t q_off, std::int64_t kv_off, int q_bytes, int ptid) {
    if (q_off < 0) return;
    const int kv_bytes = min(seq_k, Tr::kBc) * D * int(sizeof(Elem));
    prefetch_l2<kQBytes, Tr::kThreads>(a.q + q_off, q_bytes, ptid);
    prefetch_l2<kKVBytes, Tr::kThreads>(a.k + kv_off, kv_bytes, ptid);
    prefetch_l2<kKVBytes, Tr::kThreads>(a.v + kv_off, kv_bytes, ptid);
  };
  // kLeanEpi: the epilogue's offsets (elements) of this tile's O rows and LSE rows, in shared memory across the KV
  // loop rather than in registers (ptxas otherwise spilled a loop value, reloaded in masked KV steps); written by
  // thread 0 after the prologue's copies, read after the KV loop's barriers.
  __shared__ std::int64_t epi_off[kLeanEpi ? 2 : 1];
  // In the last KV step the target comes from shared memory (Q offset, K/V offset, Q bytes), not from registers
  // kept across the KV loop; written by thread 0 here (kLeanPro: once the prologue's copies are in flight, since
  // thread 0's tile_of and head_offsets otherwise hold back warp 0's copies by ~130 instructions), read after the
  // first KV step's barrier.
  __shared__ std::int64_t pf_target[kPrefetch ? 3 : 1];
  auto set_pf_target = [&] {
    if (tid == 0) {
      int q_bytes;
      prefetch_target(pf_target[0], pf_target[1], q_bytes);
      pf_target[2] = q_bytes;
    }
  };
  if constexpr (kPrefetch && !kLeanPro) set_pf_target();

  Elem* sQ = reinterpret_cast<Elem*>(fwd_smem());    // (kBr, D); later O staging
  Elem* sK = sQ + Tr::kQTileElems;                    // kStages x (kBc, D)
  Elem* sV = sK + Tr::kStages * Tr::kKVTileElems;     // kStages x (kBc, D)
  const int warp_row0 = warp * Tr::kWarpRows;          // first row of this warp in the tile

  // At least one tile: a query tile whose rows all see no key (causal, seq_q > seq_k) runs tile 0
  // fully masked, which leaves its sums at 0 (O = 0, LSE = -inf) and keeps the cp.async group count
  // the same as every other block's.
  const int kv_all = max(a.mask.kv_tiles(q0, Tr::kBr, Tr::kBc), 1);
  // kFwdKvTail: this piece's K/V tiles [kv_begin, kv_begin + n_tiles) (non-causal: every warp sees them all).
  const int kv_begin = kv_split ? kv_split_begin(piece, a.kv_splits, kv_all) : 0;
  const int n_tiles = kv_split ? kv_split_begin(piece + 1, a.kv_splits, kv_all) - kv_begin : kv_all;

  // KV tiles this warp's rows see (kWarpSkip): tiles j >= warp_tiles are fully masked for it.
  const int warp_tiles = kWarpSkip ? a.mask.kv_tiles(q0 + warp_row0, Tr::kWarpRows, Tr::kBc) : n_tiles;
  const int mask_row0 = kWarpSkip ? q0 + warp_row0 : q0;

  // K_tile and V_tile into `stage`, one cp.async group each (K first: the loop waits for K alone).
  // (tile: the piece's; kv_begin + tile: the plane's.)
  auto load_k = [&](int tile, int stage) {
    const std::int64_t g_off = std::int64_t(kv_begin + tile) * Tr::kBc * D;
    load_kv_async<Tr, kLeanCopy>(sK + stage * Tr::kKVTileElems, gK + g_off, seq_k - (kv_begin + tile) * Tr::kBc,
                                 tid);
    ptx::cp_async_commit();
  };
  auto load_v = [&](int tile, int stage) {
    const std::int64_t g_off = std::int64_t(kv_begin + tile) * Tr::kBc * D;
    load_kv_async<Tr, kLeanCopy>(sV + stage * Tr::kKVTileElems, gV + g_off, seq_k - (kv_begin + tile) * Tr::kBc,
                                 tid);
    ptx::cp_async_commit();
  };
  auto load_kv = [&](int tile, int stage) {
    load_k(tile, stage);
    load_v(tile, stage);
  };
  // Prologue: commit groups Q, K_0, V_0 (in that order; the waits below count on it). kPersist: a later work
  // tile's were committed in the same order by the tile before it, at its epilogue.
  if (!kPersist || it0 == 0) {
  // kLeanPro: Q as the K/V tiles are copied: 16 cp.async at d = 128 from one address, not 16 divisions, selects
  // and 64-bit addresses.
  if constexpr (kLeanPro) {
    load_tile_async_lean<Tr, Tr::kBr>(sQ, gQ, seq_q - q0, tid);
  } else {
    load_tile_async<Tr, Tr::kBr>(sQ, gQ, seq_q - q0, tid);
  }
  ptx::cp_async_commit();
  load_kv(0, 0);
  }
  if constexpr (kPrefetch && kLeanPro) set_pf_target();
  if constexpr (kLeanEpi) {
    if (tid == 0) {
      epi_off[0] = off.q + std::int64_t(q0) * D;
      epi_off[1] = off.row + q0;
    }
  }

  // ldmatrix.x4 row addresses of this lane. A (Q rows): lanes 0-15 rows 0-15 at k 0-7, lanes
  // 16-31 the same rows at k 8-15. B from K (rows = keys): lanes 0-7 / 8-15 keys 0-7 at k 0-7 /
  // 8-15, lanes 16-31 the same for keys 8-15 (the next n8 block). B from V (rows = keys, .trans):
  // lanes 0-7 / 8-15 keys 0-7 / 8-15 at columns 0-7, lanes 16-31 the same at columns 8-15.
  const int a_row = lane % 16, a_col = (lane / 16) * 8;
  const int k_row = (lane / 16) * 8 + lane % 8, k_col = ((lane / 8) % 2) * 8;
  const int v_row = ((lane / 8) % 2) * 8 + lane % 8, v_col = (lane / 16) * 8;
  // As shared-window byte addresses: every fragment below is one of these plus a compile-time
  // offset (plus the stage offset for K/V), which the compiler folds into the instruction.
  constexpr int kEB = sizeof(Elem);
  constexpr int kRowBytes = Tr::kRowStride * kEB;
  constexpr int kKVTileBytes = Tr::kKVTileElems * kEB;
  const std::uint32_t q_lane =
      ptx::smem_addr(sQ) + (warp_row0 + a_row) * kRowBytes + a_col * kEB;
  const std::uint32_t k_lane = ptx::smem_addr(sK) + k_row * kRowBytes + k_col * kEB;
  const std::uint32_t v_lane = ptx::smem_addr(sV) + v_row * kRowBytes + v_col * kEB;

  // Q fragments (A operand), per m16 block and k16 step.
  std::uint32_t q_frag[Tr::kQInRegs ? kMT : 1][Tr::kQInRegs ? Tr::kQKSteps : 1][4];
  auto load_q_frag = [&](std::uint32_t(&dst)[4], int mt, int ks) {
    ptx::ldmatrix_x4(dst, q_lane + (mt * Tr::kMmaM * kRowBytes + ks * Tr::kMmaK * kEB));
  };
  if constexpr (Tr::kQInRegs) {
    // Q landed (K_0 and V_0 may still fly)
    ptx::cp_async_wait<2>();
    __syncthreads();
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int ks = 0; ks < Tr::kQKSteps; ++ks) load_q_frag(q_frag[mt][ks], mt, ks);
  }

  float acc_o[kMT][Tr::kONTiles][4];  // (kWarpRows, D) in m16n8 accumulator layout
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < Tr::kONTiles; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_o[mt][nt][e] = 0.f;
  // Row statistics for rows g (index 0) and g + 8 (index 1) of each m16 block. row_max is in the
  // exp2 domain (already times scale*log2(e)); row_sum is this lane's partial sum, reduced over
  // the quad only at the end.
  float row_max[kMT][2], row_sum[kMT][2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      row_max[mt][hf] = kNegInf;
      row_sum[mt][hf] = 0.f;
    }

  // kLazy: the online softmax of one score tile (new row maxima, P = exp2(S*c - m) in place, row sums;
  // alpha = the factor O must be scaled by), and O's rescale. The offset m a row's exponents subtract moves
  // only when some row of the warp sees a score more than 2^kLazyHeadroom above it (a warp vote; then every
  // row takes its new max). Between moves P <= 2^kLazyHeadroom, and O, the row sums and the LSE all refer to
  // the same m, so the result is the same; O's rescale (128 FMUL a thread at d = 128) is skipped on most
  // tiles.
  float alpha[kMT][2];
  bool moved = true;  // whether this step moved the warp's exponent offsets (O needs the rescale)
  auto lazy_softmax = [&](float (&sc)[kMT][Tr::kSNTiles][4]) {
    constexpr float kLazyHeadroom = 8.f;
    float cand[kMT][2];
    bool want = false;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        float tile_max = kNegInf;
#pragma unroll
        for (int nt = 0; nt < Tr::kSNTiles; ++nt)
          tile_max = fmaxf(tile_max, fmaxf(sc[mt][nt][2 * hf], sc[mt][nt][2 * hf + 1]));
        cand[mt][hf] = fmaxf(row_max[mt][hf], quad_max(tile_max) * a.scale_log2);
        // -inf + headroom is -inf: a row's first visible score always moves it.
        want |= cand[mt][hf] > row_max[mt][hf] + kLazyHeadroom;
      }
    moved = __any_sync(kFullWarp, want);
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const float m_new = moved ? cand[mt][hf] : row_max[mt][hf];
        const float sub = safe_max(m_new);
        alpha[mt][hf] = ptx::exp2_approx(row_max[mt][hf] - sub);  // 1 when nothing moved
        row_max[mt][hf] = m_new;
        float tile_sum = 0.f;
#pragma unroll
        for (int nt = 0; nt < Tr::kSNTiles; ++nt)
#pragma unroll
          for (int e = 2 * hf; e < 2 * hf + 2; ++e) {
            const float pe = ptx::exp2_approx(fmaf(sc[mt][nt][e], a.scale_log2, -sub));
            sc[mt][nt][e] = pe;
            tile_sum += pe;
          }
        row_sum[mt][hf] = row_sum[mt][hf] * alpha[mt][hf] + tile_sum;
      }
  };
  auto rescale_o = [&] {
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < Tr::kONTiles; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_o[mt][nt][e] *= alpha[mt][e / 2];
  };

  for (int j = 0; j < n_tiles; ++j) {
    const int stage = (kPersist ? it0 + j : j) % Tr::kStages;
    // tile j - 1's, which j + 1 fills
    const int next_stage = (kPersist ? it0 + j + Tr::kStages - 1 : j + Tr::kStages - 1) % Tr::kStages;
    const int k0 = (kv_begin + j) * Tr::kBc;
    const std::uint32_t k_stage = k_lane + stage * kKVTileBytes;
    const std::uint32_t v_stage = v_lane + stage * kKVTileBytes;

    // K_j landed (only V_j may still fly), for every thread; and every warp is done with tile
    // j - 1, whose buffers the prefetch below overwrites.
    ptx::cp_async_wait<1>();
    __syncthreads();
    const int next = j + Tr::kStages - 1;
    if (next < n_tiles) {
      load_k(next, next_stage);
      if constexpr (!kVLate) load_v(next, next_stage);
    } else {
      // kEarly: the next work tile's K_0 into the free stage (its group, then an empty one).
      if constexpr (kEarly) {
        if (has_next)
          load_kv_async<Tr, true>(sK + next_stage * Tr::kKVTileElems, a.k + next_off[1], seq_k, opaque_tid());
      }
      // kFwdL2Prefetch: this is the last KV step.
      if constexpr (kPrefetch)
        prefetch(pf_target[0], pf_target[1], int(pf_target[2]), opaque_tid());
      // Empty groups keep the group count uniform.
      ptx::cp_async_commit();
      ptx::cp_async_commit();
    }
    const bool active = !kWarpSkip || kv_begin + j < warp_tiles;  // warp-uniform

    // ---- S = Q K^T: (kWarpRows, kBc) per warp ----
    float s[kMT][Tr::kSNTiles][4];
    if (active) {
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < Tr::kSNTiles; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.f;
    if constexpr (kFragPipe) {
      // FlashAttention-2's order: two register buffers of one k16 step's fragments (Q: kMT x 4, K: kSNTiles / 2
      // ldmatrix.x4), step ks + 1's loaded before step ks's MMAs, so every fragment has a whole step's MMAs
      // (kMT x kSNTiles of them) to land in; each K fragment pair feeds both m16 blocks back to back.
      constexpr int kKPairs = Tr::kSNTiles / 2;
      std::uint32_t qa[2][kMT][4], kb[2][kKPairs][4];
      auto load_frags = [&](int buf, int ks) {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) load_q_frag(qa[buf][mt], mt, ks);
#pragma unroll
        for (int np = 0; np < kKPairs; ++np)
          ptx::ldmatrix_x4(kb[buf][np], k_stage + (2 * np * Tr::kMmaN * kRowBytes + ks * Tr::kMmaK * kEB));
      };
      load_frags(0, 0);
#pragma unroll
      for (int ks = 0; ks < Tr::kQKSteps; ++ks) {
        if (ks + 1 < Tr::kQKSteps) load_frags((ks + 1) % 2, ks + 1);
#pragma unroll
        for (int np = 0; np < kKPairs; ++np) {
          const std::uint32_t b0[2] = {kb[ks % 2][np][0], kb[ks % 2][np][1]};
          const std::uint32_t b1[2] = {kb[ks % 2][np][2], kb[ks % 2][np][3]};
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) {
            ptx::mma_m16n8k16<Elem>(s[mt][2 * np], qa[ks % 2][mt], b0);
            ptx::mma_m16n8k16<Elem>(s[mt][2 * np + 1], qa[ks % 2][mt], b1);
          }
        }
      }
    } else {
#pragma unroll
    for (int ks = 0; ks < Tr::kQKSteps; ++ks) {
      std::uint32_t qa_smem[Tr::kQInRegs ? 1 : kMT][4];
      if constexpr (!Tr::kQInRegs) {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) load_q_frag(qa_smem[mt], mt, ks);
      }
#pragma unroll
      for (int nt = 0; nt < Tr::kSNTiles; nt += 2) {
        std::uint32_t kb[4];
        ptx::ldmatrix_x4(kb, k_stage + (nt * Tr::kMmaN * kRowBytes + ks * Tr::kMmaK * kEB));
        const std::uint32_t b0[2] = {kb[0], kb[1]};
        const std::uint32_t b1[2] = {kb[2], kb[3]};
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          if constexpr (Tr::kQInRegs) {
            ptx::mma_m16n8k16<Elem>(s[mt][nt], q_frag[mt][ks], b0);
            ptx::mma_m16n8k16<Elem>(s[mt][nt + 1], q_frag[mt][ks], b1);
          } else {
            ptx::mma_m16n8k16<Elem>(s[mt][nt], qa_smem[mt], b0);
            ptx::mma_m16n8k16<Elem>(s[mt][nt + 1], qa_smem[mt], b1);
          }
        }
      }
    }
    }  // kFragPipe
    }  // active

    // kVLate: the next tile's V copies now (every thread: a warp that skips the tile still copies its share).
    if constexpr (kVLate) {
      if (next < n_tiles) load_v(next, next_stage);
    }

    if (active) {
    // ---- mask: only the diagonal tiles (causal) and the tile past the last key ----
    if (a.mask.tile_needs_mask(mask_row0, k0, Tr::kBc)) {
      if constexpr (kWarpSkip) {
        // Per row, the first hidden column of this thread's pairs: one compare per score with a
        // compile-time column instead of two compares on (row, key).
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int hf = 0; hf < 2; ++hf) {
            const int row = q0 + warp_row0 + mt * Tr::kMmaM + g + hf * 8;
            const int lim = a.mask.key_end(row) - k0 - 2 * t;
#pragma unroll
            for (int nt = 0; nt < Tr::kSNTiles; ++nt)
#pragma unroll
              for (int e = 0; e < 2; ++e)
                if (nt * Tr::kMmaN + e >= lim) s[mt][nt][2 * hf + e] = kNegInf;
          }
      } else {
        // (The same loop as flash_fwd_tf32.cuh's; as a shared helper it changed the d = 64 kernel's
        // instruction order and ptxas spilled 8 bytes, so it stays written out here.)
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
    }

    // ---- online softmax: new row maxima, rescale O and the sums, P = exp2(S*c - m) ----
    if constexpr (kLazy) {
      lazy_softmax(s);
      if (moved) rescale_o();  // warp-uniform
    } else {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
          const float alpha_r = online_softmax_row(s[mt], hf, row_max[mt][hf], row_sum[mt][hf], a.scale_log2);
          // Rescaled every tile: skipping it when no row max moved (a warp vote) measured 3-8%
          // slower on the H200 (docs/perf-notes.md).
#pragma unroll
          for (int nt = 0; nt < Tr::kONTiles; ++nt) {
            acc_o[mt][nt][2 * hf] *= alpha_r;
            acc_o[mt][nt][2 * hf + 1] *= alpha_r;
          }
        }
    }

    }  // active

    // V_j landed (K_{j+1}, V_{j+1} may still fly), for every thread.
    ptx::cp_async_wait<2>();
    __syncthreads();
    // kEarly, last step: every warp is done with sQ; the next tile's Q, then its V_0 next to its K_0. Group
    // order K_0, (empty), Q, V_0: the next tile's first wait<1> leaves only V_0 in flight, as the prologue's does.
    if constexpr (kEarly) {
      if (has_next && j == n_tiles - 1) {
        const int ltid = opaque_tid();
        load_tile_async_lean<Tr, Tr::kBr>(sQ, a.q + next_off[0], int(next_off[2]), ltid);
        ptx::cp_async_commit();
        load_kv_async<Tr, true>(sV + next_stage * Tr::kKVTileElems, a.v + next_off[1], seq_k, ltid);
        ptx::cp_async_commit();
      }
    }

    // ---- O += P V ----
    if (active) mma_pv<Elem, kMT, Tr::kPVSteps, Tr::kONTiles, kRowBytes>(acc_o, s, v_stage);
  }

  // kFwdKvTail, a piece: its unnormalised O, row offsets and lane sums to the workspace (each thread its own
  // registers, element i at i * kThreads: coalesced), then a counter per tile; the tile's last piece to finish merges
  // the others' into its registers (offsets to their maximum, O and sums scaled to it) and runs the epilogue; the
  // others end.
  // griddepcontrol.wait first: the first launch's zeroed counters (and all its writes) are then visible; it has
  // ended by the time a piece gets here, unless a whole wave of blocks still runs. (Under the probe kvsubwave the
  // launch ahead is fwd_kv_count_zero_kernel's one block.)
  if constexpr (kKvTail) {
    if (kv_split) {
      pdl_wait_primary();
      constexpr int kOVals = kMT * Tr::kONTiles * 4;
      constexpr std::int64_t kPart = std::int64_t(kv_tail_part_floats<Tr>());
      const int slot = work - a.tile_base;
      const int ptid = opaque_tid();
      float* part = a.tail_part + std::int64_t(slot) * a.kv_splits * kPart + ptid;
      float* mine = part + piece * kPart;
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
        for (int nt = 0; nt < Tr::kONTiles; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            __stcg(mine + ((mt * Tr::kONTiles + nt) * 4 + e) * Tr::kThreads, acc_o[mt][nt][e]);
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
          __stcg(mine + (kOVals + (mt * 2 + hf) * 2) * Tr::kThreads, row_max[mt][hf]);
          __stcg(mine + (kOVals + (mt * 2 + hf) * 2 + 1) * Tr::kThreads, row_sum[mt][hf]);
        }
      }
      __threadfence();
      __syncthreads();
      __shared__ unsigned tail_last;
      if (ptid == 0) tail_last = atomicAdd(a.tail_count + slot, 1u) == unsigned(a.kv_splits - 1) ? 1u : 0u;
      __syncthreads();
      if (tail_last == 0u) return;
      __threadfence();
      for (int s = 0; s < a.kv_splits; ++s) {
        if (s == piece) continue;
        const float* other = part + s * kPart;
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int hf = 0; hf < 2; ++hf) {
            const float m_o = __ldcg(other + (kOVals + (mt * 2 + hf) * 2) * Tr::kThreads);
            const float l_o = __ldcg(other + (kOVals + (mt * 2 + hf) * 2 + 1) * Tr::kThreads);
            const float m_new = fmaxf(row_max[mt][hf], m_o);
            const float sub = safe_max(m_new);
            const float c_me = ptx::exp2_approx(row_max[mt][hf] - sub);
            const float c_o = ptx::exp2_approx(m_o - sub);
            row_max[mt][hf] = m_new;
            row_sum[mt][hf] = row_sum[mt][hf] * c_me + l_o * c_o;
#pragma unroll
            for (int nt = 0; nt < Tr::kONTiles; ++nt)
#pragma unroll
              for (int e = 2 * hf; e < 2 * hf + 2; ++e)
                acc_o[mt][nt][e] = fmaf(__ldcg(other + ((mt * Tr::kONTiles + nt) * 4 + e) * Tr::kThreads), c_o,
                                        acc_o[mt][nt][e] * c_me);
          }
      }
    }
  }

  // ---- epilogue: O /= row sum, LSE = ln(sum) + max; O staged in this warp's own sQ rows ----
  // (each warp only ever read its own Q rows, so no block barrier is needed before reusing them)
  // kPersist: once every warp is done with sQ and the last step's V, the next work tile's Q, K_0 and V_0 go in
  // flight (groups in the prologue's order, into the stage after the last step's), and O is staged in the last
  // step's K (rows 0 .. kBc - 1) and V (the rest) buffers.
  // kPersist: the thread's indices re-read where the compiler cannot see them, so that the address arithmetic
  // below (invariant across work tiles) is not hoisted out of the work-tile loop and kept live across the KV loop.
  // kLeanEpi: the same, so that its per-lane LSE row and O copy addresses are not kept across the KV loop either
  // (ptxas then spilled a loop value, reloaded in every KV step).
  const int etid = kPersist || kLeanEpi ? opaque_tid() : tid;
  const int elane = etid % 32, eg = elane / 4, et = elane % 4, ewarp_row0 = (etid / 32) * Tr::kWarpRows;
  Elem* sO = sQ;
  if constexpr (kPersist) {
    __syncthreads();
    const int last = (it0 + n_tiles - 1) % Tr::kStages;
    if (!kEarly && has_next) {
      const PlaneTile nt = tile_of(next_work);
      const HeadOffsets noff = head_offsets(a, nt.bh, D);
      const int nq0 = nt.q_tile * Tr::kBr;
      const int ns = (last + 1) % Tr::kStages;
      load_tile_async<Tr, Tr::kBr>(sQ, a.q + noff.q + std::int64_t(nq0) * D, seq_q - nq0, etid);
      ptx::cp_async_commit();
      load_kv_async<Tr, kLeanCopy>(sK + ns * Tr::kKVTileElems, a.k + noff.kv, seq_k, etid);
      ptx::cp_async_commit();
      load_kv_async<Tr, kLeanCopy>(sV + ns * Tr::kKVTileElems, a.v + noff.kv, seq_k, etid);
      ptx::cp_async_commit();
    }
    sO = (ewarp_row0 < Tr::kBc ? sK + last * Tr::kKVTileElems
                              : sV + last * Tr::kKVTileElems - Tr::kBc * Tr::kRowStride);
  }
  __syncwarp();
  if constexpr (kLeanEpi) {
    // The rows' chains side by side, no branch: the quad sums (all 2 kMT rows' shuffles of one distance together),
    // then the reciprocals, O's scale and staging; then one LSE a lane. The sums add in quad_sum's order, so every
    // lane of a quad holds the same sum as the default's.
    static_assert(2 * kMT <= 4, "kFwdLeanEpi: the quad's lanes store one row's LSE each");
    float sum[kMT][2];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) sum[mt][hf] = row_sum[mt][hf];
#pragma unroll
    for (int lanes = 1; lanes < 4; lanes *= 2)
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) sum[mt][hf] += __shfl_xor_sync(kFullWarp, sum[mt][hf], lanes);
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        // sum >= 1 for a row that sees a key, 0 for one that sees none (O = 0; rcp_approx(0) = inf is not used).
        const float inv = sum[mt][hf] > 0.f ? ptx::rcp_approx(sum[mt][hf]) : 0.f;
        const int row = ewarp_row0 + mt * Tr::kMmaM + eg + hf * 8;
#pragma unroll
        for (int nt = 0; nt < Tr::kONTiles; ++nt) {
          *reinterpret_cast<std::uint32_t*>(sO + row * Tr::kRowStride + nt * Tr::kMmaN + 2 * et) =
              ptx::pack2<Elem>(acc_o[mt][nt][2 * hf] * inv, acc_o[mt][nt][2 * hf + 1] * inv);
        }
      }
    // Lane et of a quad: row r = et of its 2 kMT (m16 block r / 2, half r % 2), i.e. warp row 8 r + g, so the warp's
    // 16 kMT LSEs go out in one store of consecutive floats (at 16 rows a warp, br64's tiles, lanes 2 and 3 of a quad
    // store none). LSE = (m + log2 sum) ln 2; a row that saw no key has m = -inf and sum 0 and gets -inf (the select
    // keeps that explicit, as the default's).
    float sum_r = sum[0][0], max_r = row_max[0][0];
#pragma unroll
    for (int r = 1; r < 2 * kMT; ++r) {
      sum_r = et == r ? sum[r / 2][r % 2] : sum_r;
      max_r = et == r ? row_max[r / 2][r % 2] : max_r;
    }
    const int lse_row = ewarp_row0 + 8 * et + eg;
    const float lse = sum_r > 0.f ? (max_r + ptx::lg2_approx(sum_r)) * float(kLn2) : kNegInf;
    bool lse_lane = true;
    if constexpr (2 * kMT < 4) lse_lane = et < 2 * kMT;
    if (lse_lane && q0 + lse_row < seq_q) a.lse[epi_off[1] + lse_row] = lse;
  } else {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const float sum = quad_sum(row_sum[mt][hf]);
      // A row that sees a key has sum >= 1; one that sees none (causal, seq_q > seq_k) has sum 0 and
      // gets O = 0, LSE = -inf (attention.h). Rows past the end are never stored.
      const float inv = sum > 0.f ? 1.f / sum : 0.f;
      const int row = ewarp_row0 + mt * Tr::kMmaM + eg + hf * 8;
#pragma unroll
      for (int nt = 0; nt < Tr::kONTiles; ++nt) {
        *reinterpret_cast<std::uint32_t*>(sO + row * Tr::kRowStride + nt * Tr::kMmaN + 2 * et) =
            ptx::pack2<Elem>(acc_o[mt][nt][2 * hf] * inv, acc_o[mt][nt][2 * hf + 1] * inv);
      }
      if (et == 0 && q0 + row < seq_q) {
        a.lse[off.row + q0 + row] =
            sum > 0.f ? float((row_max[mt][hf] + log2f(sum)) * float(kLn2)) : kNegInf;
      }
    }
  }
  __syncwarp();
  Elem* gO = a.o + off.q + std::int64_t(q0) * D;
  constexpr int kWarpChunks = Tr::kWarpRows * Tr::kRowChunks;
  if constexpr (kLeanEpi) {
    // Lane l copies chunk l % kRowChunks of rows l / kRowChunks + kStepRows i: one shared and one global address,
    // the rest compile-time offsets; a row past seq_q is skipped (its predicate, no per-chunk address math).
    static_assert(32 % Tr::kRowChunks == 0, "a warp's copy step covers whole rows");
    constexpr int kStepRows = 32 / Tr::kRowChunks;
    const unsigned ulane = unsigned(elane);
    const int row0 = ewarp_row0 + int(ulane / Tr::kRowChunks);
    const int col = int(ulane % Tr::kRowChunks) * Tr::kChunkElems;
    const Elem* so = sO + row0 * Tr::kRowStride + col;
    Elem* go = a.o + epi_off[0] + std::int64_t(row0) * D + col;
    const int rows_left = seq_q - q0 - row0;
#pragma unroll
    for (int i = 0; i < kWarpChunks / 32; ++i) {
      if (i * kStepRows < rows_left)
        *reinterpret_cast<uint4*>(go + i * kStepRows * D) =
            *reinterpret_cast<const uint4*>(so + i * kStepRows * Tr::kRowStride);
    }
  } else {
#pragma unroll
  for (int i = 0; i < kWarpChunks / 32; ++i) {
    const int c = elane + i * 32;
    const int row = ewarp_row0 + c / Tr::kRowChunks;
    const int col = (c % Tr::kRowChunks) * Tr::kChunkElems;
    if (q0 + row < seq_q)
      *reinterpret_cast<uint4*>(gO + std::int64_t(row) * D + col) =
          *reinterpret_cast<const uint4*>(sO + row * Tr::kRowStride + col);
  }
  }
  if (!has_next) break;
  it0 += n_tiles;
  work = next_work;
  }
  // kFwdPdlTail: the tail launch completes only after the launch it overlapped (and its writes) did, so that what
  // follows in the stream sees both; in the first launch (no programmatic prerequisite) this returns at once.
  if constexpr (kPdlTail) pdl_wait_primary();
}

// The device's SMs and the blocks of flash_fwd_tc_kernel<Tr, kOpt> an SM holds at the kernel's own shared memory
// (asked once per process for the kernel, opted in to that size first), and the device's caps (kFwdPdlTail).
// pdl: whether this kernel's code may be launched as a programmatic dependent (kFwdPdlTail's tail, kFwdKvTail's
// pieces): programmatic_launch_ok (common/tile_order.h), the device and the code it runs both sm_90+.
struct WaveShape {
  int sms = 0;
  int per_sm = 0;
  DeviceCaps caps;
  bool pdl = false;
};
template <typename Tr, unsigned kOpt> const WaveShape& wave_shape() {
  static const WaveShape shape = [] {
    WaveShape w;
    w.sms = current_sm_count();
    const std::optional<DeviceCaps> caps = current_device_caps();
    if (!caps) throw std::runtime_error("flash forward: the current CUDA device does not answer attribute queries");
    w.caps = *caps;
    const auto kernel = flash_fwd_tc_kernel<Tr, kOpt>;
    // The occupancy at the kernel's own size needs the attribute to allow it (a workspace query may come first).
    if (Tr::kSmemBytes > std::size_t(kDefaultDynamicSmemBytes)) {
      FB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(Tr::kSmemBytes)));
    }
    FB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&w.per_sm, kernel, Tr::kThreads, Tr::kSmemBytes));
    cudaFuncAttributes fa{};
    FB_CUDA_CHECK(cudaFuncGetAttributes(&fa, kernel));
    w.pdl = programmatic_launch_ok(w.caps.major, fa.ptxVersion);
    return w;
  }();
  return shape;
}

// The blocks of flash_fwd_tc_kernel<Tr, kOpt> the device holds at once (one wave).
template <typename Tr, unsigned kOpt>
int resident_blocks() {
  const WaveShape& w = wave_shape<Tr, kOpt>();
  return std::max(1, w.sms * w.per_sm);
}

// kFwdPdlTail: the smallest dynamic shared memory size (4 KB steps from the kernel's own up to the opt-in limit less
// the kernel's static shared memory) at which an SM holds one block of the kernel, its attribute raised to that limit
// for the search; 0: none, or the kernel holds one block an SM already (the launch is not split). Worked out once per
// instantiation.
template <typename Tr, unsigned kOpt> int solo_block_smem_bytes() {
  static const int solo_bytes = [] {
    const WaveShape& w = wave_shape<Tr, kOpt>();
    if (w.per_sm < 2) return 0;
    const int optin = w.caps.smem_optin;
    const auto kernel = flash_fwd_tc_kernel<Tr, kOpt>;
    cudaFuncAttributes attr{};
    FB_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
    const int limit = optin - int(attr.sharedSizeBytes);  // the opt-in counts static shared memory too
    FB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, limit));
    for (int bytes = int(Tr::kSmemBytes); bytes <= limit; bytes += 4096) {
      int per_sm = 0;
      FB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, Tr::kThreads, bytes));
      if (per_sm == 1) return bytes;
    }
    return 0;
  }();
  return solo_bytes;
}

// kFwdKvTail: how a non-causal launch of flash_fwd_tc_kernel<Tr, kOpt> on the current device runs its partial last
// wave (pdl_tail_plan) and in how many pieces a work tile (kv_tail_splits), and the workspace those take: the pieces'
// partials, then (256-byte aligned) a counter a tail tile. pieces == 1: no pieces (no tail, too few K/V tiles, no
// programmatically dependent launches: WaveShape::pdl); the launch then runs kFwdPdlTail's solo tail where there is
// one. A grid of less than one wave is all tail (split.whole == 0) where its tiles get three pieces or more
// (subwave_pieces; under the probe kvsubwave two or more, under nokvsubwave never). Needs a device (wave_shape).
// A grid of less than one wave in pieces: their n counters zeroed ahead of a pieces launch with no first launch to zero
// them; it lets that launch, its programmatic dependent, start at once (the pieces read their counters after
// pdl_wait_primary()).
inline constexpr int kKvCountZeroThreads = 128;
template <typename Tr>
__global__ void __launch_bounds__(kKvCountZeroThreads) fwd_kv_count_zero_kernel(unsigned* __restrict__ count, int n) {
  pdl_launch_dependents();
  for (int i = int(threadIdx.x); i < n; i += kKvCountZeroThreads) count[i] = 0u;
}

struct KvTailPlan {
  TailSplit split{0, 0};
  int pieces = 1;
  std::size_t part_bytes = 0;  // the partials; the counters start here
  std::size_t bytes = 0;       // all of it
};
template <typename Tr, unsigned kOpt> KvTailPlan kv_tail_plan(const AttentionParams& p) {
  static_assert((kOpt & kFwdKvTail) != 0, "kv_tail_plan: a kFwdKvTail kernel");
  KvTailPlan k;
  if (p.causal) return k;
  const WaveShape& w = wave_shape<Tr, kOpt>();
  if (!w.pdl) return k;
  const long long blocks = static_cast<long long>(p.batch) * p.heads * ((p.seq_q + Tr::kBr - 1) / Tr::kBr);
  k.split = pdl_tail_plan(blocks, w.per_sm, w.sms);
  const int kv_tiles = (p.seq_k + Tr::kBc - 1) / Tr::kBc;
  int min_tiles = kKvTailMinTiles;
  // A grid of less than one wave (session 46's probe kvsubwave3, the default since call N (session 47's rule)): all
  // tail, its pieces launched after a block that zeroes their counters (launch_fwd_tc), where each tile gets
  // kKvSubwaveMinPieces or more of at least kKvSubwaveMinTiles K/V tiles; other grids whole. The probe kvsubwave
  // (session 45) takes two pieces or more of kKvTailMinTiles, nokvsubwave none.
  if (const int min_pieces = fwd_subwave_min_pieces(); k.split.tail == 0 && min_pieces > 0) {
    if (min_pieces >= kKvSubwaveMinPieces) min_tiles = kKvSubwaveMinTiles;
    if (subwave_pieces(blocks, w.per_sm, w.sms, kv_tiles, min_tiles, min_pieces) > 1)
      k.split = subwave_tail_plan(blocks, w.per_sm, w.sms);
  }
  if (k.split.tail == 0) return k;
  k.pieces = kv_tail_splits(k.split.tail, w.per_sm, w.sms, kv_tiles, min_tiles);
  if (k.pieces < 2) return k;
  constexpr std::size_t kAlign = 256;
  k.part_bytes = std::size_t(k.split.tail) * k.pieces * kv_tail_part_floats<Tr>() * sizeof(float);
  k.part_bytes = (k.part_bytes + kAlign - 1) / kAlign * kAlign;
  k.bytes = k.part_bytes + std::size_t(k.split.tail) * sizeof(unsigned);
  return k;
}

// Host side: one launch of the tensor-core forward with traits Tr and variant kOpt on `stream`. plane_group > 0
// replaces set_tile_order's plane group on a non-causal launch (1: one plane's query tiles after another).
// With kFwdQBand in kOpt (causal launches only), plane_group is the band of banded_tile; with kFwdQBandTail too,
// tail_waves (>= 1) sizes the grouped tail: the fewest shortest query tiles of every plane that make at least
// tail_waves device-fulls of blocks.
template <typename Tr, unsigned kOpt = 0>
void launch_fwd_tc(const AttentionParams& p, cudaStream_t stream, int plane_group = 0, int tail_waves = 0) {
  auto args = make_fwd_args<typename Tr::Elem, float>(p);
  const auto kernel = flash_fwd_tc_kernel<Tr, kOpt>;
  if (Tr::kSmemBytes > std::size_t(kDefaultDynamicSmemBytes)) {
    FB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       int(Tr::kSmemBytes)));
  }
  unsigned blocks = set_tile_order(args, p, Tr::kBr);
  if (plane_group > 0 && !p.causal) args.plane_group = plane_group;
  if constexpr ((kOpt & kFwdQBand) != 0) {
    if (!p.causal || plane_group < 1)
      throw std::logic_error("flash forward: kFwdQBand is for causal launches with a band");
    args.plane_group = plane_group;
  }
  if constexpr ((kOpt & kFwdQBandTail) != 0) {
    if (tail_waves < 1) throw std::logic_error("flash forward: kFwdQBandTail needs tail_waves >= 1");
    const std::int64_t tail_blocks = std::int64_t(tail_waves) * resident_blocks<Tr, kOpt>();
    args.band_tail = int(std::min<std::int64_t>(args.q_tiles, (tail_blocks + args.planes - 1) / args.planes));
  }
  if constexpr ((kOpt & kFwdL2Prefetch) != 0) args.prefetch_ahead = resident_blocks<Tr, kOpt>();
  if constexpr ((kOpt & kFwdPersist) != 0) {
    if (p.causal) throw std::logic_error("flash forward: kFwdPersist is for non-causal launches");
    blocks = std::min(blocks, unsigned(resident_blocks<Tr, kOpt>()));
  }
  if constexpr ((kOpt & kFwdPdlTail) != 0) {
    if (p.causal) throw std::logic_error("flash forward: kFwdPdlTail is for non-causal launches");
    // The whole waves, then the partial last wave (pdl_tail_plan) as a programmatically dependent launch at one
    // block an SM, where the device has such launches and runs code built for them (WaveShape::pdl; else the tail
    // would wait for the first launch's end, session 30's solotail) and a dynamic shared memory size that leaves one
    // block an SM exists; else one launch.
    const WaveShape& w = wave_shape<Tr, kOpt>();
    const int solo_bytes = w.pdl ? solo_block_smem_bytes<Tr, kOpt>() : 0;
    const TailSplit plan = solo_bytes > 0 ? pdl_tail_plan(blocks, w.per_sm, w.sms) : TailSplit{blocks, 0};
    // kFwdKvTail: the tail's work tiles in pieces at the kernel's own shared memory, in params.workspace (none, or
    // less than this kernel's plan takes: kFwdPdlTail's solo tail).
    if constexpr ((kOpt & kFwdKvTail) != 0) {
      const KvTailPlan kv = p.workspace != nullptr && solo_bytes > 0 ? kv_tail_plan<Tr, kOpt>(p) : KvTailPlan{};
      const bool subwave = kv.split.whole == 0 && plan.tail == 0;  // a grid of less than one wave, all in pieces
      if (kv.pieces > 1 && (kv.split.whole == plan.whole || subwave) && kv.bytes <= forward_workspace_bytes(p)) {
        auto* ws = static_cast<unsigned char*>(p.workspace);
        args.tail_part = reinterpret_cast<float*>(ws);
        args.tail_count = reinterpret_cast<unsigned*>(ws + kv.part_bytes);
        if (subwave) {  // no first launch: a block zeroes the counters, and the pieces may start beside it
          launch_kernel(fwd_kv_count_zero_kernel<Tr>, dim3(1), kKvCountZeroThreads, 0, stream, false,
                        args.tail_count, int(kv.split.tail));
        } else {
          args.tail_zero = int(kv.split.tail);
          kernel<<<unsigned(plan.whole), Tr::kThreads, Tr::kSmemBytes, stream>>>(args);
          FB_CUDA_CHECK_LAUNCH();
        }
        args.tile_base = int(kv.split.whole);
        args.tail_zero = 0;
        args.kv_splits = kv.pieces;
        launch_kernel(kernel, dim3(unsigned(kv.split.tail * kv.pieces)), Tr::kThreads, Tr::kSmemBytes, stream, true,
                      args);
        return;
      }
    }
    if (plan.tail > 0) {
      // The attribute above was set to the kernel's own size: the tail's launch asks for more.
      FB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, solo_bytes));
      kernel<<<unsigned(plan.whole), Tr::kThreads, Tr::kSmemBytes, stream>>>(args);
      FB_CUDA_CHECK_LAUNCH();
      args.tile_base = int(plan.whole);
      launch_kernel(kernel, dim3(unsigned(plan.tail)), Tr::kThreads, std::size_t(solo_bytes), stream, true, args);
      return;
    }
  }
  kernel<<<blocks, Tr::kThreads, Tr::kSmemBytes, stream>>>(args);
  FB_CUDA_CHECK_LAUNCH();
}

}  // namespace fb::cuda::flash
