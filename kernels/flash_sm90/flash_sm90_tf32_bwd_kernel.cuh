// FlashAttention backward for Hopper (sm_90a) with fp32 inputs on TF32 tensor cores: the 3xTF32
// split (hi*hi + hi*lo + lo*hi, fp32 accumulators) on wgmma. Roles, tiles and the shared-memory
// layout: flash_sm90_tf32_bwd_traits.h; the host side: flash_sm90_tf32_bwd.cu.
//
// Accuracy (as the forward, flash_sm90_tf32_kernel.cuh): operands rounded to TF32 to nearest (cvt.rn as
// shipped, cvt.rna in Session6);
// the tensor core truncates each sum it adds into an accumulator, so S^T, dP^T and dQ^T go to two
// accumulators each (tf32::gemm_split_rs), and dK, dV are never summed inside the tensor core
// across query tiles: each tile's part starts from zeros (small products first) and joins dK / dV
// in fp32.
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap (a type only)
#include <cuda_runtime.h>

#include "common/mask.h"
#include "common/ptx.cuh"
#include "common/ptx_sm90.cuh"
#include "common/ptx_sm90_tf32.cuh"
#include "common/tf32_tiles.cuh"
#include "flash_sm90/flash_sm90_tf32_bwd_traits.h"

namespace fb::cuda::flash_sm90 {

struct Tf32BwdParams {
  CUtensorMap tm_q;    // (d, seq_q, batch * heads) fp32, box (32, kBlockM, 1)
  CUtensorMap tm_do;   // same as Q
  CUtensorMap tm_k;    // (d, seq_k, batch * kv_heads) fp32, box (32, kBlockN, 1)
  CUtensorMap tm_v;
  CUtensorMap tm_dq;   // (d, seq_q, batch * heads) fp32 over dq, box (32, kBlockM, 1): reductions
  const float* lse;    // [batch * heads, seq_pad]: LSE * log2(e), +inf on padding and empty rows
  const float* dsum;   // [batch * heads, seq_pad]: D = rowsum(dO o O), 0 on padding rows
  float* dq;           // [batch, heads, seq_q, d], zeroed: the consumers add into it (tm_dq)
  float* dk;           // [batch, kv_heads, seq_k, d]
  float* dv;
  int heads;
  int kv_heads;
  int group;
  int seq_pad;         // flash::backward_padded_seq(seq_q)
  int kv_planes;       // batch * kv_heads
  float scale_log2;    // softmax scale * log2(e)
  float scale;
  CausalMask mask;
};

template <typename Tr> struct Tf32BwdBarriers {
  std::uint32_t base;
  __device__ __forceinline__ std::uint32_t at(int i) const { return base + i * Tr::kBarBytes; }
  __device__ __forceinline__ std::uint32_t kv_full() const { return at(0); }
  // Per stage: the raw tiles landed (TMA); Q, dO split (S^T, dP^T may start); Q^T, dO^T written
  // (dV, dK may start); and the consumers done with Q, dO (and LSE, D) / with Q^T, dO^T.
  __device__ __forceinline__ std::uint32_t raw_full(int s) const { return at(1 + s); }
  __device__ __forceinline__ std::uint32_t qd_ready(int s) const { return at(1 + Tr::kStages + s); }
  __device__ __forceinline__ std::uint32_t t_ready(int s) const { return at(1 + 2 * Tr::kStages + s); }
  __device__ __forceinline__ std::uint32_t qd_empty(int s) const { return at(1 + 3 * Tr::kStages + s); }
  __device__ __forceinline__ std::uint32_t t_empty(int s) const { return at(1 + 4 * Tr::kStages + s); }
  // kPresplit: K and V split into hi / lo (by every producer thread).
  __device__ __forceinline__ std::uint32_t kv_split() const { return at(1 + 5 * Tr::kStages); }
};

template <typename Tr> struct Tf32BwdSmem {
  std::uint32_t base;  // 1024-byte aligned
  __device__ __forceinline__ std::uint32_t k() const { return base + Tr::kOffK; }
  __device__ __forceinline__ std::uint32_t v() const { return base + Tr::kOffV; }
  __device__ __forceinline__ std::uint32_t k_lo() const { return base + Tr::kOffKLo; }  // kPresplit
  __device__ __forceinline__ std::uint32_t v_lo() const { return base + Tr::kOffVLo; }
  __device__ __forceinline__ std::uint32_t stage(int s) const {
    return base + Tr::kOffStage + s * Tr::kStageBytes;
  }
  // part 0 = hi (where TMA lands the raw tile), 1 = lo; chunk c of a part at c * kQChunkStride
  __device__ __forceinline__ std::uint32_t q(int s, int part) const {
    return stage(s) + Tr::kStOffQ + part * Tr::kQLoOff;
  }
  __device__ __forceinline__ std::uint32_t dout(int s, int part) const {
    return stage(s) + Tr::kStOffDo + part * Tr::kQLoOff;
  }
  __device__ __forceinline__ std::uint32_t qt(int s, int part) const {
    return stage(s) + Tr::kStOffQt + part * Tr::kQtBytes;
  }
  __device__ __forceinline__ std::uint32_t dot(int s, int part) const {
    return stage(s) + Tr::kStOffDot + part * Tr::kQtBytes;
  }
  __device__ __forceinline__ std::uint32_t ds(int part) const { return base + Tr::kOffDs + part * Tr::kDsBytes; }
  __device__ __forceinline__ std::uint32_t p(int part) const { return base + Tr::kOffP + part * Tr::kDsBytes; }
  __device__ __forceinline__ std::uint32_t lse(int s) const { return base + Tr::kOffLse + s * Tr::kRowVecBytes; }
  __device__ __forceinline__ std::uint32_t dsum(int s) const { return base + Tr::kOffD + s * Tr::kRowVecBytes; }
};

// The block's work: keys [n0, n0 + kBlockN) of K/V plane kv_bh; steps = the group's query heads
// times their query tiles from m_begin on (causal: earlier tiles see none of the keys).
struct Tf32BwdWork {
  int n0;
  int kv_bh;
  int q_bh0;
  int m_begin;
  int per_head;
  int steps;
  __device__ __forceinline__ int q_bh(int step) const { return q_bh0 + step / per_head; }
  __device__ __forceinline__ int m_tile(int step) const { return m_begin + step % per_head; }
};

#if FB_PTX_SM90A

// ---- producer warpgroup (ptid = its thread index) ----
template <typename Tr>
__device__ __forceinline__ void tf32_bwd_produce(const Tf32BwdParams& prm, const Tf32BwdSmem<Tr>& sm,
                                                 const Tf32BwdBarriers<Tr>& bars, const Tf32BwdWork& w,
                                                 int ptid) {
  const bool leader = ptid == 0;
  if (leader) {
    ptx::prefetch_tensormap(&prm.tm_q);
    ptx::prefetch_tensormap(&prm.tm_do);
    ptx::prefetch_tensormap(&prm.tm_k);
    ptx::prefetch_tensormap(&prm.tm_v);
    ptx::prefetch_tensormap(&prm.tm_dq);
    ptx::mbar_arrive_expect_tx(bars.kv_full(), 2 * Tr::kKVBytes);
#pragma unroll
    for (int c = 0; c < Tr::kChunks; ++c) {
      ptx::tma_load_3d(sm.k() + c * Tr::kKVChunkBytes, &prm.tm_k, bars.kv_full(), c * Tr::kChunkElems,
                       w.n0, w.kv_bh);
      ptx::tma_load_3d(sm.v() + c * Tr::kKVChunkBytes, &prm.tm_v, bars.kv_full(), c * Tr::kChunkElems,
                       w.n0, w.kv_bh);
    }
  }
  // A stage is refilled in two halves, so that one stage still overlaps the loads with the consumers:
  // Q and dO (TMA, then split in place) as soon as the consumers are past S^T, dP^T and the softmax
  // of the stage's previous tile; Q^T and dO^T (transposed from the split tiles) once they are past
  // its dV, dK.
  for (int it = 0; it < w.steps; ++it) {
    const int s = it % Tr::kStages;
    const std::uint32_t phase = (it / Tr::kStages) & 1;
    // The empty barriers' first phase counts as completed: the first kStages tiles do not wait.
    ptx::mbar_wait(bars.qd_empty(s), phase ^ 1);
    // Every producer thread is past its reads of the stage's previous Q, dO (the transposes).
    ptx::named_bar_sync(Tr::kBarProducer, Tr::kWgThreads);
    if (leader) {
      const int bh = w.q_bh(it);
      const int m0 = w.m_tile(it) * Tr::kBlockM;
      const std::int64_t row0 = std::int64_t(bh) * prm.seq_pad + m0;
      ptx::mbar_arrive_expect_tx(bars.raw_full(s), 2 * Tr::kQBytes + 2 * Tr::kRowVecBytes);
#pragma unroll
      for (int c = 0; c < Tr::kChunks; ++c) {
        ptx::tma_load_3d(sm.q(s, 0) + c * Tr::kQChunkStride, &prm.tm_q, bars.raw_full(s),
                         c * Tr::kChunkElems, m0, bh);
        ptx::tma_load_3d(sm.dout(s, 0) + c * Tr::kQChunkStride, &prm.tm_do, bars.raw_full(s),
                         c * Tr::kChunkElems, m0, bh);
      }
      const int lse_slot = it % Tr::kLseSlots;
      ptx::bulk_load(sm.lse(lse_slot), prm.lse + row0, Tr::kRowVecBytes, bars.raw_full(s));
      ptx::bulk_load(sm.dsum(lse_slot), prm.dsum + row0, Tr::kRowVecBytes, bars.raw_full(s));
    }
    if constexpr (Tr::kPresplit) {
      // K and V split in place (hi) and into their lo buffers once, behind the first tile's loads.
      if (it == 0) {
        ptx::mbar_wait(bars.kv_full(), 0);
        tf32::split_tile<Tr::kKVBytes, Tr::kWgThreads, Tr::kSplit, Tr::kRn>(sm.k(), sm.k_lo(), ptid);
        tf32::split_tile<Tr::kKVBytes, Tr::kWgThreads, Tr::kSplit, Tr::kRn>(sm.v(), sm.v_lo(), ptid);
        ptx::fence_proxy_async_smem();
        ptx::mbar_arrive(bars.kv_split());
      }
    }
    ptx::mbar_wait(bars.raw_full(s), phase);
    if constexpr (Tr::kHiLoB) {
      // Each chunk's lo right after its hi (B = [hi | lo] of S^T, dP^T).
#pragma unroll
      for (int c = 0; c < Tr::kChunks; ++c) {
        const std::uint32_t off = std::uint32_t(c * Tr::kQChunkStride);
        tf32::split_tile<Tr::kQChunkBytes, Tr::kWgThreads, Tr::kSplit, Tr::kRn>(sm.q(s, 0) + off, sm.q(s, 1) + off,
                                                                               ptid);
        tf32::split_tile<Tr::kQChunkBytes, Tr::kWgThreads, Tr::kSplit, Tr::kRn>(sm.dout(s, 0) + off,
                                                                               sm.dout(s, 1) + off, ptid);
      }
    } else {
      tf32::split_tile<Tr::kQBytes, Tr::kWgThreads, Tr::kSplit, Tr::kRn>(sm.q(s, 0), sm.q(s, 1), ptid);
      tf32::split_tile<Tr::kQBytes, Tr::kWgThreads, Tr::kSplit, Tr::kRn>(sm.dout(s, 0), sm.dout(s, 1), ptid);
    }
    ptx::fence_proxy_async_smem();  // wgmma (async proxy) reads what these stores wrote
    ptx::mbar_arrive(bars.qd_ready(s));
    ptx::mbar_wait(bars.t_empty(s), phase ^ 1);
    // The transposes read the split tiles: other threads' stores of this tile (mbar_arrive above
    // does not order them among the producer's threads).
    ptx::named_bar_sync(Tr::kBarProducer, Tr::kWgThreads);
    tf32::transpose_parts_tile<Tr::kBlockM, Tr::kHeadDim, Tr::kWgThreads, Tr::kSplit, Tr::kQChunkStride>(
        sm.q(s, 0), sm.q(s, 1), sm.qt(s, 0), sm.qt(s, 1), ptid);
    tf32::transpose_parts_tile<Tr::kBlockM, Tr::kHeadDim, Tr::kWgThreads, Tr::kSplit, Tr::kQChunkStride>(
        sm.dout(s, 0), sm.dout(s, 1), sm.dot(s, 0), sm.dot(s, 1), ptid);
    ptx::fence_proxy_async_smem();
    ptx::mbar_arrive(bars.t_ready(s));
  }
}

// ---- consumer pieces ----

// TMA reduce-add of a shared-memory box into the tensor of `tmap` (elements outside it are skipped);
// part of the thread's bulk group.
__device__ __forceinline__ void tma_reduce_add_3d(const void* tmap, std::uint32_t src, int c0, int c1, int c2) {
  asm volatile(
      "cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(
          tmap),
      "r"(src), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// scale * dQ^T (one 64-row part of d, accumulator layout: register 4j + k is the part's column
// 16 warp + g + 8 (k / 2), query 8 j + 2 t + k % 2) into `stage` as the (queries x 64) box pair of
// tm_dq: two 32-column chunks, 128-byte swizzle (conflict-free: a warp's 8 columns x 4 rows of a
// store cover 8 distinct 16-byte units). The memory system then adds the box into dq with one TMA
// reduction per chunk, instead of red.global per element from registers (which needed a 4 x 4
// shuffle transpose, ~100 instructions per 4 registers).
template <typename Tr>
__device__ __forceinline__ void stage_dq_part(std::uint32_t stage, const float (&acc)[Tr::kDqRegs], float scale,
                                              int warp, int lane) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < Tr::kDqRegs; ++i) {
    const int col = warp * 16 + g + 8 * ((i % 4) / 2);
    const int q = (i / 4) * Tr::kMmaN + 2 * t + i % 2;
    ptx::st_shared_u32(stage + std::uint32_t((col / Tr::kChunkElems) * Tr::kDsChunkBytes) +
                           tf32::sw128_offset(q, col % Tr::kChunkElems),
                       __float_as_uint(acc[i] * scale));
  }
}

