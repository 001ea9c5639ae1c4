// FlashAttention forward for Hopper (sm_90a) with fp32 inputs on TF32 tensor cores: the 3xTF32
// split (hi*hi + hi*lo + lo*hi, fp32 accumulators) on wgmma. Roles and sizes: flash_sm90_tf32_traits.h.
//
// One block per (batch * head, 128-row query tile), in the L2-grouped order of common/tile_order.h. Per K/V tile j (kBc keys), per consumer
// warpgroup (64 query rows):
//   S_j = Q K_j^T              wgmma m64n{kBc}k8, A = Q's TF32 hi/lo fragments built in registers
//                              from the raw Q tile, B = K_hi / K_lo (K-major, as TMA loads K)
//   online softmax             in registers, base 2, fp32
//   O_tile = P_j V_j           wgmma m64n{d}k8, A = P's hi/lo in registers, B = Vt_hi / Vt_lo
//   O = alpha O + O_tile       one fp32 FMA per element
//
// P without shuffles: the accumulator gives thread (g, t) keys 2t, 2t+1 of each group of 8, the
// TF32 A fragment wants k = t, t+4. The sum over keys does not care about their order, so P V runs
// each group of 8 keys in the order k = t <-> key 2t, k = t+4 <-> key 2t+1: the accumulator
// registers (d0, d2, d1, d3) of an n8 block are the A fragment of that k8 step, and the producer
// writes Vt with the same permutation (Vt position p of a group holds key 2p for p < 4, 2(p-4)+1
// for p >= 4).
//
// Accuracy (docs/perf-notes.md, "flash-sm90 fp32"): operands are rounded to TF32 to nearest (cvt.rn,
// one SASS instruction, as shipped since session 7; cvt.rna in Session6; the tensor core would
// truncate), lo = tf32(x - hi) (x - hi is exact); the tensor core truncates
// every sum it adds into an accumulator, so small products go first into an accumulator of their
// own, S's hi*hi chain is cut in two, and O is never accumulated in the tensor core across tiles.
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap (a type only)
#include <cuda_runtime.h>

#include "common/mask.h"
#include "common/ptx.cuh"
#include "common/ptx_sm90.cuh"
#include "common/ptx_sm90_tf32.cuh"
#include "common/softmax.cuh"
#include "common/tf32_tiles.cuh"
#include "common/tile_order.h"
#include "flash_sm90/flash_sm90_tf32_traits.h"

