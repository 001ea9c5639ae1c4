// Shared-memory tiles of the Hopper fp32 (3xTF32 wgmma) kernels: the layout TMA writes for fp32,
// the split of a tile into TF32 hi/lo, the transposition that makes an MN-major operand K-major
// (wgmma TF32 takes both operands K-major only), the TF32 A fragments built from a tile or from an
// accumulator, and the split GEMM both the forward (S = Q K^T) and the backward (S^T, dP^T, dQ^T)
// issue. Used by flash_sm90_tf32_kernel.cuh (forward) and flash_sm90_tf32_bwd_kernel.cuh.
//
// Layout: an fp32 (rows, cols) tile is cols / 32 column chunks of (rows, 32 floats): 128-byte rows,
// 8-row swizzle atoms of 1024 bytes (16-byte unit u of row r sits at unit u ^ (r % 8)), chunks
// `chunk_bytes` apart (rows * 128 when packed).
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/ptx.cuh"
#include "common/ptx_sm90.cuh"
#include "common/ptx_sm90_tf32.cuh"

namespace fb::cuda::tf32 {

inline constexpr int kChunkElems = 32;   // floats per 128-byte row
inline constexpr int kRowBytes = 128;
inline constexpr int kAtomBytes = 1024;  // 8 rows
inline constexpr int kUnitBytes = 16;
inline constexpr int kMmaK = 8;          // wgmma m64nNk8
inline constexpr int kMmaKBytes = kMmaK * 4;
inline constexpr int kStepsPerChunk = kChunkElems / kMmaK;

// Byte offset of element (row, col) of a (rows, 32)-float chunk (the chunk starts 1024-aligned).
__host__ __device__ constexpr std::uint32_t sw128_offset(int row, int col) {
  return std::uint32_t(row * kRowBytes + (((col / 4) ^ (row % 8)) * kUnitBytes) + (col % 4) * 4);
}

// A GEMM whose A operand comes from an accumulator (P, dS) runs each group of 8 reduction indices
// in the order k = t <-> index 2t, k = t + 4 <-> index 2t + 1 (the accumulator gives thread t
// columns 2t, 2t + 1; the TF32 A fragment wants k = t, t + 4). Position p (0..7) of such a k8 step
// holds index pv_key_of_position(p) of its group; the B operand is written in the same order.
__host__ __device__ constexpr int pv_key_of_position(int p) { return p < 4 ? 2 * p : 2 * (p - 4) + 1; }

#if FB_PTX_SM90A

// x, as a value the compiler cannot see through: addresses derived from it inside a loop body are
// not hoisted out of the loop (every k8 step's descriptor and fragment address of every GEMM is
// loop-invariant when the tiles do not move; hoisted, they would take a register each).
__device__ __forceinline__ std::uint32_t opaque(std::uint32_t x) {
  std::uint32_t r;
  asm volatile("mov.b32 %0, %1;\n" : "=r"(r) : "r"(x));
  return r;
}

// Start of k8 step kk in a K-major tile whose chunks are `chunk_bytes` apart.
__device__ __forceinline__ std::uint32_t kstep_addr(std::uint32_t tile, int chunk_bytes, int kk) {
  return tile + std::uint32_t((kk / kStepsPerChunk) * chunk_bytes + (kk % kStepsPerChunk) * kMmaKBytes);
}
__device__ __forceinline__ std::uint64_t kmajor_desc(std::uint32_t addr) {
  return ptx::make_desc_sw128(addr, kUnitBytes, kAtomBytes);
}

// kmajor_desc(tile + byte_off) from kmajor_desc(tile): one 32-bit add into the start-address field
// (bits 0-13, in 16-byte units) instead of rebuilding the descriptor (shift, mask, or, moves: ~6
// uniform instructions per wgmma). No carry leaves the field: shared-memory addresses stay below
// 228 KB, i.e. below 2^14 units. byte_off: a multiple of 16.
__device__ __forceinline__ std::uint64_t desc_add(std::uint64_t desc, std::uint32_t byte_off) {
  return (desc & 0xFFFFFFFF00000000ull) | std::uint32_t(std::uint32_t(desc) + (byte_off >> 4));
}
// Byte offset of k8 step kk in a K-major tile whose chunks are `chunk_bytes` apart (see kstep_addr).
__host__ __device__ constexpr std::uint32_t kstep_off(int chunk_bytes, int kk) {
  return std::uint32_t((kk / kStepsPerChunk) * chunk_bytes + (kk % kStepsPerChunk) * kMmaKBytes);
}
// The descriptor of k8 step kk of a K-major tile: kBase = true from the tile's descriptor plus a
// constant (desc_add; the tile's descriptor is common to every step, computed once), false rebuilt
// from the step's address.
template <bool kBase>
__device__ __forceinline__ std::uint64_t kstep_desc(std::uint32_t tile, int chunk_bytes, int kk) {
  if constexpr (kBase) return desc_add(kmajor_desc(tile), kstep_off(chunk_bytes, kk));
  else return kmajor_desc(kstep_addr(tile, chunk_bytes, kk));
}

// The split out of place: the tile at `src` (kBytes as TMA wrote it) -> hi = tf32(x) at `hi`,
// lo = tf32(x - hi) at `lo` (same layout: the split is elementwise on 16-byte units), by kThreads
// threads; `src` is only read. kRn: rounding by cvt.rn (ptx::split_tf32_as).
template <int kBytes, int kThreads, bool kSplit, bool kRn = false>
__device__ __forceinline__ void split_tile_from(std::uint32_t src, std::uint32_t hi, std::uint32_t lo, int tid) {
  constexpr int kUnits = kBytes / kUnitBytes;
  static_assert(kUnits % kThreads == 0, "the threads share the tile evenly");
#pragma unroll (kRn ? 2 : 4)
  for (int u = tid; u < kUnits; u += kThreads) {
    const std::uint32_t off = std::uint32_t(u * kUnitBytes);
    const float4 x = ptx::ld_shared_f32x4(src + off);
    std::uint32_t h[4], l[4];
    ptx::split_tf32_as<kRn>(x.x, h[0], l[0]);
    ptx::split_tf32_as<kRn>(x.y, h[1], l[1]);
    ptx::split_tf32_as<kRn>(x.z, h[2], l[2]);
    ptx::split_tf32_as<kRn>(x.w, h[3], l[3]);
    ptx::st_shared_u32x4(hi + off, h[0], h[1], h[2], h[3]);
    if constexpr (kSplit) ptx::st_shared_u32x4(lo + off, l[0], l[1], l[2], l[3]);
  }
}

// The same split in place: the tile at `hi` becomes hi = tf32(x), lo = tf32(x - hi) goes to `lo`.
template <int kBytes, int kThreads, bool kSplit, bool kRn = false>
__device__ __forceinline__ void split_tile(std::uint32_t hi, std::uint32_t lo, int tid) {
  split_tile_from<kBytes, kThreads, kSplit, kRn>(hi, hi, lo, tid);
}

// A (kRows, kCols) tile as TMA wrote it (kCols / 32 chunks of kRows rows) -> its transpose
// (kCols, kRows), K-major along the rows for a GEMM that sums over them (kRows / 32 chunks of kCols
// rows), each group of 8 rows permuted (pv_key_of_position) and split into hi and lo. One work item
// = one column n and one group of 8 rows: 8 scalar reads (a warp reads 32 columns of one row:
// conflict-free), two 16-byte writes per part.
template <int kRows, int kCols, int kThreads, bool kSplit, bool kRn = false>
__device__ __forceinline__ void transpose_split_tile(std::uint32_t raw, std::uint32_t hi,
                                                     std::uint32_t lo, int tid) {
  constexpr int kItems = kCols * (kRows / 8);
  constexpr int kSrcChunkBytes = kRows * kRowBytes;
  constexpr int kDstChunkBytes = kCols * kRowBytes;
  static_assert(kItems % kThreads == 0 && kCols % kChunkElems == 0 && kRows % kChunkElems == 0,
                "whole chunks, shared evenly");
#pragma unroll (kRn ? 1 : 2)
  for (int item = tid; item < kItems; item += kThreads) {
    const int n = item % kCols;
    const int grp = item / kCols;
    const std::uint32_t src = raw + std::uint32_t((n / kChunkElems) * kSrcChunkBytes);
    float x[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) x[e] = ptx::ld_shared_f32(src + sw128_offset(grp * 8 + e, n % kChunkElems));
    const int kk = grp * 8;  // first position in the transposed tile
    const std::uint32_t dst = std::uint32_t((kk / kChunkElems) * kDstChunkBytes);
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const std::uint32_t off = dst + sw128_offset(n, kk % kChunkElems + half * 4);
      std::uint32_t h[4], l[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) ptx::split_tf32_as<kRn>(x[pv_key_of_position(half * 4 + i)], h[i], l[i]);
      ptx::st_shared_u32x4(hi + off, h[0], h[1], h[2], h[3]);
      if constexpr (kSplit) ptx::st_shared_u32x4(lo + off, l[0], l[1], l[2], l[3]);
    }
  }
}