// m64n64k8 TF32 wgmma, A and B from shared memory (K-major), whose accumulator is two m64n32 halves held
// apart: lo = columns [0, 32), hi = columns [32, 64) (the same registers a float[32] accumulator would give,
// d[i] = lo[i], d[16 + i] = hi[i]: n8 blocks 0-3, then 4-7).
#define FB_TF32_BWD_HALF(a, i)                                                                         \
  "+f"(a[i]), "+f"(a[i + 1]), "+f"(a[i + 2]), "+f"(a[i + 3]), "+f"(a[i + 4]), "+f"(a[i + 5]),        \
      "+f"(a[i + 6]), "+f"(a[i + 7])
__device__ __forceinline__ void wgmma_ss_tf32_n64_halves(float (&lo)[16], float (&hi)[16], std::uint64_t desc_a,
                                                         std::uint64_t desc_b, std::uint32_t accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {" FB_WG_S32 "}, %32, %33, p, 1, 1;\n}\n"
               : FB_TF32_BWD_HALF(lo, 0), FB_TF32_BWD_HALF(lo, 8), FB_TF32_BWD_HALF(hi, 0), FB_TF32_BWD_HALF(hi, 8)
               : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}
#undef FB_TF32_BWD_HALF

// tf32::gemm_split_ss_multi's products (kAccs = 4, N = 32) with B's hi and lo side by side in shared memory
// (kHiLoB): b(g, kk) is the descriptor of step kk of B hi, whose 32 rows are followed by B lo's, so that the
// same descriptor is B = [hi | lo] to an N = 64 wgmma. Per step and GEMM: A lo x B hi (N = 32, c[g][2]) and
// A hi x [B hi | B lo] (N = 64: hi*hi and hi*lo at once, A hi read once) into {c[g][0], c[g][3]}, one
// register block throughout (hi*lo's chain runs over every step, as gemm_split_ss_multi's c[g][3]).
// a(g, kk, part): A's descriptor (part 0 = hi, 1 = lo). Returns with every wgmma complete.
// hi*hi in two chains as gemm_split_ss_multi (c[g][0] the first half of the steps, c[g][1] the second), so the
// same sums bit for bit: once the first half's wgmmas are complete (lo*hi's second half keeps the tensor pipe
// busy meanwhile), its hi*hi moves to c[g][1] and the block's hi*hi half restarts from zero; the two are
// swapped back at the end (register renaming). (Session 12's probe `hilo8`, hi*hi in one chain of kSteps and no
// wait in the middle, a different sum, measured level with this: call A, docs/perf-notes.md.)
template <int kSteps, int kGemms, typename DescA, typename DescB>
__device__ __forceinline__ void gemm_split_ss_hilo(float (&c)[kGemms][4][16], DescA&& a, DescB&& b) {
  constexpr int kHalf = kSteps / 2;
  ptx::wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < kHalf; ++kk) {
    // Interleaved so that no wgmma depends on the one issued just before it.
#pragma unroll
    for (int g = 0; g < kGemms; ++g) tf32::wgmma_ss<32>(c[g][2], a(g, kk, 1), b(g, kk), kk > 0);
#pragma unroll
    for (int g = 0; g < kGemms; ++g) wgmma_ss_tf32_n64_halves(c[g][0], c[g][3], a(g, kk, 0), b(g, kk), kk > 0);
  }
  ptx::wgmma_commit();