namespace fb::cuda::flash_sm90 {

struct Tf32FwdParams {
  CUtensorMap tm_q;  // (d, seq_q, batch * heads) fp32, box (32, kBr, 1)
  CUtensorMap tm_k;  // (d, seq_k, batch * kv_heads) fp32, box (32, kBc, 1)
  CUtensorMap tm_v;  // same as tm_k
  float* o;          // [batch, heads, seq_q, d]
  float* lse;        // [batch, heads, seq_q], natural log (-inf for a row with no visible key)
                     // nullptr: not written (an inference forward: AttentionParams::lse)
  int heads;
  int kv_heads;
  int group;         // query heads per K/V head
  float scale_log2;  // softmax scale * log2(e)
  int planes;        // batch * heads
  int q_tiles;       // query tiles per plane: blocks = planes * q_tiles
  int plane_group;   // planes whose tiles run together (common/tile_order.h), sized for L2
  CausalMask mask;
};

// The fp32 tile layout and the permuted key order of P V (kernels/common/tf32_tiles.cuh).
using tf32::pv_key_of_position;
using tf32::sw128_offset;

template <typename Tr> struct Tf32Barriers {
  std::uint32_t base;
  __device__ __forceinline__ std::uint32_t at(int i) const { return base + i * Tr::kBarBytes; }
  static constexpr int kKBars = 1 + Tr::kVStages;               // k_full, k_ready per (stage, chunk)
  static constexpr int kRing = kKBars + 2 * Tr::kStages * Tr::kChunks;  // per-stage barriers
  __device__ __forceinline__ std::uint32_t q_full() const { return at(0); }
  __device__ __forceinline__ std::uint32_t v_full(int v) const { return at(1 + v); }
  __device__ __forceinline__ std::uint32_t k_full(int s, int c) const { return at(kKBars + s * Tr::kChunks + c); }
  __device__ __forceinline__ std::uint32_t k_ready(int s, int c) const {
    return at(kKBars + (Tr::kStages + s) * Tr::kChunks + c);
  }
  __device__ __forceinline__ std::uint32_t k_empty(int s) const { return at(kRing + s); }
  __device__ __forceinline__ std::uint32_t vt_ready(int s) const { return at(kRing + Tr::kStages + s); }
  __device__ __forceinline__ std::uint32_t vt_empty(int s) const { return at(kRing + 2 * Tr::kStages + s); }
  // The K stage's first half of column chunks released early (Tr::kEarlyKRelease).
  __device__ __forceinline__ std::uint32_t k_empty_half(int s) const { return at(kRing + 3 * Tr::kStages + s); }
};

template <typename Tr> struct Tf32Smem {
  std::uint32_t base;  // 1024-aligned
  __device__ __forceinline__ std::uint32_t q() const { return base + Tr::kOffQ; }
  __device__ __forceinline__ std::uint32_t k_hi(int s) const { return base + Tr::kOffK + s * 2 * Tr::kKVBytes; }
  __device__ __forceinline__ std::uint32_t k_lo(int s) const { return k_hi(s) + Tr::kKVBytes; }
  __device__ __forceinline__ std::uint32_t v_raw(int v) const { return base + Tr::kOffVraw + v * Tr::kKVBytes; }
  __device__ __forceinline__ std::uint32_t vt_hi(int s) const { return base + Tr::kOffVt + s * 2 * Tr::kVtBytes; }
  __device__ __forceinline__ std::uint32_t vt_lo(int s) const { return vt_hi(s) + Tr::kVtBytes; }
};

#if FB_PTX_SM90A

// ---- tile preparation (the producer warpgroup's 128 threads; also used by the unit probe) ----

// One column chunk (kBc, 32) of a K tile as TMA wrote it -> hi = tf32(K) in place and
// lo = tf32(K - hi) at `lo`.
template <typename Tr>
__device__ __forceinline__ void split_k_chunk(std::uint32_t hi, std::uint32_t lo, int ptid) {
  tf32::split_tile<Tr::kKVChunkBytes, Tr::kWgThreads, Tr::kSplit, Tr::kRn>(hi, lo, ptid);
}

// V tile (kBc, d) as TMA wrote it -> Vt (d, kBc), K-major for the B operand of P V, keys permuted
// inside each group of 8 (see the top), split into hi and lo.
template <typename Tr>
__device__ __forceinline__ void transpose_split_v_tile(std::uint32_t raw, std::uint32_t hi,
                                                       std::uint32_t lo, int ptid) {
  tf32::transpose_split_tile<Tr::kBc, Tr::kHeadDim, Tr::kWgThreads, Tr::kSplit, Tr::kRn>(raw, hi, lo, ptid);
}

// ---- consumer pieces ----

// S = Q K^T into two accumulators (their sum is S; see tf32::gemm_split_rs): A = Q's raw fp32
// fragments from load_q(kk, x), split in registers. wait_chunk(c) runs before the first wgmma that
// reads K's column chunk c (the kernel waits for that chunk's k_ready there; the unit probe has the
// whole tile in place).
// Tr::kOnePassS: one pass into three accumulators (tf32::gemm_split_rs_gated3), summed into sa here.
template <typename Tr, typename LoadQ, typename WaitChunk, typename HalfFree>
__device__ __forceinline__ void gemm_qk_from(float (&sa)[Tr::kSRegs], float (&sb)[Tr::kSRegs], LoadQ&& load_q,
                                             std::uint32_t k_hi, std::uint32_t k_lo, WaitChunk&& wait_chunk,
                                             HalfFree&& half_free) {
  // Tr::kDescBase: each step's descriptor is the tile's plus a constant (tf32::kstep_desc).
  const auto desc_hi = [&](int kk) { return tf32::kstep_desc<Tr::kDescBase>(k_hi, Tr::kKVChunkBytes, kk); };
  const auto desc_lo = [&](int kk) { return tf32::kstep_desc<Tr::kDescBase>(k_lo, Tr::kKVChunkBytes, kk); };
  const auto gate = [&](int kk) {
    if (kk % Tr::kStepsPerChunk == 0) wait_chunk(kk / Tr::kStepsPerChunk);
  };
  // Only the first pass reads K's first half of steps (lo and hi): once it is complete there,
  // that half of the stage may be refilled.
  const auto retired = [&](int kk_end) {
    if (kk_end == (Tr::kSharedLo ? Tr::kQKSteps : Tr::kQKHalf)) half_free();
  };
  if constexpr (Tr::kOnePassS) {
    float sc[Tr::kSRegs];
    tf32::gemm_split_rs_gated3<Tr::kBc, Tr::kQKSteps, Tr::kQKGroup, Tr::kSplit, Tr::kRn>(
        sa, sb, sc, load_q, desc_hi, desc_lo, gate, retired);
#pragma unroll
    for (int i = 0; i < Tr::kSRegs; ++i) sa[i] = (sc[i] + sb[i]) + sa[i];  // the small products first
  } else {
    tf32::gemm_split_rs_gated<Tr::kBc, Tr::kQKSteps, Tr::kQKGroup, Tr::kSplit, Tr::kBatchedS, Tr::kRn>(
        sa, sb, load_q, desc_hi, desc_lo, gate, retired);
  }
}

// Element i of S as gemm_qk_from leaves it: sa + sb, or with Tr::kOnePassS sa alone (sb then holds
// one of the parts already summed into sa).
template <typename Tr>
__device__ __forceinline__ float tf32_s_value(const float (&sa)[Tr::kSRegs], const float (&sb)[Tr::kSRegs], int i) {
  return Tr::kOnePassS ? sa[i] : sa[i] + sb[i];
}

// The same with Q's fragments read from the raw Q tile (this warpgroup's 64 rows from `q_rows` in
// each chunk).
template <typename Tr, typename WaitChunk, typename HalfFree>
__device__ __forceinline__ void gemm_qk(float (&sa)[Tr::kSRegs], float (&sb)[Tr::kSRegs],
                                        std::uint32_t q_rows, std::uint32_t k_hi, std::uint32_t k_lo,
                                        int warp, int lane, WaitChunk&& wait_chunk, HalfFree&& half_free) {
  gemm_qk_from<Tr>(
      sa, sb,
      [&](int kk, float (&x)[4]) { tf32::load_kmajor_fragment(x, q_rows, Tr::kQChunkBytes, warp, lane, kk); },
      k_hi, k_lo, wait_chunk, half_free);
}

// O_tile = P V (fresh): small products first (lo_p*hi_v, hi_p*lo_v), then hi*hi. issued() runs
// once every wgmma is issued, before they are waited for.
template <typename Tr, typename Issued>
__device__ __forceinline__ void gemm_pv(float (&ot)[Tr::kORegs], const std::uint32_t (&ph)[Tr::kSRegs],
                                        const std::uint32_t (&pl)[Tr::kSRegs], std::uint32_t vt_hi,
                                        std::uint32_t vt_lo, Issued&& issued) {
  tf32::gemm_frag_a<Tr::kHeadDim, Tr::kPVSteps, Tr::kSplit>(
      ot, [&](int kk, int lo, std::uint32_t(&a)[4]) { tf32::acc_fragment(a, lo ? pl : ph, kk); },
      [&](int kk) { return tf32::kstep_desc<Tr::kDescBase>(vt_hi, Tr::kVtChunkBytes, kk); },
      [&](int kk) { return tf32::kstep_desc<Tr::kDescBase>(vt_lo, Tr::kVtChunkBytes, kk); });
  issued();
  ptx::wgmma_wait<0>();
  ptx::fence_operands(ot);
}
template <typename Tr>
__device__ __forceinline__ void gemm_pv(float (&ot)[Tr::kORegs], const std::uint32_t (&ph)[Tr::kSRegs],
                                        const std::uint32_t (&pl)[Tr::kSRegs], std::uint32_t vt_hi,
                                        std::uint32_t vt_lo) {
  gemm_pv<Tr>(ot, ph, pl, vt_hi, vt_lo, [] {});
}

// Online-softmax step on S (accumulator layout; index 0/1 = the thread's rows r, r + 8): masks when
// asked, updates the running max m (exp2 domain) and the lane's partial sums l, turns s into P in
// place, returns the factor alpha the O rows are rescaled by.
template <typename Tr>
__device__ __forceinline__ void tf32_softmax_step(float (&s)[Tr::kSRegs], float (&m)[2], float (&l)[2],
                                                  float (&alpha)[2], const CausalMask& mask,
                                                  bool need_mask, int row, int key0, float scale_log2) {
  constexpr float kNegInf = -INFINITY;
  if (need_mask) {
#pragma unroll
    for (int i = 0; i < Tr::kSRegs; ++i) {
      const int r = row + ((i / 2) % 2) * 8;
      const int key = key0 + (i / 4) * Tr::kMmaN + i % 2;
      if (!mask.visible(r, key)) s[i] = kNegInf;
    }
  }
  float mx[2] = {kNegInf, kNegInf};
#pragma unroll
  for (int i = 0; i < Tr::kSRegs; ++i) mx[(i / 2) % 2] = fmaxf(mx[(i / 2) % 2], s[i]);
  float m_sub[2];
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const float tile_max = quad_max(mx[hf]);
    const float m_new = fmaxf(m[hf], tile_max * scale_log2);  // scale_log2 > 0
    m_sub[hf] = safe_max(m_new);
    alpha[hf] = ptx::exp2_approx(m[hf] - m_sub[hf]);
    m[hf] = m_new;
  }
  float sum[2] = {0.f, 0.f};
#pragma unroll
  for (int i = 0; i < Tr::kSRegs; ++i) {
    const int hf = (i / 2) % 2;
    s[i] = ptx::exp2_approx(fmaf(s[i], scale_log2, -m_sub[hf]));
    sum[hf] += s[i];
  }
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) l[hf] = l[hf] * alpha[hf] + sum[hf];
}