// transpose_split_tile's transposition of a tile already split (hi, and with kSplit lo, in the
// layout TMA writes): the same permuted K-major transpose of each part, copied without rounding.
// Lets the split run first (its operands are needed first) and the transposition later.
// kSrcChunkBytes: the source parts' chunk stride (packed by default; twice that when each chunk of hi is
// followed by its chunk of lo).
template <int kRows, int kCols, int kThreads, bool kSplit, int kSrcChunkBytes = kRows * kRowBytes>
__device__ __forceinline__ void transpose_parts_tile(std::uint32_t src_hi, std::uint32_t src_lo,
                                                     std::uint32_t hi, std::uint32_t lo, int tid) {
  constexpr int kItems = kCols * (kRows / 8);
  constexpr int kDstChunkBytes = kCols * kRowBytes;
  static_assert(kItems % kThreads == 0 && kCols % kChunkElems == 0 && kRows % kChunkElems == 0,
                "whole chunks, shared evenly");
#pragma unroll 2
  for (int item = tid; item < kItems; item += kThreads) {
    const int n = item % kCols;
    const int grp = item / kCols;
    const std::uint32_t src = std::uint32_t((n / kChunkElems) * kSrcChunkBytes);
    const int kk = grp * 8;  // first position in the transposed tile
    const std::uint32_t dst = std::uint32_t((kk / kChunkElems) * kDstChunkBytes);
#pragma unroll
    for (int part = 0; part < (kSplit ? 2 : 1); ++part) {
      const std::uint32_t from = (part == 0 ? src_hi : src_lo) + src;
      const std::uint32_t to = part == 0 ? hi : lo;
      std::uint32_t x[8];
#pragma unroll
      for (int e = 0; e < 8; ++e)
        x[e] = __float_as_uint(ptx::ld_shared_f32(from + sw128_offset(grp * 8 + e, n % kChunkElems)));
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const std::uint32_t off = dst + sw128_offset(n, kk % kChunkElems + half * 4);
        ptx::st_shared_u32x4(to + off, x[pv_key_of_position(half * 4)], x[pv_key_of_position(half * 4 + 1)],
                             x[pv_key_of_position(half * 4 + 2)], x[pv_key_of_position(half * 4 + 3)]);
      }
    }
  }
}