#pragma unroll
  for (int kk = kHalf; kk < kSteps; ++kk)
#pragma unroll
    for (int g = 0; g < kGemms; ++g) tf32::wgmma_ss<32>(c[g][2], a(g, kk, 1), b(g, kk), 1);
  ptx::wgmma_commit();
  ptx::wgmma_wait<1>();  // the first half's wgmmas are complete (lo*hi's second half may still run)
  // hi*hi's first half out of the block, the block's half zeroed: one asm per register, with the block's
  // register as an in/out operand, so that it stays where the wgmmas have it (as two C++ assignments,
  // ptxas moved the block and serialized every wgmma of the kernel for want of registers).
#pragma unroll
  for (int g = 0; g < kGemms; ++g) {
    ptx::fence_operands(c[g][3]);
#pragma unroll
    for (int i = 0; i < 16; ++i)
      asm volatile("mov.b32 %0, %1;\n\tmov.b32 %1, 0f00000000;\n" : "=f"(c[g][1][i]), "+f"(c[g][0][i]));
  }
  ptx::wgmma_fence();  // c[g][0] was written by ordinary instructions
#pragma unroll
  for (int kk = kHalf; kk < kSteps; ++kk)
#pragma unroll
    for (int g = 0; g < kGemms; ++g) wgmma_ss_tf32_n64_halves(c[g][0], c[g][3], a(g, kk, 0), b(g, kk), 1);
  ptx::wgmma_commit();
  ptx::wgmma_wait<0>();