// ---- producer warpgroup ----
template <typename Tr>
__device__ __forceinline__ void tf32_produce(const Tf32FwdParams& prm, const Tf32Smem<Tr>& sm,
                                             const Tf32Barriers<Tr>& bars, int q0, int bh, int kv_bh,
                                             int n_tiles, int ptid) {
  const bool leader = ptid == 0;
  auto load_k = [&](int j) {
    const int s = j % Tr::kStages;
    // The empty barriers' first phase counts as completed: the first kStages tiles do not wait.
    const std::uint32_t empty_parity = ((j / Tr::kStages) & 1) ^ 1;
    if constexpr (!Tr::kEarlyKRelease) ptx::mbar_wait(bars.k_empty(s), empty_parity);
#pragma unroll
    for (int c = 0; c < Tr::kChunks; ++c) {
      if constexpr (Tr::kEarlyKRelease) {
        // The first half of the chunks once the consumers' first pass is past them, the rest once S is done.
        if (c == 0) ptx::mbar_wait(bars.k_empty_half(s), empty_parity);
        if (c == Tr::kQKHalf / Tr::kStepsPerChunk) ptx::mbar_wait(bars.k_empty(s), empty_parity);
      }
      ptx::mbar_arrive_expect_tx(bars.k_full(s, c), Tr::kKVChunkBytes);
      ptx::tma_load_3d(sm.k_hi(s) + c * Tr::kKVChunkBytes, &prm.tm_k, bars.k_full(s, c),
                       c * Tr::kChunkElems, j * Tr::kBc, kv_bh);
    }
  };
  // V_j into staging buffer j % kVStages, which the caller knows to be free.
  auto load_v = [&](int j) {
    const int v = j % Tr::kVStages;
    ptx::mbar_arrive_expect_tx(bars.v_full(v), Tr::kKVBytes);
#pragma unroll
    for (int c = 0; c < Tr::kChunks; ++c)
      ptx::tma_load_3d(sm.v_raw(v) + c * Tr::kKVChunkBytes, &prm.tm_v, bars.v_full(v),
                       c * Tr::kChunkElems, j * Tr::kBc, kv_bh);
  };
  if (leader) {
    ptx::prefetch_tensormap(&prm.tm_q);
    ptx::prefetch_tensormap(&prm.tm_k);
    ptx::prefetch_tensormap(&prm.tm_v);
    ptx::mbar_arrive_expect_tx(bars.q_full(), Tr::kQBytes);
#pragma unroll
    for (int c = 0; c < Tr::kChunks; ++c)
      ptx::tma_load_3d(sm.q() + c * Tr::kQChunkBytes, &prm.tm_q, bars.q_full(), c * Tr::kChunkElems,
                       q0, bh);
    // The first tiles of both rings: their buffers start free.
    for (int j = 0; j < Tr::kStages && j < n_tiles; ++j) load_k(j);
    for (int j = 0; j < Tr::kVStages && j < n_tiles; ++j) load_v(j);
  }
  for (int j = 0; j < n_tiles; ++j) {
    const int s = j % Tr::kStages;
    const std::uint32_t phase = (j / Tr::kStages) & 1;
    // K_j: split in place chunk by chunk, each handed to the consumers as it is done.
#pragma unroll 1
    for (int c = 0; c < Tr::kChunks; ++c) {
      ptx::mbar_wait(bars.k_full(s, c), phase);
      split_k_chunk<Tr>(sm.k_hi(s) + c * Tr::kKVChunkBytes, sm.k_lo(s) + c * Tr::kKVChunkBytes, ptid);
      ptx::fence_proxy_async_smem();  // wgmma (async proxy) reads what these stores wrote
      ptx::mbar_arrive(bars.k_ready(s, c));
    }
    // V_j: transpose + split into Vt once the consumers are done with the stage's last tile.
    const int v = j % Tr::kVStages;
    ptx::mbar_wait(bars.v_full(v), std::uint32_t((j / Tr::kVStages) & 1));
    ptx::mbar_wait(bars.vt_empty(s), phase ^ 1);
    transpose_split_v_tile<Tr>(sm.v_raw(v), sm.vt_hi(s), sm.vt_lo(s), ptid);
    ptx::fence_proxy_async_smem();
    ptx::mbar_arrive(bars.vt_ready(s));
    // Every thread has read the staging buffer: the next V of that buffer may land there.
    ptx::named_bar_sync(Tr::kBarProducer, Tr::kWgThreads);
    if (leader) {
      if (j + Tr::kVStages < n_tiles) {
        ptx::fence_proxy_async_smem();  // the staging reads (generic proxy) before TMA rewrites it
        load_v(j + Tr::kVStages);
      }
      // Waits until every consumer warp is done with S_j (the stage's tile). The other producer
      // threads go on preparing K_{j+1}, which has landed already when kStages > 1.
      if (j + Tr::kStages < n_tiles) load_k(j + Tr::kStages);
    }
  }
}