// The TF32 A fragment of k8 step kk, read from a K-major fp32 tile (raw values; the caller splits):
// rows = this warpgroup's first row in each chunk; a[0] (row, k t), a[1] (row + 8, k t),
// a[2] (row, k t + 4), a[3] (row + 8, k t + 4), row = 16 warp + g.
__device__ __forceinline__ void load_kmajor_fragment(float (&x)[4], std::uint32_t rows, int chunk_bytes,
                                                     int warp, int lane, int kk) {
  const int g = lane / 4, t = lane % 4;
  const int row = warp * 16 + g;
  const int col = (kk % kStepsPerChunk) * kMmaK + t;
  const std::uint32_t base = rows + std::uint32_t((kk / kStepsPerChunk) * chunk_bytes);
  x[0] = ptx::ld_shared_f32(base + sw128_offset(row, col));
  x[1] = ptx::ld_shared_f32(base + sw128_offset(row + 8, col));
  x[2] = ptx::ld_shared_f32(base + sw128_offset(row, col + 4));
  x[3] = ptx::ld_shared_f32(base + sw128_offset(row + 8, col + 4));
}

// The same fragment of the transposed tile: A = X^T for a tile X (K rows, M columns) stored as
// above; `col0` = this warpgroup's first column of X (a multiple of 64), k8 step kk over X's rows
// from `row0` (a multiple of 8). a[0] = X[row0 + 8 kk + t][col0 + 16 warp + g], a[1] the column
// + 8, a[2] the row + 4, a[3] both. A row's swizzle depends on it mod 8 (t or t + 4) only, so the
// four addresses are per-thread bases plus offsets the compiler folds into immediates (written out
// so: hoisted per step, they would hold 4 registers a step). kPermuted: X's rows in the order of
// acc_fragment (k = t <-> row 2t, k = t + 4 <-> row 2t + 1), for a B operand written permuted.
template <bool kPermuted = false, typename T>
__device__ __forceinline__ void load_mnmajor_fragment(T (&x)[4], std::uint32_t tile, int chunk_bytes,
                                                      int row0, int col0, int warp, int lane, int kk) {
  static_assert(sizeof(T) == 4, "fp32 values or TF32 bit patterns");
  const int g = lane / 4, t = lane % 4;
  const int col = warp * 16 + g;  // inside a 64-column block: col and col + 8 share a chunk
  const std::uint32_t base = tile + std::uint32_t((col0 / kChunkElems + col / kChunkElems) * chunk_bytes +
                                                  (row0 + kk * kMmaK) * kRowBytes);
  const int c = col % kChunkElems;
  const int r0 = kPermuted ? 2 * t : t, r1 = kPermuted ? 2 * t + 1 : t + 4;
  const std::uint32_t off[4] = {sw128_offset(r0, c), sw128_offset(r0, c + 8), sw128_offset(r1, c),
                                sw128_offset(r1, c + 8)};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float v = ptx::ld_shared_f32(base + off[i]);
    if constexpr (std::is_same_v<T, float>) x[i] = v;
    else x[i] = __float_as_uint(v);
  }
}