#pragma unroll
  for (int g = 0; g < kGemms; ++g)
#pragma unroll
    for (int x = 0; x < 4; ++x) ptx::fence_operands(c[g][x]);
#pragma unroll
  for (int g = 0; g < kGemms; ++g)
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const float second = c[g][0][i];
      c[g][0][i] = c[g][1][i];
      c[g][1][i] = second;
    }
}

// ---- consumer warpgroup cw (flash_sm90_tf32_bwd_traits.h: its keys, queries and parts of d) ----
template <typename Tr>
__device__ __forceinline__ void tf32_bwd_consume(const Tf32BwdParams& prm, const Tf32BwdSmem<Tr>& sm0,
                                                 const Tf32BwdBarriers<Tr>& bars, const Tf32BwdWork& w,
                                                 int cw) {
  constexpr bool kShare = Tr::kShareKeys;
  const int ctid = threadIdx.x % Tr::kWgThreads;
  const int warp = ctid / Tr::kWarpSize;
  const int lane = ctid % Tr::kWarpSize;
  const int wg_keys = kShare ? 0 : cw * Tr::kWgKeys;      // first of this consumer's keys in the block
  const int wg_key0 = w.n0 + wg_keys;
  const int part0 = kShare ? cw : 0;                      // first of its 64-column parts of d
  const int key_row = warp * Tr::kWarpKeys + lane / 4;  // this thread's first key among the 64
  const int col_lane = 2 * (lane % 4);                   // first accumulator column
  const int seq_k = prm.mask.seq_k;
  const int offset = prm.mask.offset();  // causal: query i sees keys <= i + offset
  const std::uint32_t ds_keys = std::uint32_t((wg_keys / Tr::kChunkElems) * Tr::kDsChunkBytes);
  // Named barrier over the consumers that share P and dS (all of them with shared keys).
  const int bar_ps = kShare ? Tr::kBarConsumers : Tr::kBarConsumer0 + cw;
  constexpr int kBarPsThreads = kShare ? Tr::kConsumerThreads : Tr::kWgThreads;

  float dk[Tr::kDkvRegs], dv[Tr::kDkvRegs];
#pragma unroll
  for (int i = 0; i < Tr::kDkvRegs; ++i) dk[i] = dv[i] = 0.f;

  if constexpr (Tr::kPresplit) ptx::mbar_wait(bars.kv_split(), 0);
  else ptx::mbar_wait(bars.kv_full(), 0);
  for (int it = 0; it < w.steps; ++it) {
    const int st = it % Tr::kStages;
    const int lse_slot = it % Tr::kLseSlots;
    const std::uint32_t parity = (it / Tr::kStages) & 1;
    const int m0 = w.m_tile(it) * Tr::kBlockM;
    const int bh = w.q_bh(it);
    ptx::mbar_wait(bars.qd_ready(st), parity);
    const Tf32BwdSmem<Tr> sm{tf32::opaque(sm0.base)};  // addresses are computed per tile
    const std::uint32_t k_rows = sm.k() + wg_keys * Tr::kRowBytes;
    const std::uint32_t v_rows = sm.v() + wg_keys * Tr::kRowBytes;

    // P^T = exp2(S^T scale log2 e - LSE log2 e), 0 where masked (causal, or keys past seq_k: their
    // zero rows of K would otherwise give P = exp2(-LSE)); dS^T = P^T o (dP^T - D). Accumulator
    // register i: key key_row + 8 ((i / 2) % 2), query 8 (i / 4) + col_lane + i % 2.
    const bool need_mask = (prm.mask.causal && wg_key0 + Tr::kWgKeys - 1 > m0 + offset) ||
                           wg_key0 + Tr::kWgKeys > seq_k;
    auto probability = [&](float sv, int i, float lse) {
      float pv = ptx::exp2_approx(fmaf(sv, prm.scale_log2, -lse));
      if (need_mask) {
        const int key = wg_key0 + key_row + ((i / 2) % 2) * 8;
        if (!prm.mask.visible(m0 + (i / 4) * Tr::kMmaN + col_lane + i % 2, key)) pv = 0.f;
      }
      return pv;
    };
    // Register i's offset in a (queries x keys, K-major along keys) tile of dS or P: B of dQ^T, and
    // read back transposed as the A fragments of dK (and with shared keys dV).
    auto qk_offset = [&](int i) {
      const int key = key_row + ((i / 2) % 2) * 8;  // among this consumer's 64
      const int q = (i / 4) * Tr::kMmaN + col_lane + i % 2;
      return ds_keys + std::uint32_t((key / Tr::kChunkElems) * Tr::kDsChunkBytes) +
             tf32::sw128_offset(q, key % Tr::kChunkElems);
    };
    const std::uint32_t q_hi = sm.q(st, 0), q_lo = sm.q(st, 1);
    const std::uint32_t do_hi = sm.dout(st, 0), do_lo = sm.dout(st, 1);
    std::uint32_t p_hi[Tr::kSRegs], p_lo[Tr::kSRegs];
    // Own keys: dS^T's TF32 parts in the accumulator layout (kDsFromRegs: also dK's A fragments).
    std::uint32_t ds_hi[Tr::kSRegs], ds_lo[Tr::kSRegs];
    if constexpr (!kShare) {
      // S^T = K Q^T and dP^T = V dO^T, issued interleaved, each the sum of its accumulators.
      float sdp[2][Tr::kSdpAccs][Tr::kSRegs];
      if constexpr (Tr::kHiLoB) {
        // A (K, V hi / lo) from shared memory, B = [Q hi | Q lo] ([dO hi | dO lo]) as one operand.
        const std::uint32_t k_lo_rows = sm.k_lo() + wg_keys * Tr::kRowBytes;
        const std::uint32_t v_lo_rows = sm.v_lo() + wg_keys * Tr::kRowBytes;
        gemm_split_ss_hilo<Tr::kQKSteps, 2>(
            sdp,
            [&](int g, int kk, int part) {
              const std::uint32_t rows = g == 0 ? (part ? k_lo_rows : k_rows) : (part ? v_lo_rows : v_rows);
              return tf32::kstep_desc<Tr::kDescBase>(rows, Tr::kKVChunkBytes, kk);
            },
            [&](int g, int kk) {
              return tf32::kstep_desc<Tr::kDescBase>(g == 0 ? q_hi : do_hi, Tr::kQChunkStride, kk);
            });
      } else if constexpr (Tr::kPresplit) {
        // A (K, V hi / lo) from shared memory: no fragments to build.
        const std::uint32_t k_lo_rows = sm.k_lo() + wg_keys * Tr::kRowBytes;
        const std::uint32_t v_lo_rows = sm.v_lo() + wg_keys * Tr::kRowBytes;
        tf32::gemm_split_ss_multi<Tr::kBlockM, Tr::kQKSteps, Tr::kSplit, 2, Tr::kSdpAccs>(
            sdp,
            [&](int g, int kk, int part) {
              const std::uint32_t rows = g == 0 ? (part ? k_lo_rows : k_rows) : (part ? v_lo_rows : v_rows);
              return tf32::kstep_desc<Tr::kDescBase>(rows, Tr::kKVChunkBytes, kk);
            },
            [&](int g, int kk, int part) {
              const std::uint32_t tile = g == 0 ? (part ? q_lo : q_hi) : (part ? do_lo : do_hi);
              return tf32::kstep_desc<Tr::kDescBase>(tile, Tr::kQChunkBytes, kk);
            });
      } else {
        tf32::gemm_split_rs_multi<Tr::kBlockM, Tr::kQKSteps, Tr::kSdpGroup, Tr::kSplit, 2, Tr::kSdpAccs, Tr::kRn>(
            sdp,
            [&](int g, int kk, float (&x)[4]) {
              tf32::load_kmajor_fragment(x, g == 0 ? k_rows : v_rows, Tr::kKVChunkBytes, warp, lane, kk);
            },
            [&](int g, int kk) {
              return tf32::kstep_desc<Tr::kDescBase>(g == 0 ? q_hi : do_hi, Tr::kQChunkBytes, kk);
            },
            [&](int g, int kk) {
              return tf32::kstep_desc<Tr::kDescBase>(g == 0 ? q_lo : do_lo, Tr::kQChunkBytes, kk);
            });
      }
      // kEarlyQdEmpty: every consumer thread arrives as soon as its wgmmas on Q and dO are complete
      // (LSE and D have their own slots, two per stage: the next tile's loads do not overwrite them).
      if constexpr (Tr::kEarlyQdEmpty) ptx::mbar_arrive(bars.qd_empty(st));
      tf32::sum_split_accs(sdp[0]);
      tf32::sum_split_accs(sdp[1]);
      const float(&s)[Tr::kSRegs] = sdp[0][0];
      const float(&dp)[Tr::kSRegs] = sdp[1][0];
#pragma unroll
      for (int j = 0; j < Tr::kBlockM / Tr::kMmaN; ++j) {
        const int col = j * Tr::kMmaN + col_lane;
        const float2 lse = ptx::ld_shared_f32x2(sm.lse(lse_slot) + col * int(sizeof(float)));
        const float2 dd = ptx::ld_shared_f32x2(sm.dsum(lse_slot) + col * int(sizeof(float)));
#pragma unroll
        for (int i = 4 * j; i < 4 * j + 4; ++i) {
          const float pv = probability(s[i], i, i % 2 == 0 ? lse.x : lse.y);
          const float dsv = pv * (dp[i] - (i % 2 == 0 ? dd.x : dd.y));
          ptx::split_tf32_as<Tr::kRn>(pv, p_hi[i], p_lo[i]);
          ptx::split_tf32_as<Tr::kRn>(dsv, ds_hi[i], ds_lo[i]);
        }
      }
      // Every consumer thread arrives: it has read this stage's LSE and D with ordinary loads and
      // its wgmmas on Q and dO are complete (gemm_split_rs_multi waits for them).
      if constexpr (!Tr::kEarlyQdEmpty) ptx::mbar_arrive(bars.qd_empty(st));
      // dS into shared memory; the barrier first: this consumer is past the previous tile's dQ^T,
      // and its dQ reductions have read their staging box (part of dS). Every thread waits (a no-op
      // without bulk groups of its own): no lane-divergent branch right before bar.sync.
      ptx::bulk_wait_group_read_all();
      ptx::named_bar_sync(bar_ps, kBarPsThreads);
#pragma unroll
      for (int i = 0; i < Tr::kSRegs; ++i) {
        ptx::st_shared_u32(sm.ds(0) + qk_offset(i), ds_hi[i]);
        if constexpr (Tr::kSplit) ptx::st_shared_u32(sm.ds(1) + qk_offset(i), ds_lo[i]);
      }
      ptx::fence_proxy_async_smem();  // dQ^T's wgmma reads what the stores above wrote
      if constexpr (!Tr::kDsFromRegs) __syncwarp();  // dK's A fragments: this warp's own rows
    } else {
      // Shared keys: consumer 0 computes S^T = K Q^T, consumer 1 dP^T = V dO^T, each for the whole
      // query tile (one GEMM of N = kBlockM rather than two of half the width each: half the
      // wgmmas and A fragments). P goes to consumer 1 through shared memory.
      const bool is_dp = cw == 1;
      float acc[1][Tr::kSdpAccs][Tr::kSRegs];
      const std::uint32_t a_rows = is_dp ? v_rows : k_rows;
      const std::uint32_t b_hi = is_dp ? do_hi : q_hi, b_lo = is_dp ? do_lo : q_lo;
      tf32::gemm_split_rs_multi<Tr::kBlockM, Tr::kQKSteps, Tr::kSdpGroup, Tr::kSplit, 1, Tr::kSdpAccs, Tr::kRn>(
          acc,
          [&](int, int kk, float (&x)[4]) {
            tf32::load_kmajor_fragment(x, a_rows, Tr::kKVChunkBytes, warp, lane, kk);
          },
          [&](int, int kk) { return tf32::kstep_desc<Tr::kDescBase>(b_hi, Tr::kQChunkBytes, kk); },
          [&](int, int kk) { return tf32::kstep_desc<Tr::kDescBase>(b_lo, Tr::kQChunkBytes, kk); });
      tf32::sum_split_accs(acc[0]);
      float(&v)[Tr::kSRegs] = acc[0][0];  // S^T (consumer 0) or dP^T (consumer 1)
      // Consumer 0's raw P, in its accumulator order (conflict-free 16-byte rows per thread), goes
      // through dS's lo buffer: free until consumer 1 writes dS there, after reading it.
      const std::uint32_t xchg = sm.ds(1) + std::uint32_t(ctid * 16);
      // bar.sync is .aligned: every thread that takes part must execute the same instruction. So the
      // barriers over both consumers (bar_ps) sit outside the branches on the consumer's role, where
      // both run the one instruction (synccheck, session 7: "divergent threads in block" when
      // consumer 0 waited at one bar.sync and consumer 1 at another of the same id).
      if (!is_dp) {
#pragma unroll
        for (int j = 0; j < Tr::kBlockM / Tr::kMmaN; ++j) {
          const float2 lse = ptx::ld_shared_f32x2(sm.lse(lse_slot) + (j * Tr::kMmaN + col_lane) * int(sizeof(float)));
#pragma unroll
          for (int i = 4 * j; i < 4 * j + 4; ++i) v[i] = probability(v[i], i, i % 2 == 0 ? lse.x : lse.y);
        }
        ptx::mbar_arrive(bars.qd_empty(st));  // LSE read, wgmmas on Q complete
      }
      // Both consumers are past the previous tile's dV and dQ^T (P, dS) and their dQ reductions have
      // read their staging boxes (P). Every thread waits for its bulk groups (a no-op for all but
      // thread 0 of each consumer): no lane-divergent branch before the barrier.
      ptx::bulk_wait_group_read_all();
      ptx::named_bar_sync(bar_ps, kBarPsThreads);
      if (!is_dp) {
#pragma unroll
        for (int j = 0; j < Tr::kSRegs / 4; ++j)
          ptx::st_shared_u32x4(xchg + std::uint32_t(j * Tr::kWgThreads * 16), __float_as_uint(v[4 * j]),
                               __float_as_uint(v[4 * j + 1]), __float_as_uint(v[4 * j + 2]),
                               __float_as_uint(v[4 * j + 3]));
#pragma unroll
        for (int i = 0; i < Tr::kSRegs; ++i) {
          ptx::split_tf32_as<Tr::kRn>(v[i], p_hi[i], p_lo[i]);
          ptx::st_shared_u32(sm.p(0) + qk_offset(i), p_hi[i]);
          if constexpr (Tr::kSplit) ptx::st_shared_u32(sm.p(1) + qk_offset(i), p_lo[i]);
        }
      }
      ptx::named_bar_sync(bar_ps, kBarPsThreads);  // P exchanged
      if (is_dp) {
        std::uint32_t ds_hi[Tr::kSRegs], ds_lo[Tr::kSRegs];
#pragma unroll
        for (int j = 0; j < Tr::kBlockM / Tr::kMmaN; ++j) {
          const float4 pv = ptx::ld_shared_f32x4(xchg + std::uint32_t(j * Tr::kWgThreads * 16));
          const float2 dd = ptx::ld_shared_f32x2(sm.dsum(lse_slot) + (j * Tr::kMmaN + col_lane) * int(sizeof(float)));
          const float pj[4] = {pv.x, pv.y, pv.z, pv.w};
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            const int i = 4 * j + k;
            ptx::split_tf32_as<Tr::kRn>(pj[k] * (v[i] - (k % 2 == 0 ? dd.x : dd.y)), ds_hi[i], ds_lo[i]);
          }
        }
        ptx::mbar_arrive(bars.qd_empty(st));  // D read, wgmmas on dO complete
        // Consumer 1's threads are all past their reads of the exchanged P before dS lo replaces it
        // (its own barrier: consumer 1's 128 threads, all at this one instruction).
        ptx::named_bar_sync(Tr::kBarConsumer0 + cw, Tr::kWgThreads);
#pragma unroll
        for (int i = 0; i < Tr::kSRegs; ++i) {
          ptx::st_shared_u32(sm.ds(0) + qk_offset(i), ds_hi[i]);
          if constexpr (Tr::kSplit) ptx::st_shared_u32(sm.ds(1) + qk_offset(i), ds_lo[i]);
        }
#pragma unroll
        for (int i = 0; i < Tr::kSRegs; ++i) p_hi[i] = p_lo[i] = 0u;
      }
      ptx::fence_proxy_async_smem();  // dQ^T's wgmma reads P, dS
      // Q^T, dO^T ready before the barrier rather than after it (dV needs both; same critical path):
      // so that the fragment loads of P and dS right after the barrier follow it directly. With the
      // mbarrier wait between the two, racecheck (session 8, call A) reported those loads as unordered
      // with the other consumer's stores on the far side of this barrier and the next.
      ptx::mbar_wait(bars.t_ready(st), parity);
      ptx::named_bar_sync(bar_ps, kBarPsThreads);  // dV's and dK's A fragments: both consumers' rows
      // kRaceBar (racecheck-only probe): the same barrier once more, nothing between the two. If racecheck's
      // reports on consumer 1's dS stores vs consumer 0's dK loads right after this point vanish under it, the
      // tool, not the kernel, misses the first barrier's ordering (session 11's SASS audit: no window exists).
      if constexpr (Tr::kRaceBar) ptx::named_bar_sync(bar_ps, kBarPsThreads);
    }

    // dV += P^T dO and dK += dS^T Q, per 64-column part: a fresh tensor-core sum added in fp32.
    // A fragments in the permuted query order of Q^T / dO^T. kPairParts: dV's part and dK's in
    // flight together, so that the fp32 adds of one overlap the other's wgmmas; else one at a time.
    auto dv_part = [&](float (&t)[Tr::kPartRegs], int part) {
      const std::uint32_t off = std::uint32_t(part * Tr::kPartBytes);
      const std::uint32_t hi = sm.dot(st, 0) + off, lo = sm.dot(st, 1) + off;
      tf32::gemm_frag_a<Tr::kPart, Tr::kKVSteps, Tr::kSplit>(
          t,
          [&](int kk, int lo_part, std::uint32_t(&a)[4]) {
            if constexpr (kShare)
              tf32::load_mnmajor_fragment<true>(a, sm.p(lo_part), Tr::kDsChunkBytes, 0, 0, warp, lane, kk);
            else
              tf32::acc_fragment(a, lo_part ? p_lo : p_hi, kk);
          },
          [&](int kk) { return tf32::kstep_desc<Tr::kDescBase>(hi, Tr::kQtChunkBytes, kk); },
          [&](int kk) { return tf32::kstep_desc<Tr::kDescBase>(lo, Tr::kQtChunkBytes, kk); });
    };
    auto dk_part = [&](float (&t)[Tr::kPartRegs], int part) {
      const std::uint32_t off = std::uint32_t(part * Tr::kPartBytes);
      const std::uint32_t hi = sm.qt(st, 0) + off, lo = sm.qt(st, 1) + off;
      tf32::gemm_frag_a<Tr::kPart, Tr::kKVSteps, Tr::kSplit>(
          t,
          [&](int kk, int lo_part, std::uint32_t(&a)[4]) {
            if constexpr (Tr::kDsFromRegs)
              tf32::acc_fragment(a, lo_part ? ds_lo : ds_hi, kk);  // = the read-back below, bit for bit
            else
              tf32::load_mnmajor_fragment<true>(a, sm.ds(lo_part), Tr::kDsChunkBytes, 0, wg_keys, warp, lane,
                                                kk);
          },
          [&](int kk) { return tf32::kstep_desc<Tr::kDescBase>(hi, Tr::kQtChunkBytes, kk); },
          [&](int kk) { return tf32::kstep_desc<Tr::kDescBase>(lo, Tr::kQtChunkBytes, kk); });
    };
    auto add_part = [](float (&acc)[Tr::kDkvRegs], float (&t)[Tr::kPartRegs], int part) {
      ptx::fence_operands(t);
#pragma unroll
      for (int i = 0; i < Tr::kPartRegs; ++i) acc[part * Tr::kPartRegs + i] += t[i];
    };
    if constexpr (!kShare) ptx::mbar_wait(bars.t_ready(st), parity);  // with shared keys: above
    if constexpr (Tr::kPairParts) {
      // dV's part and dK's issued interleaved (neither waits for its own previous wgmma).
#pragma unroll
      for (int part = 0; part < Tr::kWgParts; ++part) {
        const std::uint32_t off = std::uint32_t((part0 + part) * Tr::kPartBytes);
        const std::uint32_t bh0 = sm.dot(st, 0) + off, bl0 = sm.dot(st, 1) + off;
        const std::uint32_t bh1 = sm.qt(st, 0) + off, bl1 = sm.qt(st, 1) + off;
        float tv[Tr::kPartRegs], tk[Tr::kPartRegs];
        tf32::gemm_frag_a_pair<Tr::kPart, Tr::kKVSteps, Tr::kSplit>(
            tv, tk,
            [&](int g, int kk, int lo_part, std::uint32_t(&a)[4]) {
              if (g == 1 && Tr::kDsFromRegs)
                tf32::acc_fragment(a, lo_part ? ds_lo : ds_hi, kk);  // = the read-back below, bit for bit
              else if (g == 1)
                tf32::load_mnmajor_fragment<true>(a, sm.ds(lo_part), Tr::kDsChunkBytes, 0, wg_keys, warp,
                                                  lane, kk);
              else if constexpr (kShare)
                tf32::load_mnmajor_fragment<true>(a, sm.p(lo_part), Tr::kDsChunkBytes, 0, 0, warp, lane, kk);
              else
                tf32::acc_fragment(a, lo_part ? p_lo : p_hi, kk);
            },
            [&](int g, int kk) {
              return tf32::kstep_desc<Tr::kDescBase>(g == 0 ? bh0 : bh1, Tr::kQtChunkBytes, kk);
            },
            [&](int g, int kk) {
              return tf32::kstep_desc<Tr::kDescBase>(g == 0 ? bl0 : bl1, Tr::kQtChunkBytes, kk);
            });
        ptx::wgmma_wait<0>();
        add_part(dv, tv, part);
        add_part(dk, tk, part);
      }
    } else {
#pragma unroll
      for (int part = 0; part < Tr::kWgParts; ++part) {
        float t[Tr::kPartRegs];
        dv_part(t, part0 + part);
        ptx::wgmma_wait<0>();
        add_part(dv, t, part);
      }
#pragma unroll
      for (int part = 0; part < Tr::kWgParts; ++part) {
        float t[Tr::kPartRegs];
        dk_part(t, part0 + part);
        ptx::wgmma_wait<0>();
        add_part(dk, t, part);
      }
    }
    ptx::fence_operands(p_hi);
    ptx::fence_operands(p_lo);
    if constexpr (Tr::kDsFromRegs) {
      ptx::fence_operands(ds_hi);
      ptx::fence_operands(ds_lo);
    }
    // Shared keys: both consumers are past dV, i.e. past their loads of P, whose buffers then take the
    // dQ staging (below). Here, right after dV / dK, rather than after dQ^T just before the staging
    // stores (sessions 6-8): the same order, but compute-sanitizer racecheck reported each consumer's
    // first staging stores right after that barrier against the other's P loads before it (a WAR,
    // 4000-4500 hazards a run; session 9, docs/perf-notes.md: the tool, not the kernel). Placed here,
    // the first shared-memory accesses after the barrier are dQ^T's loads of K (written by TMA only).
    if constexpr (kShare) ptx::named_bar_sync(bar_ps, kBarPsThreads);
    // Every consumer thread arrives: its wgmmas on Q^T and dO^T are complete.
    ptx::mbar_arrive(bars.t_empty(st));

    // dQ^T = K^T dS^T over this consumer's keys (all the block's with shared keys), for its 64-row
    // part of d; dQ += scale * dQ^T by TMA reductions from a staging box: the consumer's own part of
    // dS's hi buffer (own keys: free once dQ^T's wgmmas are done), or with shared keys P's hi (c 0)
    // or lo (c 1) buffer, free once both consumers are past dV (the barrier above).
    static_assert(Tr::kWgParts == 1 && Tr::kPart * Tr::kBlockM * int(sizeof(float)) <= Tr::kDsBytes / (kShare ? 1 : Tr::kConsumerWgs),
                  "one 64-column part of dQ per consumer, staged in 8 KB of dS or P");
    if constexpr (!kShare) ptx::named_bar_sync(bar_ps, kBarPsThreads);  // all of its dS is written
    const std::uint32_t ds_hi_b = sm.ds(0) + ds_keys, ds_lo_b = sm.ds(1) + ds_keys;
    float qacc[1][Tr::kDqAccs][Tr::kDqRegs];
    if constexpr (Tr::kPresplit) {
      tf32::gemm_split_rs_parts<Tr::kBlockM, Tr::kDqSteps, Tr::kDqGroup, Tr::kSplit, Tr::kDqAccs>(
          qacc,
          [&](int kk, int part, std::uint32_t(&a)[4]) {
            tf32::load_mnmajor_fragment(a, part ? sm.k_lo() : sm.k(), Tr::kKVChunkBytes, wg_keys,
                                        part0 * Tr::kPart, warp, lane, kk);
          },
          [&](int kk) { return tf32::kstep_desc<Tr::kDescBase>(ds_hi_b, Tr::kDsChunkBytes, kk); },
          [&](int kk) { return tf32::kstep_desc<Tr::kDescBase>(ds_lo_b, Tr::kDsChunkBytes, kk); });
    } else {
      tf32::gemm_split_rs_multi<Tr::kBlockM, Tr::kDqSteps, Tr::kDqGroup, Tr::kSplit, 1, Tr::kDqAccs, Tr::kRn>(
          qacc,
          [&](int, int kk, float (&x)[4]) {
            tf32::load_mnmajor_fragment(x, sm.k(), Tr::kKVChunkBytes, wg_keys, part0 * Tr::kPart, warp, lane,
                                        kk);
          },
          [&](int, int kk) { return tf32::kstep_desc<Tr::kDescBase>(ds_hi_b, Tr::kDsChunkBytes, kk); },
          [&](int, int kk) { return tf32::kstep_desc<Tr::kDescBase>(ds_lo_b, Tr::kDsChunkBytes, kk); });
    }
    tf32::sum_split_accs(qacc[0]);
    const std::uint32_t dq_stage = kShare ? sm.p(cw) : ds_hi_b;
    stage_dq_part<Tr>(dq_stage, qacc[0][0], prm.scale, warp, lane);
    ptx::fence_proxy_async_smem();  // the TMA reduction (async proxy) reads what the stores wrote
    ptx::named_bar_sync(Tr::kBarConsumer0 + cw, Tr::kWgThreads);
    if (ctid == 0) {
#pragma unroll
      for (int c = 0; c < Tr::kPart / Tr::kChunkElems; ++c)
        tma_reduce_add_3d(&prm.tm_dq, dq_stage + std::uint32_t(c * Tr::kDsChunkBytes),
                          part0 * Tr::kPart + c * Tr::kChunkElems, m0, bh);
      ptx::bulk_commit_group();
    }
  }
  // The last reductions must have read the staging box before the block's shared memory goes.
  if (ctid == 0) ptx::bulk_wait_group_all();

  // dK (times the softmax scale) and dV for this consumer's keys and columns, from the accumulators.
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const int key = wg_key0 + key_row + hf * 8;
    if (key >= seq_k) continue;
    const std::int64_t row = (std::int64_t(w.kv_bh) * seq_k + key) * Tr::kHeadDim + part0 * Tr::kPart;