// ---- producer warpgroup, Tr::kSharedLo (one stage): K tiles land in the staging buffer and are
// split out of place into K_hi / K_lo; V tiles land in K_lo's space once S's first pass (the only
// reader of K_lo) is complete, and are transposed out of it before the next K split writes K_lo.
// So K_{j+1} is requested as soon as K_j is split (a whole tile ahead), V_{j+1} during S_j.
template <typename Tr>
__device__ __forceinline__ void tf32_produce_shared_lo(const Tf32FwdParams& prm, const Tf32Smem<Tr>& sm,
                                                       const Tf32Barriers<Tr>& bars, int q0, int bh, int kv_bh,
                                                       int n_tiles, int ptid) {
  static_assert(Tr::kStages == 1 && Tr::kVStages == 1, "one stage: the staging buffer holds K");
  const bool leader = ptid == 0;
  const std::uint32_t k_raw = sm.v_raw(0);
  const std::uint32_t v_land = sm.k_lo(0);
  auto load_k = [&](int j) {
#pragma unroll
    for (int c = 0; c < Tr::kChunks; ++c) {
      ptx::mbar_arrive_expect_tx(bars.k_full(0, c), Tr::kKVChunkBytes);
      ptx::tma_load_3d(k_raw + c * Tr::kKVChunkBytes, &prm.tm_k, bars.k_full(0, c), c * Tr::kChunkElems,
                       j * Tr::kBc, kv_bh);
    }
  };
  auto load_v = [&](int j) {
    ptx::mbar_arrive_expect_tx(bars.v_full(0), Tr::kKVBytes);
#pragma unroll
    for (int c = 0; c < Tr::kChunks; ++c)
      ptx::tma_load_3d(v_land + c * Tr::kKVChunkBytes, &prm.tm_v, bars.v_full(0), c * Tr::kChunkElems,
                       j * Tr::kBc, kv_bh);
  };
  if (leader) {
    ptx::prefetch_tensormap(&prm.tm_q);
    ptx::prefetch_tensormap(&prm.tm_k);
    ptx::prefetch_tensormap(&prm.tm_v);
    ptx::mbar_arrive_expect_tx(bars.q_full(), Tr::kQBytes);
#pragma unroll
    for (int c = 0; c < Tr::kChunks; ++c)
      ptx::tma_load_3d(sm.q() + c * Tr::kQChunkBytes, &prm.tm_q, bars.q_full(), c * Tr::kChunkElems,
                       q0, bh);
    load_k(0);
    load_v(0);
  }
  for (int j = 0; j < n_tiles; ++j) {
    const std::uint32_t parity = j & 1;  // tile j's completion of each barrier
    // V_j (in K_lo's space) -> Vt once P_{j-1} V_{j-1} is done.
    ptx::mbar_wait(bars.v_full(0), parity);
    ptx::mbar_wait(bars.vt_empty(0), parity ^ 1);
    transpose_split_v_tile<Tr>(v_land, sm.vt_hi(0), sm.vt_lo(0), ptid);
    ptx::fence_proxy_async_smem();
    ptx::mbar_arrive(bars.vt_ready(0));
    ptx::named_bar_sync(Tr::kBarProducer, Tr::kWgThreads);  // V_j read: K_lo may be written
    // K_j: split out of place chunk by chunk, once S_{j-1} is done with K_hi.
    ptx::mbar_wait(bars.k_empty(0), parity ^ 1);
#pragma unroll 1
    for (int c = 0; c < Tr::kChunks; ++c) {
      ptx::mbar_wait(bars.k_full(0, c), parity);
      tf32::split_tile_from<Tr::kKVChunkBytes, Tr::kWgThreads, Tr::kSplit, Tr::kRn>(
          k_raw + c * Tr::kKVChunkBytes, sm.k_hi(0) + c * Tr::kKVChunkBytes, sm.k_lo(0) + c * Tr::kKVChunkBytes,
          ptid);
      ptx::fence_proxy_async_smem();
      ptx::mbar_arrive(bars.k_ready(0, c));
    }
    ptx::named_bar_sync(Tr::kBarProducer, Tr::kWgThreads);  // K_j read: the staging buffer is free
    if (leader && j + 1 < n_tiles) {
      ptx::fence_proxy_async_smem();  // the generic reads of the buffers before TMA rewrites them
      load_k(j + 1);
      // V_{j+1} into K_lo's space once S_j's first pass is complete.
      ptx::mbar_wait(bars.k_empty_half(0), parity);
      load_v(j + 1);
    }
  }
}