// The A fragment of k8 step kk from accumulator-layout registers (the permuted order above).
template <int kRegs>
__device__ __forceinline__ void acc_fragment(std::uint32_t (&a)[4], const std::uint32_t (&p)[kRegs], int kk) {
  a[0] = p[4 * kk];
  a[1] = p[4 * kk + 2];
  a[2] = p[4 * kk + 1];
  a[3] = p[4 * kk + 3];
}

// C = A B^T with A's fragments built in registers (load(kk, x) gives the raw fp32 fragment of k8
// step kk; it is split here) and B's hi / lo parts in shared memory (b_hi(kk), b_lo(kk): the
// K-major descriptors of step kk), into two accumulators whose sum is C: ca takes hi*hi of the first
// half of the steps; cb first every small product (lo_a*hi_b, hi_a*lo_b), then hi*hi of the second
// half. The tensor core truncates each sum it adds into an accumulator; a chain of kSteps such sums
// at |C|'s scale would cost more than fp32 rounding. kSplit = false (1xTF32): hi*hi into ca, cb = 0.
// Groups of kGroup steps are committed with one group in flight (bounds the live fragments).
// Returns with every wgmma complete. gemm_split_rs_gated, for B arriving and leaving in parts (e.g.
// per TMA box): gate(kk) runs before the first wgmma that reads B's step kk; retired(kk_end) runs
// once every wgmma of the first pass over steps [0, kk_end) is complete (B's parts that only the
// first pass reads, lo and hi of the first half of the steps, may then be replaced).
// kRn: the splits round by cvt.rn (ptx::split_tf32_as).
// kBatched: a group's fragments are all built before one wgmma.fence and its wgmmas, so that they
// form one batch in SASS (a fence per step makes every wgmma a batch of its own, and waiting for all
// but the last group then drains the tensor pipe to one wgmma); the same registers live either way.
template <int N, int kSteps, int kGroup, bool kSplit, bool kBatched = false, bool kRn = false, typename Load,
          typename DescHi, typename DescLo, typename Gate, typename Retired>
__device__ __forceinline__ void gemm_split_rs_gated(float (&ca)[N / 2], float (&cb)[N / 2], Load&& load,
                                                    DescHi&& b_hi, DescLo&& b_lo, Gate&& gate,
                                                    Retired&& retired) {
  constexpr int kHalf = kSteps / 2;
  static_assert(kSteps % kGroup == 0 && kHalf % kGroup == 0, "whole commit groups");
  auto issue_group = [&](int first, auto&& body) {
    if constexpr (kBatched) {
      std::uint32_t hi[kGroup][4], lo[kGroup][4];
#pragma unroll
      for (int g = 0; g < kGroup; ++g) {
        if (body.first_pass) gate(first + g);
        float x[4];
        load(first + g, x);
#pragma unroll
        for (int i = 0; i < 4; ++i) ptx::split_tf32_as<kRn>(x[i], hi[g][i], lo[g][i]);
      }
      ptx::wgmma_fence();  // the fragments were written by ordinary instructions
#pragma unroll
      for (int g = 0; g < kGroup; ++g) body(first + g, hi[g], lo[g]);
    } else {
#pragma unroll
      for (int kk = first; kk < first + kGroup; ++kk) {
        if (body.first_pass) gate(kk);
        float x[4];
        load(kk, x);
        std::uint32_t hi[4], lo[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) ptx::split_tf32_as<kRn>(x[i], hi[i], lo[i]);
        ptx::wgmma_fence();  // the fragments were written by ordinary instructions
        body(kk, hi, lo);
      }
    }
    ptx::wgmma_commit();
    ptx::wgmma_wait<1>();
    // Every group before this one is complete: first-pass steps [0, first), or, after the second
    // pass's first group, all of them (reported once).
    if (body.first_pass) retired(first);
    else if (first == kHalf) retired(kSteps);
  };
  // The step bodies: first_pass says whether a body is the first to read its steps of B.
  auto step_body = [](bool first, auto&& f) {
    struct Body {
      bool first_pass;
      std::remove_reference_t<decltype(f)> f;
      __device__ __forceinline__ void operator()(int kk, const std::uint32_t (&hi)[4],
                                                 const std::uint32_t (&lo)[4]) { f(kk, hi, lo); }
    };
    return Body{first, f};
  };
  if constexpr (kSplit) {
#pragma unroll
    for (int g0 = 0; g0 < kSteps; g0 += kGroup)
      issue_group(g0, step_body(true, [&](int kk, const std::uint32_t(&hi)[4], const std::uint32_t(&lo)[4]) {
        const std::uint64_t dh = b_hi(kk);
        ptx::wgmma_rs_tf32<N>(cb, lo, dh, kk > 0);
        ptx::wgmma_rs_tf32<N>(cb, hi, b_lo(kk), 1);
        if (kk < kHalf) ptx::wgmma_rs_tf32<N>(ca, hi, dh, kk > 0);
      }));
#pragma unroll
    for (int g0 = kHalf; g0 < kSteps; g0 += kGroup)
      issue_group(g0, step_body(false, [&](int kk, const std::uint32_t(&hi)[4], const std::uint32_t(&)[4]) {
        ptx::wgmma_rs_tf32<N>(cb, hi, b_hi(kk), 1);
      }));
  } else {
#pragma unroll
    for (int i = 0; i < N / 2; ++i) cb[i] = 0.f;
#pragma unroll
    for (int g0 = 0; g0 < kSteps; g0 += kGroup)
      issue_group(g0, step_body(true, [&](int kk, const std::uint32_t(&hi)[4], const std::uint32_t(&)[4]) {
        ptx::wgmma_rs_tf32<N>(ca, hi, b_hi(kk), kk > 0);
      }));
  }
  ptx::wgmma_wait<0>();
  ptx::fence_operands(ca);
  ptx::fence_operands(cb);
}