#pragma unroll
    for (int j = 0; j < Tr::kDkvRegs / 4; ++j) {
      const int i = 4 * j + 2 * hf;
      const int col = j * Tr::kMmaN + col_lane;
      *reinterpret_cast<float2*>(prm.dk + row + col) = make_float2(dk[i] * prm.scale, dk[i + 1] * prm.scale);
      *reinterpret_cast<float2*>(prm.dv + row + col) = make_float2(dv[i], dv[i + 1]);
    }
  }
}

#endif  // FB_PTX_SM90A

template <typename Tr>
__global__ void __launch_bounds__(Tr::kThreads, 1)
    flash_sm90_tf32_bwd_kernel(const __grid_constant__ Tf32BwdParams prm) {
#if FB_PTX_SM90A
  extern __shared__ __align__(16) unsigned char fb_sm90_tf32_bwd_smem[];
  const std::uint32_t base = (ptx::smem_addr(fb_sm90_tf32_bwd_smem) + Tr::kAtomBytes - 1) &
                             ~std::uint32_t(Tr::kAtomBytes - 1);
  const Tf32BwdSmem<Tr> sm{base};
  const Tf32BwdBarriers<Tr> bars{base + Tr::kOffBar};

  if (threadIdx.x == 0) {
    ptx::mbar_init(bars.kv_full(), 1);
    ptx::mbar_init(bars.kv_split(), Tr::kWgThreads);  // kPresplit: every producer thread
#pragma unroll
    for (int s = 0; s < Tr::kStages; ++s) {
      ptx::mbar_init(bars.raw_full(s), 1);                   // the leader's arrive.expect_tx
      ptx::mbar_init(bars.qd_ready(s), Tr::kWgThreads);      // every producer thread
      ptx::mbar_init(bars.t_ready(s), Tr::kWgThreads);
      ptx::mbar_init(bars.qd_empty(s), Tr::kConsumerThreads);  // every consumer thread
      ptx::mbar_init(bars.t_empty(s), Tr::kConsumerThreads);
    }
    ptx::fence_mbar_init();
  }
  __syncthreads();

  // The block's work, computed after setmaxnreg in each role (values live across it would be held
  // under the launch's register cap). Key tiles outermost: with a causal mask the first key tiles
  // see the most queries and start first.
  auto work = [&]() {
    Tf32BwdWork w;
    w.kv_bh = int(blockIdx.x % unsigned(prm.kv_planes));
    w.n0 = int(blockIdx.x / unsigned(prm.kv_planes)) * Tr::kBlockN;
    const int b = w.kv_bh / prm.kv_heads;
    w.q_bh0 = b * prm.heads + (w.kv_bh % prm.kv_heads) * prm.group;
    // The last query row sees every key, so per_head >= 1.
    w.m_begin = prm.mask.first_q_tile(w.n0, Tr::kBlockM);
    w.per_head = (prm.mask.seq_q + Tr::kBlockM - 1) / Tr::kBlockM - w.m_begin;
    w.steps = w.per_head * prm.group;
    return w;
  };
  const int wg = threadIdx.x / Tr::kWgThreads;
  if (wg == 0) {
    if constexpr (Tr::kSetMaxNreg) ptx::setmaxnreg_dec<Tr::kProducerRegs>();
    tf32_bwd_produce<Tr>(prm, sm, bars, work(), threadIdx.x);
  } else {
    if constexpr (Tr::kSetMaxNreg) ptx::setmaxnreg_inc<Tr::kConsumerRegs>();
    tf32_bwd_consume<Tr>(prm, sm, bars, work(), wg - 1);
  }
#else
  __trap();
#endif
}

}  // namespace fb::cuda::flash_sm90