// ---- consumer warpgroup `cw`: query rows [q0 + 64 cw, q0 + 64 cw + 64) ----
template <typename Tr>
__device__ __forceinline__ void tf32_consume(const Tf32FwdParams& prm, const Tf32Smem<Tr>& sm,
                                             const Tf32Barriers<Tr>& bars, int q0, int bh,
                                             int n_tiles, int cw) {
  const int ctid = threadIdx.x % Tr::kWgThreads;
  const int warp = ctid / Tr::kWarpSize;
  const int lane = ctid % Tr::kWarpSize;
  const int wg_row0 = cw * Tr::kWgRows;
  const int row = q0 + wg_row0 + warp * Tr::kWarpRows + lane / 4;  // this thread's first row
  const int col_lane = 2 * (lane % 4);
  const int wg_first_row = q0 + wg_row0;
  const int seq_q = prm.mask.seq_q;
  const std::uint32_t q_rows = sm.q() + std::uint32_t(cw * Tr::kWgQBytes);

  float o[Tr::kORegs];
#pragma unroll
  for (int i = 0; i < Tr::kORegs; ++i) o[i] = 0.f;
  float m[2] = {-INFINITY, -INFINITY};
  float l[2] = {0.f, 0.f};

  // Ping-pong (Tr::kPingPong, off by default: see the traits): the consumers take turns on the
  // tensor cores, S_j of warpgroup 0, S_j of 1, P_j V_j of 0, P_j V_j of 1, ..., so that one's
  // softmax runs under the other's GEMM (in lockstep both run their softmax at once). A turn holds S until
  // it is complete (its groups are issued between waits) and P V until it is issued. The last
  // warpgroup's final pass-on is skipped, so that every arrival meets a wait.
  auto turn_begin = [&] {
    if constexpr (Tr::kPingPong) ptx::named_bar_sync(Tr::kBarTurn0 + cw, Tr::kConsumerThreads);
  };
  auto turn_end = [&](bool last) {
    if constexpr (Tr::kPingPong) {
      if (!(last && cw == Tr::kConsumerWgs - 1))
        ptx::named_bar_arrive(Tr::kBarTurn0 + (cw + 1) % Tr::kConsumerWgs, Tr::kConsumerThreads);
    }
  };
  if constexpr (Tr::kPingPong) {
    if (cw == Tr::kConsumerWgs - 1) ptx::named_bar_arrive(Tr::kBarTurn0, Tr::kConsumerThreads);
  }

  ptx::mbar_wait(bars.q_full(), 0);
  // Q's raw fragments, read once when the registers allow (Tr::kQInRegs); else per K/V tile.
  float qr[Tr::kQInRegs ? Tr::kQKSteps : 1][4];
  if constexpr (Tr::kQInRegs) {
#pragma unroll
    for (int kk = 0; kk < Tr::kQKSteps; ++kk)
      tf32::load_kmajor_fragment(qr[kk], q_rows, Tr::kQChunkBytes, warp, lane, kk);
  }
  for (int j = 0; j < n_tiles; ++j) {
    const int s = j % Tr::kStages;
    const std::uint32_t phase = (j / Tr::kStages) & 1;
    float sa[Tr::kSRegs], sb[Tr::kSRegs];
    const auto wait_k = [&](int c) { ptx::mbar_wait(bars.k_ready(s, c), phase); };
    // kEarlyKRelease: K's first half of chunks is free once S's first pass is past it.
    // kSharedLo: K_lo (which only the first pass reads) is free once that pass is complete; the next
    // V tile lands there.
    const auto half_free = [&] {
      if constexpr (Tr::kEarlyKRelease || Tr::kSharedLo) {
        if (lane == 0) ptx::mbar_arrive(bars.k_empty_half(s));
      }
    };
    turn_begin();
    if constexpr (Tr::kQInRegs) {
      gemm_qk_from<Tr>(
          sa, sb,
          [&](int kk, float (&x)[4]) {
            // Through opaque(): the split then runs per tile, not hoisted out of the loop. Hoisted,
            // Q's TF32 fragments became loop-invariant wgmma A registers, and ptxas (CUDA 13.0)
            // gave those same registers to P's fragments of P V in the 1xTF32 kernel: from the
            // second K/V tile on, S was computed from the previous tile's P (O error 0.6 on the
            // device, session 6; SASS: no write of the S HGMMAs' A registers inside the loop).
#pragma unroll
            for (int e = 0; e < 4; ++e) x[e] = __uint_as_float(tf32::opaque(__float_as_uint(qr[kk][e])));
          },
          sm.k_hi(s), sm.k_lo(s), wait_k, half_free);
    } else {
      gemm_qk<Tr>(sa, sb, q_rows, sm.k_hi(s), sm.k_lo(s), warp, lane, wait_k, half_free);
    }
    turn_end(false);
    if constexpr (Tr::kSharedLo && !Tr::kSplit) half_free();  // 1xTF32 never reads K_lo
    if (lane == 0) ptx::mbar_arrive(bars.k_empty(s));
#pragma unroll
    for (int i = 0; i < Tr::kSRegs; ++i) sa[i] = tf32_s_value<Tr>(sa, sb, i);
    float alpha[2];
    tf32_softmax_step<Tr>(sa, m, l, alpha, prm.mask,
                          prm.mask.tile_needs_mask(wg_first_row, j * Tr::kBc, Tr::kBc), row,
                          j * Tr::kBc + col_lane, prm.scale_log2);
    std::uint32_t ph[Tr::kSRegs], pl[Tr::kSRegs];
#pragma unroll
    for (int i = 0; i < Tr::kSRegs; ++i) ptx::split_tf32_as<Tr::kRn>(sa[i], ph[i], pl[i]);
    float ot[Tr::kORegs];
    ptx::mbar_wait(bars.vt_ready(s), phase);
    turn_begin();
    gemm_pv<Tr>(ot, ph, pl, sm.vt_hi(s), sm.vt_lo(s), [&] { turn_end(j == n_tiles - 1); });
    ptx::fence_operands(ph);
    ptx::fence_operands(pl);
    if (lane == 0) ptx::mbar_arrive(bars.vt_empty(s));
#pragma unroll
    for (int i = 0; i < Tr::kORegs; ++i) o[i] = fmaf(o[i], alpha[(i / 2) % 2], ot[i]);
  }

  // ---- epilogue: O / row sum straight to global memory (8-byte pairs), LSE ----
  float inv[2];
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const float sum = quad_sum(l[hf]);
    inv[hf] = sum > 0.f ? 1.f / sum : 0.f;  // a row that sees no key: O = 0, LSE = -inf
    const int r = row + hf * 8;
    if (prm.lse && lane % 4 == 0 && r < seq_q)
      prm.lse[std::int64_t(bh) * seq_q + r] =
          sum > 0.f ? (m[hf] + log2f(sum)) * float(kLn2) : -INFINITY;
  }
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const int r = row + hf * 8;
    if (r >= seq_q) continue;
    float* out = prm.o + (std::int64_t(bh) * seq_q + r) * Tr::kHeadDim + col_lane;