// gemm_split_rs_gated's products in one pass over the steps, into three accumulators: ca = hi*hi of
// the first half of the steps, cb = hi*hi of the second half, cc = every small product (lo_a*hi_b,
// hi_a*lo_b); the caller sums C = (cc + cb) + ca. The chains at |C|'s scale are as long as the
// two-pass form's (kSteps / 2 each), but each step's fragment is built and split once (the two-pass
// form rebuilds the second half's for its hi*hi pass: 4 loads and 4 splits a step) and no step is
// issued alone. Every group of kGroup steps is built first, then one wgmma.fence and its 3 * kGroup
// wgmmas (one batch), with one group in flight; the next group's raw fragments are loaded before
// that wait. gate / retired as in gemm_split_rs_gated (retired(kk_end): every wgmma of steps
// [0, kk_end) is complete). kSplit = false: gemm_split_rs_gated, cc = 0. Returns with every wgmma
// complete.
template <int N, int kSteps, int kGroup, bool kSplit, bool kRn, typename Load, typename DescHi, typename DescLo,
          typename Gate, typename Retired>
__device__ __forceinline__ void gemm_split_rs_gated3(float (&ca)[N / 2], float (&cb)[N / 2], float (&cc)[N / 2],
                                                     Load&& load, DescHi&& b_hi, DescLo&& b_lo, Gate&& gate,
                                                     Retired&& retired) {
  if constexpr (!kSplit) {
#pragma unroll
    for (int i = 0; i < N / 2; ++i) cc[i] = 0.f;
    gemm_split_rs_gated<N, kSteps, kGroup, kSplit, true, kRn>(ca, cb, load, b_hi, b_lo, gate, retired);
  } else {
    constexpr int kHalf = kSteps / 2;
    static_assert(kSteps % kGroup == 0 && kHalf % kGroup == 0, "whole commit groups");
    // The raw fragments of the next group are loaded before the wait for the group in flight, so
    // that their latency overlaps it (a wait orders memory: loads after it would start only then).
    float x[kGroup][4];
#pragma unroll
    for (int g = 0; g < kGroup; ++g) load(g, x[g]);
#pragma unroll
    for (int g0 = 0; g0 < kSteps; g0 += kGroup) {
      std::uint32_t hi[kGroup][4], lo[kGroup][4];
#pragma unroll
      for (int g = 0; g < kGroup; ++g) {
        gate(g0 + g);
#pragma unroll
        for (int i = 0; i < 4; ++i) ptx::split_tf32_as<kRn>(x[g][i], hi[g][i], lo[g][i]);
      }
      ptx::wgmma_fence();  // the fragments were written by ordinary instructions
#pragma unroll
      for (int g = 0; g < kGroup; ++g) {
        const int kk = g0 + g;
        const std::uint64_t dh = b_hi(kk);
        // Interleaved so that no wgmma depends on the one issued just before it.
        ptx::wgmma_rs_tf32<N>(cc, lo[g], dh, kk > 0);
        if (kk < kHalf) ptx::wgmma_rs_tf32<N>(ca, hi[g], dh, kk > 0);
        else ptx::wgmma_rs_tf32<N>(cb, hi[g], dh, kk > kHalf);
        ptx::wgmma_rs_tf32<N>(cc, hi[g], b_lo(kk), 1);
      }
      ptx::wgmma_commit();
      if (g0 + kGroup < kSteps) {
#pragma unroll
        for (int g = 0; g < kGroup; ++g) load(g0 + kGroup + g, x[g]);
      }
      ptx::wgmma_wait<1>();
      retired(g0);
    }
    ptx::wgmma_wait<0>();
    retired(kSteps);
    ptx::fence_operands(ca);
    ptx::fence_operands(cb);
    ptx::fence_operands(cc);
  }
}

// gemm_split_rs_gated with B wholly in place before the call.
template <int N, int kSteps, int kGroup, bool kSplit, typename Load, typename DescHi, typename DescLo>
__device__ __forceinline__ void gemm_split_rs(float (&ca)[N / 2], float (&cb)[N / 2], Load&& load,
                                              DescHi&& b_hi, DescLo&& b_lo) {
  gemm_split_rs_gated<N, kSteps, kGroup, kSplit>(ca, cb, load, b_hi, b_lo, [](int) {}, [](int) {});
}

// C = A B^T, fresh, with A's TF32 hi / lo fragments from frag(kk, part, a) (part 0 = hi, 1 = lo;
// from accumulator-layout registers or from split tiles) and B's in shared memory: small products
// first (lo_a*hi_b, hi_a*lo_b), then hi*hi, so that the truncated sums stay at the small products'
// scale as long as possible. Issued and committed, not waited for: the fragments must stay
// untouched until the caller's wgmma_wait.
template <int N, int kSteps, bool kSplit, typename Frag, typename DescHi, typename DescLo>
__device__ __forceinline__ void gemm_frag_a(float (&c)[N / 2], Frag&& frag, DescHi&& b_hi, DescLo&& b_lo) {
  // Every fragment first, then the fence: registers written after wgmma.fence may not be read by
  // the wgmmas it orders (for accumulator registers this is only renaming).
  std::uint32_t ah[kSteps][4], al[kSteps][4];
#pragma unroll
  for (int kk = 0; kk < kSteps; ++kk) {
    frag(kk, 0, ah[kk]);
    if constexpr (kSplit) frag(kk, 1, al[kk]);
  }
  ptx::wgmma_fence();
  if constexpr (kSplit) {
#pragma unroll
    for (int kk = 0; kk < kSteps; ++kk) ptx::wgmma_rs_tf32<N>(c, al[kk], b_hi(kk), kk > 0);
#pragma unroll
    for (int kk = 0; kk < kSteps; ++kk) ptx::wgmma_rs_tf32<N>(c, ah[kk], b_lo(kk), 1);
  }
#pragma unroll
  for (int kk = 0; kk < kSteps; ++kk) ptx::wgmma_rs_tf32<N>(c, ah[kk], b_hi(kk), kSplit || kk > 0);
  ptx::wgmma_commit();
}

// kGemms independent split GEMMs C_g = A_g B_g^T issued interleaved, each into kAccs separate
// accumulators (c[g][0..kAccs)), so that no wgmma waits for the one issued just before it: small
// wgmmas (N 16, 32) chained on one accumulator are bound by the tensor pipe's latency, not its rate.
// Per GEMM: c[g][0] = hi*hi of the first half of the steps, c[g][1] = hi*hi of the second half (each
// chain at |C|'s scale is as long as gemm_split_rs's), c[g][2] = lo_a*hi_b and, with kAccs = 4,
// c[g][3] = hi_a*lo_b (kAccs = 3: both small products in c[g][2]). sum_split_accs adds them, the small
// ones first. load(g, kk, x): A's raw fp32 fragment of step kk (split here); b_hi(g, kk), b_lo(g, kk):
// B's K-major descriptors. Groups of kGroup steps (every GEMM's fragments built first, one
// wgmma_fence) with one group in flight. kSplit = false (1xTF32): hi*hi into c[g][0], the rest 0.
// Returns with every wgmma complete.
template <int N, int kSteps, int kGroup, bool kSplit, int kGemms, int kAccs, bool kRn = false, typename Load,
          typename DescHi, typename DescLo>
__device__ __forceinline__ void gemm_split_rs_multi(float (&c)[kGemms][kAccs][N / 2], Load&& load,
                                                    DescHi&& b_hi, DescLo&& b_lo) {
  constexpr int kHalf = kSteps / 2;
  constexpr int kLoHi = 2, kHiLo = kAccs - 1;
  static_assert(kAccs == 3 || kAccs == 4, "hi*hi in two halves, the small products in one or two");
  static_assert(kSteps % kGroup == 0 && kHalf % kGroup == 0, "whole commit groups");
  if constexpr (!kSplit) {
#pragma unroll
    for (int g = 0; g < kGemms; ++g)
#pragma unroll
      for (int a = 1; a < kAccs; ++a)
#pragma unroll
        for (int i = 0; i < N / 2; ++i) c[g][a][i] = 0.f;
  }
#pragma unroll
  for (int g0 = 0; g0 < kSteps; g0 += kGroup) {
    std::uint32_t hi[kGroup][kGemms][4], lo[kGroup][kGemms][4];
#pragma unroll
    for (int s = 0; s < kGroup; ++s)
#pragma unroll
      for (int g = 0; g < kGemms; ++g) {
        float x[4];
        load(g, g0 + s, x);
#pragma unroll
        for (int i = 0; i < 4; ++i) ptx::split_tf32_as<kRn>(x[i], hi[s][g][i], lo[s][g][i]);
      }
    ptx::wgmma_fence();  // the fragments were written by ordinary instructions
#pragma unroll
    for (int s = 0; s < kGroup; ++s) {
      const int kk = g0 + s;
      const int hh = kk < kHalf ? 0 : 1;
      const bool hh_acc = kk != 0 && kk != kHalf;
      if constexpr (kSplit) {
#pragma unroll
        for (int g = 0; g < kGemms; ++g) ptx::wgmma_rs_tf32<N>(c[g][kLoHi], lo[s][g], b_hi(g, kk), kk > 0);
#pragma unroll
        for (int g = 0; g < kGemms; ++g) ptx::wgmma_rs_tf32<N>(c[g][hh], hi[s][g], b_hi(g, kk), hh_acc);
#pragma unroll
        for (int g = 0; g < kGemms; ++g)
          ptx::wgmma_rs_tf32<N>(c[g][kHiLo], hi[s][g], b_lo(g, kk), kAccs == 3 || kk > 0);
      } else {
#pragma unroll
        for (int g = 0; g < kGemms; ++g) ptx::wgmma_rs_tf32<N>(c[g][0], hi[s][g], b_hi(g, kk), kk > 0);
      }
    }
    ptx::wgmma_commit();
    ptx::wgmma_wait<1>();
  }
  ptx::wgmma_wait<0>();
#pragma unroll
  for (int g = 0; g < kGemms; ++g)
#pragma unroll
    for (int a = 0; a < kAccs; ++a) ptx::fence_operands(c[g][a]);
}