#pragma unroll
    for (int nb = 0; nb < Tr::kHeadDim / Tr::kMmaN; ++nb)
      *reinterpret_cast<float2*>(out + nb * Tr::kMmaN) =
          make_float2(o[4 * nb + 2 * hf] * inv[hf], o[4 * nb + 2 * hf + 1] * inv[hf]);
  }
}

#endif  // FB_PTX_SM90A

template <typename Tr>
__global__ void __launch_bounds__(Tr::kThreads, 1)
    flash_sm90_tf32_fwd_kernel(const __grid_constant__ Tf32FwdParams prm) {
#if FB_PTX_SM90A
  extern __shared__ __align__(16) unsigned char fb_sm90_tf32_smem[];
  const std::uint32_t base = (ptx::smem_addr(fb_sm90_tf32_smem) + Tr::kAtomBytes - 1) &
                             ~std::uint32_t(Tr::kAtomBytes - 1);
  const Tf32Smem<Tr> sm{base};
  const Tf32Barriers<Tr> bars{base + Tr::kOffBar};

  if (threadIdx.x == 0) {
    ptx::mbar_init(bars.q_full(), 1);
#pragma unroll
    for (int v = 0; v < Tr::kVStages; ++v) ptx::mbar_init(bars.v_full(v), 1);
#pragma unroll
    for (int s = 0; s < Tr::kStages; ++s) {
#pragma unroll
      for (int c = 0; c < Tr::kChunks; ++c) {
        ptx::mbar_init(bars.k_full(s, c), 1);                // the leader's arrive.expect_tx
        ptx::mbar_init(bars.k_ready(s, c), Tr::kWgThreads);  // every producer thread
      }
      ptx::mbar_init(bars.k_empty(s), Tr::kConsumerWarps);   // one per consumer warp
      ptx::mbar_init(bars.vt_ready(s), Tr::kWgThreads);
      ptx::mbar_init(bars.vt_empty(s), Tr::kConsumerWarps);
      ptx::mbar_init(bars.k_empty_half(s), Tr::kConsumerWarps);
    }
    ptx::fence_mbar_init();
  }
  __syncthreads();

  // The block's coordinates are computed after setmaxnreg, in each role: values live across it
  // would be held under the launch's register cap.
  auto coords = [&](int& q0, int& bh, int& n_tiles) {
    // Block t of the 1-D grid: groups of plane_group planes, the longest query tiles first in each.
    const PlaneTile pt = grouped_tile(int(blockIdx.x), prm.planes, prm.q_tiles, prm.plane_group);
    q0 = pt.q_tile * Tr::kBr;
    bh = pt.bh;
    // At least one tile: a tile whose rows see no key runs tile 0 fully masked (O = 0, LSE = -inf).
    n_tiles = max(prm.mask.kv_tiles(q0, Tr::kBr, Tr::kBc), 1);
  };
  int q0, bh, n_tiles;
  const int wg = threadIdx.x / Tr::kWgThreads;
  if (wg == 0) {
    ptx::setmaxnreg_dec<Tr::kProducerRegs>();
    coords(q0, bh, n_tiles);
    const int b = bh / prm.heads;
    const int kv_bh = b * prm.kv_heads + (bh - b * prm.heads) / prm.group;
    if constexpr (Tr::kSharedLo) tf32_produce_shared_lo<Tr>(prm, sm, bars, q0, bh, kv_bh, n_tiles, threadIdx.x);
    else tf32_produce<Tr>(prm, sm, bars, q0, bh, kv_bh, n_tiles, threadIdx.x);
  } else {
    ptx::setmaxnreg_inc<Tr::kConsumerRegs>();
    coords(q0, bh, n_tiles);
    tf32_consume<Tr>(prm, sm, bars, q0, bh, n_tiles, wg - 1);
  }
#else
  __trap();
#endif
}

}  // namespace fb::cuda::flash_sm90