// C = the sum of gemm_split_rs_multi's accumulators of one GEMM, small products first, into acc[0].
template <int kAccs, int kRegs> __device__ __forceinline__ void sum_split_accs(float (&acc)[kAccs][kRegs]) {
#pragma unroll
  for (int i = 0; i < kRegs; ++i) {
    float small = acc[2][i];
    if constexpr (kAccs == 4) small += acc[3][i];
    acc[0][i] = (small + acc[1][i]) + acc[0][i];
  }
}

// Two gemm_frag_a GEMMs (fresh C_g = A_g B_g^T, A's hi / lo fragments from frag(g, kk, part, a))
// issued interleaved, so that neither waits for its own previous wgmma; the same order of products
// per GEMM as gemm_frag_a (small first). Issued and committed as one group, not waited for.
template <int N, int kSteps, bool kSplit, typename Frag, typename DescHi, typename DescLo>
__device__ __forceinline__ void gemm_frag_a_pair(float (&c0)[N / 2], float (&c1)[N / 2], Frag&& frag,
                                                 DescHi&& b_hi, DescLo&& b_lo) {
  std::uint32_t ah[2][kSteps][4], al[2][kSteps][4];
#pragma unroll
  for (int g = 0; g < 2; ++g)
#pragma unroll
    for (int kk = 0; kk < kSteps; ++kk) {
      frag(g, kk, 0, ah[g][kk]);
      if constexpr (kSplit) frag(g, kk, 1, al[g][kk]);
    }
  ptx::wgmma_fence();
  if constexpr (kSplit) {
#pragma unroll
    for (int kk = 0; kk < kSteps; ++kk) {
      ptx::wgmma_rs_tf32<N>(c0, al[0][kk], b_hi(0, kk), kk > 0);
      ptx::wgmma_rs_tf32<N>(c1, al[1][kk], b_hi(1, kk), kk > 0);
    }
#pragma unroll
    for (int kk = 0; kk < kSteps; ++kk) {
      ptx::wgmma_rs_tf32<N>(c0, ah[0][kk], b_lo(0, kk), 1);
      ptx::wgmma_rs_tf32<N>(c1, ah[1][kk], b_lo(1, kk), 1);
    }
  }
#pragma unroll
  for (int kk = 0; kk < kSteps; ++kk) {
    ptx::wgmma_rs_tf32<N>(c0, ah[0][kk], b_hi(0, kk), kSplit || kk > 0);
    ptx::wgmma_rs_tf32<N>(c1, ah[1][kk], b_hi(1, kk), kSplit || kk > 0);
  }
  ptx::wgmma_commit();
}

// TF32 wgmma with A and B from shared memory, both K-major (TF32 has no transpose bits).
template <int N> struct WgmmaSSTf32;
template <> struct WgmmaSSTf32<32> {
  FB_WGMMA_SS_BODY(16, "m64n32k8.f32.tf32.tf32", "%16", "%17", "%18", "1, 1")
};
template <> struct WgmmaSSTf32<64> {
  FB_WGMMA_SS_BODY(32, "m64n64k8.f32.tf32.tf32", "%32", "%33", "%34", "1, 1")
};
template <int N>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], std::uint64_t desc_a, std::uint64_t desc_b,
                                         std::uint32_t accumulate) {
  WgmmaSSTf32<N>::run(d, desc_a, desc_b, accumulate);
}

// gemm_split_rs_multi's products and accumulators (c[g][0..kAccs)) with A's hi / lo parts already
// split in shared memory (K-major): a(g, kk, part) gives A's descriptor of step kk (part 0 = hi,
// 1 = lo), b(g, kk, part) B's. No A fragments in registers, so every step is issued before one
// commit. Returns with every wgmma complete.
template <int N, int kSteps, bool kSplit, int kGemms, int kAccs, typename DescA, typename DescB>
__device__ __forceinline__ void gemm_split_ss_multi(float (&c)[kGemms][kAccs][N / 2], DescA&& a, DescB&& b) {
  constexpr int kHalf = kSteps / 2;
  constexpr int kLoHi = 2, kHiLo = kAccs - 1;
  static_assert(kAccs == 3 || kAccs == 4, "hi*hi in two halves, the small products in one or two");
  if constexpr (!kSplit) {
#pragma unroll
    for (int g = 0; g < kGemms; ++g)
#pragma unroll
      for (int x = 1; x < kAccs; ++x)
#pragma unroll
        for (int i = 0; i < N / 2; ++i) c[g][x][i] = 0.f;
  }
  ptx::wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < kSteps; ++kk) {
    const int hh = kk < kHalf ? 0 : 1;
    const bool hh_acc = kk != 0 && kk != kHalf;
    if constexpr (kSplit) {
#pragma unroll
      for (int g = 0; g < kGemms; ++g) wgmma_ss<N>(c[g][kLoHi], a(g, kk, 1), b(g, kk, 0), kk > 0);
#pragma unroll
      for (int g = 0; g < kGemms; ++g) wgmma_ss<N>(c[g][hh], a(g, kk, 0), b(g, kk, 0), hh_acc);
#pragma unroll
      for (int g = 0; g < kGemms; ++g) wgmma_ss<N>(c[g][kHiLo], a(g, kk, 0), b(g, kk, 1), kAccs == 3 || kk > 0);
    } else {
#pragma unroll
      for (int g = 0; g < kGemms; ++g) wgmma_ss<N>(c[g][0], a(g, kk, 0), b(g, kk, 0), kk > 0);
    }
  }
  ptx::wgmma_commit();
  ptx::wgmma_wait<0>();
#pragma unroll
  for (int g = 0; g < kGemms; ++g)
#pragma unroll
    for (int x = 0; x < kAccs; ++x) ptx::fence_operands(c[g][x]);
}

// gemm_split_rs_multi with A's hi / lo fragments read already split (frag(kk, part, a): part 0 =
// hi, 1 = lo; e.g. load_mnmajor_fragment from split tiles) instead of split in registers; one GEMM.
template <int N, int kSteps, int kGroup, bool kSplit, int kAccs, typename Frag, typename DescHi, typename DescLo>
__device__ __forceinline__ void gemm_split_rs_parts(float (&c)[1][kAccs][N / 2], Frag&& frag, DescHi&& b_hi,
                                                    DescLo&& b_lo) {
  constexpr int kHalf = kSteps / 2;
  constexpr int kLoHi = 2, kHiLo = kAccs - 1;
  static_assert(kAccs == 3 || kAccs == 4, "hi*hi in two halves, the small products in one or two");
  static_assert(kSteps % kGroup == 0 && kHalf % kGroup == 0, "whole commit groups");
  if constexpr (!kSplit) {
#pragma unroll
    for (int x = 1; x < kAccs; ++x)
#pragma unroll
      for (int i = 0; i < N / 2; ++i) c[0][x][i] = 0.f;
  }
#pragma unroll
  for (int g0 = 0; g0 < kSteps; g0 += kGroup) {
    std::uint32_t hi[kGroup][4], lo[kGroup][4];
#pragma unroll
    for (int s = 0; s < kGroup; ++s) {
      frag(g0 + s, 0, hi[s]);
      if constexpr (kSplit) frag(g0 + s, 1, lo[s]);
    }
    ptx::wgmma_fence();  // the fragments were written by ordinary instructions
#pragma unroll
    for (int s = 0; s < kGroup; ++s) {
      const int kk = g0 + s;
      if constexpr (kSplit) {
        ptx::wgmma_rs_tf32<N>(c[0][kLoHi], lo[s], b_hi(kk), kk > 0);
        ptx::wgmma_rs_tf32<N>(c[0][kk < kHalf ? 0 : 1], hi[s], b_hi(kk), kk != 0 && kk != kHalf);
        ptx::wgmma_rs_tf32<N>(c[0][kHiLo], hi[s], b_lo(kk), kAccs == 3 || kk > 0);
      } else {
        ptx::wgmma_rs_tf32<N>(c[0][0], hi[s], b_hi(kk), kk > 0);
      }
    }
    ptx::wgmma_commit();
    ptx::wgmma_wait<1>();
  }
  ptx::wgmma_wait<0>();
#pragma unroll
  for (int x = 0; x < kAccs; ++x) ptx::fence_operands(c[0][x]);
}

#endif  // FB_PTX_SM90A

}  // namespace fb::cuda::tf32
