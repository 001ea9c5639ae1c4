// FlashAttention forward for Hopper (sm_90a) with FP8 e4m3 Q, K, V (kernels/attention.h's fp8
// semantics): the 16-bit forward's structure (flash_sm90_kernel.cuh: persistent blocks, a TMA
// producer warpgroup, ping-pong consumers, S_{j+1} issued before P_j V_j) on e4m3 wgmma (k32).
//
// Per K/V tile j (kBc keys), per consumer warpgroup (64 query rows):
//   S_j = Q K_j^T          wgmma e4m3 x e4m3 -> f32, Q and K K-major in shared memory
//   online softmax         base 2 with the descales folded in: p' = exp2(s * scale_log2 - m + log2
//                          p_scale) = P * p_scale exactly (p_scale a power of two), its fp32 value
//                          summed into the row sum
//   O += P8 V_j            P8 = e4m3(p') packed in registers as the k32 A fragments; V read as the
//                          K-major V^T tile the launcher's transpose wrote (kVPermutation's order)
// At the end O *= descale_v / rowsum' (rowsum' = p_scale x the fp32 row sum of P) and is stored in
// bf16; LSE = (m + log2 rowsum' - log2 p_scale) ln 2.
//
// Why V is transposed by a separate pass: 8-bit wgmma has no transpose bit, so B must be K-major
// (for P V: keys contiguous per d row). Transposing once into the workspace costs one read and one
// write of V (kv_elems bytes each, ~1-3% of the forward at N >= 4096) and keeps the producer a single
// TMA thread; the same pass permutes the keys so that P needs no register shuffle (traits).
#pragma once

#include <cstdint>

#include <cuda.h>
#include <cuda_runtime.h>

#include "common/exp2_poly.h"
#include "common/mask.h"
#include "common/ptx.cuh"
#include "common/ptx_sm90.cuh"
#include "common/ptx_sm90_fp8.cuh"
#include "common/softmax.cuh"
#include "common/tile_order.h"
#include "flash_sm90/flash_sm90_block.cuh"
#include "flash_sm90/flash_sm90_fp8_traits.h"

namespace fb::cuda::flash_sm90 {

struct Fp8FwdParams {
  CUtensorMap tm_q;   // e4m3 (d, seq_q, batch * heads), box (d, kBr, 1)
  CUtensorMap tm_k;   // e4m3 (d, seq_k, batch * kv_heads), box (d, kBc, 1)
  CUtensorMap tm_vt;  // e4m3 (seq_k_pad, d, batch * kv_heads), box (128, d, 1): V^T, permuted keys
  CUtensorMap tm_o;   // bf16 (d, seq_q, batch * heads), box (64, 64, 1)
  __nv_bfloat16* o;   // the same O, for the direct stores (Tr::kStageO false)
  float* lse;  // nullptr: not written (an inference forward: AttentionParams::lse)
  int heads;
  int kv_heads;
  int group;
  int planes;
  int q_tiles;
  int plane_group;     // query planes scheduled together (common/tile_order.h), K/V sized for L2
  float scale_log2;    // scale * descale_q * descale_k * log2(e)
  float p_scale_log2;  // log2(p_scale), an integer
  float descale_v;     // O = descale_v x (P8 V) / (p_scale x row sum)
  CausalMask mask;
  bool rescale_always;  // timing probe (FB_FP8_RESCALE=always): rescale O every tile, as session 5
};

// ---- the V transpose (one pass before the kernel, into the workspace) ----
// vt[plane][n][g * 32 + k] = v[plane][g * 32 + v_key_of_position(k)][n] for keys < seq_k, 0 past
// them (positions up to seq_k_pad, a multiple of 32: a padded key must read as 0, not as garbage that
// 0 * x would turn into NaN). Block (plane, y) takes the 64-key blocks y, y + gridDim.y, ..., staging
// each in shared memory.
constexpr int kVtPrepKeys = 64;
constexpr int kVtPrepThreads = 256;
template <int D>
__global__ void __launch_bounds__(kVtPrepThreads)
    fp8_transpose_v_kernel(const std::uint8_t* __restrict__ v, std::uint8_t* __restrict__ vt,
                           int seq_k, int seq_k_pad) {
  __shared__ __align__(16) std::uint8_t tile[kVtPrepKeys][D + 16];  // +16: fewer bank conflicts
  const std::int64_t plane = blockIdx.x;
  const std::uint8_t* src = v + plane * std::int64_t(seq_k) * D;
  std::uint8_t* dst = vt + plane * std::int64_t(D) * seq_k_pad;
  constexpr int kVecs = D / 16;  // uint4 per row
  const int key_blocks = (seq_k_pad + kVtPrepKeys - 1) / kVtPrepKeys;
  for (int kb = blockIdx.y; kb < key_blocks; kb += gridDim.y) {
    const int k0 = kb * kVtPrepKeys;
    for (int i = threadIdx.x; i < kVtPrepKeys * kVecs; i += kVtPrepThreads) {
      const int r = i / kVecs, c = i % kVecs;
      const int key = k0 + r;
      uint4 x = make_uint4(0, 0, 0, 0);
      if (key < seq_k) x = *reinterpret_cast<const uint4*>(src + std::int64_t(key) * D + 16 * c);
      *reinterpret_cast<uint4*>(&tile[r][16 * c]) = x;
    }
    __syncthreads();
    const int keys = min(kVtPrepKeys, seq_k_pad - k0);  // a multiple of 32
    const int words = keys / 4;                        // 4 positions per 32-bit store
    for (int i = threadIdx.x; i < D * words; i += kVtPrepThreads) {
      const int n = i / words, w = i % words;
      std::uint32_t packed = 0;
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const int pos = 4 * w + b;
        const int key = (pos & ~(kVPermutationGroup - 1)) + v_key_of_position(pos % kVPermutationGroup);
        packed |= std::uint32_t(tile[key][n]) << (8 * b);
      }
      *reinterpret_cast<std::uint32_t*>(dst + std::int64_t(n) * seq_k_pad + k0 + 4 * w) = packed;
    }
    __syncthreads();  // the next block of keys overwrites the tile
  }
}

// The same transpose, with 4 x 4 byte blocks: a thread reads one 32-bit word (4 d values) of each of
// the 4 keys of one output word, transposes them with 8 byte permutes and writes 4 output words (4 d
// rows), so a warp's store is 128 contiguous bytes of a row. (The first version above gathers single
// bytes and is bound by its integer instructions: ~1 TB/s in Nsight Compute.) Shared memory holds
// kVt2Keys keys, rows of D / 4 + 1 words; the lanes of a warp read the 32 keys of one word each, which
// differ in key bits 1, 2, 4 (8 values mod 32 at either row stride) and 5, 6 (the 32-key group g): the
// group offsets {0, 1, 8, 9} words put the four groups on disjoint banks, so the reads are
// conflict-free, as the row-wise writes of the load are.
constexpr int kVt2Keys = 128;
constexpr int kVt2Threads = 256;
__device__ __forceinline__ int fp8_vt2_group_offset(int key) {
  const int g = (key / kVPermutationGroup) & 3;
  return (g & 1) + 8 * (g >> 1);
}
template <int D>
__global__ void __launch_bounds__(kVt2Threads)
    fp8_transpose_v_kernel_v2(const std::uint8_t* __restrict__ v, std::uint8_t* __restrict__ vt,
                              int seq_k, int seq_k_pad) {
  constexpr int kRowWords = D / 4 + 1;
  constexpr int kUnits = D / 16;  // uint4 per row of V
  __shared__ std::uint32_t tile[kVt2Keys * kRowWords + 16];
  const std::int64_t plane = blockIdx.x;
  const std::uint8_t* src = v + plane * std::int64_t(seq_k) * D;
  std::uint8_t* dst = vt + plane * std::int64_t(D) * seq_k_pad;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int key_blocks = (seq_k_pad + kVt2Keys - 1) / kVt2Keys;
  for (int kb = blockIdx.y; kb < key_blocks; kb += gridDim.y) {
    const int k0 = kb * kVt2Keys;
    for (int i = threadIdx.x; i < kVt2Keys * kUnits; i += kVt2Threads) {
      const int r = i / kUnits, u = i % kUnits;
      const int key = k0 + r;
      uint4 x = make_uint4(0, 0, 0, 0);  // keys past seq_k transpose to zeros (see above)
      if (key < seq_k) x = *reinterpret_cast<const uint4*>(src + std::int64_t(key) * D + 16 * u);
      std::uint32_t* row = tile + r * kRowWords + fp8_vt2_group_offset(r) + 4 * u;
      row[0] = x.x;
      row[1] = x.y;
      row[2] = x.z;
      row[3] = x.w;
    }
    __syncthreads();
    // Lane = output word (4 positions) of the block's 128 keys; warps stride over the d quads.
    const int w = lane;
    if (k0 + 4 * w < seq_k_pad) {  // seq_k_pad is a multiple of 32: a word is wholly in or out
      int rows[4];
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const int pos = 4 * w + b;
        const int r = (pos & ~(kVPermutationGroup - 1)) + v_key_of_position(pos % kVPermutationGroup);
        rows[b] = r * kRowWords + fp8_vt2_group_offset(r);
      }
      for (int n4 = warp; n4 < D / 4; n4 += kVt2Threads / 32) {
        const std::uint32_t w0 = tile[rows[0] + n4], w1 = tile[rows[1] + n4];
        const std::uint32_t w2 = tile[rows[2] + n4], w3 = tile[rows[3] + n4];
        // out[j] = byte j of w0, w1, w2, w3 (lowest first): a 4 x 4 byte transpose.
        const std::uint32_t t0 = __byte_perm(w0, w1, 0x5140), t1 = __byte_perm(w0, w1, 0x7362);
        const std::uint32_t t2 = __byte_perm(w2, w3, 0x5140), t3 = __byte_perm(w2, w3, 0x7362);
        const std::uint32_t out[4] = {__byte_perm(t0, t2, 0x5410), __byte_perm(t0, t2, 0x7632),
                                      __byte_perm(t1, t3, 0x5410), __byte_perm(t1, t3, 0x7632)};
#pragma unroll
        for (int j = 0; j < 4; ++j)
          *reinterpret_cast<std::uint32_t*>(dst + std::int64_t(4 * n4 + j) * seq_k_pad + k0 + 4 * w) = out[j];
      }
    }
    __syncthreads();  // the next block of keys overwrites the tile
  }
}

template <typename Tr>
__device__ __forceinline__ WorkTile fp8_work_tile(const Fp8FwdParams& prm, const CausalMask& mask,
                                                  int t) {
  const PlaneTile pt = grouped_tile(t, prm.planes, prm.q_tiles, prm.plane_group);  // common/tile_order.h
  WorkTile w;
  w.bh = pt.bh;
  w.q0 = pt.q_tile * Tr::kBr;
  w.n_tiles = max(mask.kv_tiles(w.q0, Tr::kBr, Tr::kBc), 1);  // see flash_sm90_kernel.cuh
  return w;
}

#if FB_PTX_SM90A

template <typename Tr>
__device__ __forceinline__ void fp8_produce(const Fp8FwdParams& prm, const SmemTiles<Tr>& sm,
                                            const Barriers<Tr>& bars, const CausalMask& mask,
                                            int n_work) {
  ptx::prefetch_tensormap(&prm.tm_q);
  ptx::prefetch_tensormap(&prm.tm_k);
  ptx::prefetch_tensormap(&prm.tm_vt);
  produce_ring<Tr>(
      bars, n_work, Tr::kKBytes, Tr::kVtBytes, [&](int t) { return fp8_work_tile<Tr>(prm, mask, t); },
      [&](int bh) {
        const int b = bh / prm.heads;
        return b * prm.kv_heads + (bh - b * prm.heads) / prm.group;
      },
      [&](const WorkTile& w, std::uint32_t bar) { ptx::tma_load_3d(sm.q, &prm.tm_q, bar, 0, w.q0, w.bh); },
      [&](int kv_bh, int k0, int s, std::uint32_t bar) {
        ptx::tma_load_3d(sm.k + s * Tr::kKBytes, &prm.tm_k, bar, 0, k0, kv_bh);
      },
      [&](int kv_bh, int k0, int s, std::uint32_t bar) {
#pragma unroll
        for (int c = 0; c < Tr::kVtChunks; ++c)
          ptx::tma_load_3d(sm.v + s * Tr::kVtBytes + c * Tr::kVtChunkBytes, &prm.tm_vt, bar,
                           k0 + c * Tr::kVtChunkKeys, 0, kv_bh);
      });
}

// The two GEMMs of one consumer warpgroup as batches of k32 wgmmas (issued, not waited for).
template <typename Tr> struct Fp8Gemms {
  static constexpr int kStepsPerVtChunk = Tr::kVtRowBytes / Tr::kMmaKBytes;  // 4
  std::uint64_t desc_q, desc_k, desc_v;

  __device__ __forceinline__ Fp8Gemms(const SmemTiles<Tr>& sm, int cw)
      : desc_q(ptx::make_desc_kmajor(sm.q + cw * Tr::kWgQBytes, Tr::kQKRowBytes)),
        desc_k(ptx::make_desc_kmajor(sm.k, Tr::kQKRowBytes)),
        desc_v(ptx::make_desc_kmajor(sm.v, Tr::kVtRowBytes)) {}

  static constexpr std::uint64_t units(int bytes) { return std::uint64_t(bytes / Tr::kUnitBytes); }

  __device__ __forceinline__ void qk(float (&s)[Tr::kSRegs], int stage) const {
#pragma unroll
    for (int kk = 0; kk < Tr::kQKSteps; ++kk)
      ptx::wgmma_ss_fp8<Tr::kBc>(s, desc_q + units(kk * Tr::kMmaKBytes),
                                 desc_k + units(stage * Tr::kKBytes + kk * Tr::kMmaKBytes), kk > 0);
  }
  // o += P V for the V^T tile of ring stage `stage`; p[4k .. 4k+3] is the A fragment of k32 step k.
  __device__ __forceinline__ void pv(float (&o)[Tr::kORegs], const std::uint32_t (&p)[Tr::kPRegs],
                                     int stage) const {
#pragma unroll
    for (int kk = 0; kk < Tr::kPVSteps; ++kk) {
      const std::uint32_t a[Tr::kPRegsPerStep] = {p[4 * kk], p[4 * kk + 1], p[4 * kk + 2],
                                                  p[4 * kk + 3]};
      const int chunk = kk / kStepsPerVtChunk;
      const int in_row = (kk % kStepsPerVtChunk) * Tr::kMmaKBytes;
      ptx::wgmma_rs_fp8<Tr::kHeadDim>(
          o, a, desc_v + units(stage * Tr::kVtBytes + chunk * Tr::kVtChunkBytes + in_row), 1);
    }
  }
};

// Online-softmax step (flash_sm90_kernel.cuh's softmax_step) with p' = P * p_scale: the subtrahend
// is lowered by log2 p_scale, so exp2 returns the scaled value directly (exact: a power of two),
// and l sums p' (p_scale times the fp32 row sum; the epilogue divides it back out). Scores i with
// i % 8 < kExp2PolyEighths take exp2_poly (FMA pipe, common/exp2_poly.h), the rest ex2.approx (MUFU
// pipe): at d = 128 the MUFU pipe alone would need the whole tile's GEMM time for the exponentials.
template <typename Tr>
__device__ __forceinline__ void fp8_softmax_step(float (&s)[Tr::kSRegs], float (&m)[2], float (&l)[2],
                                                 float (&alpha)[2], const int (&key_end)[2],
                                                 bool need_mask, int key0, float scale_log2,
                                                 float p_scale_log2) {
  constexpr float kNegInf = -INFINITY;
  if (need_mask) {
    // As flash_sm90_kernel.cuh's mask_and_lane_max: each score's column a literal against its row's limit.
    const int lim[2] = {key_end[0] - key0, key_end[1] - key0};
#pragma unroll
    for (int i = 0; i < Tr::kSRegs; ++i) {
      if ((i / 4) * Tr::kMmaN + i % 2 >= lim[(i / 2) % 2]) s[i] = kNegInf;
    }
  }
  float mx[2][2] = {{kNegInf, kNegInf}, {kNegInf, kNegInf}};
#pragma unroll
  for (int i = 0; i < Tr::kSRegs; ++i) {
    float& x = mx[(i / 2) % 2][(i / 4) % 2];
    x = fmaxf(x, s[i]);
  }
  float m_sub[2];
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const float tile_max = quad_max(fmaxf(mx[hf][0], mx[hf][1]));
    const float m_new = fmaxf(m[hf], tile_max * scale_log2);
    const float sub = safe_max(m_new);
    alpha[hf] = ptx::exp2_approx(m[hf] - sub);
    m_sub[hf] = sub - p_scale_log2;
    m[hf] = m_new;
  }
  float sum[2][2] = {{0.f, 0.f}, {0.f, 0.f}};
#pragma unroll
  for (int i = 0; i < Tr::kSRegs; ++i) {
    const int hf = (i / 2) % 2;
    const float x = fmaf(s[i], scale_log2, -m_sub[hf]);
    s[i] = (i % 8 < Tr::kExp2PolyEighths) ? exp2_poly(x) : ptx::exp2_approx(x);
    sum[hf][(i / 4) % 2] += s[i];
  }
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) l[hf] = l[hf] * alpha[hf] + (sum[hf][0] + sum[hf][1]);
}

// p' (f32 accumulator layout) -> e4m3 A fragments. k32 step kk covers n8 blocks 4kk .. 4kk+3; the
// thread's columns 2t, 2t+1 of blocks 4kk, 4kk+1 (row g) go to a[0], of blocks 4kk+2, 4kk+3 to a[2],
// the same for row g + 8 to a[1], a[3]. V^T holds the keys in the matching order
// (v_key_of_position, flash_sm90_fp8_traits.h).
template <typename Tr>
__device__ __forceinline__ void fp8_pack_p(std::uint32_t (&p)[Tr::kPRegs],
                                           const float (&s)[Tr::kSRegs]) {
#pragma unroll
  for (int kk = 0; kk < Tr::kPVSteps; ++kk) {
#pragma unroll
    for (int r = 0; r < Tr::kPRegsPerStep; ++r)
      p[4 * kk + r] = ptx::pack_e4m3x4(s[fp8_p_acc_index(kk, r, 0)], s[fp8_p_acc_index(kk, r, 1)],
                                       s[fp8_p_acc_index(kk, r, 2)], s[fp8_p_acc_index(kk, r, 3)]);
  }
}

template <typename Tr>
__device__ __forceinline__ void fp8_rescale_o(float (&o)[Tr::kORegs], const float (&alpha)[2]) {
#pragma unroll
  for (int i = 0; i < Tr::kORegs; ++i) o[i] *= alpha[(i / 2) % 2];
}

template <typename Tr>
__device__ __forceinline__ void fp8_consume(const Fp8FwdParams& prm, const SmemTiles<Tr>& sm,
                                            const Barriers<Tr>& bars, const CausalMask& mask,
                                            int n_work, int cw) {
  const int ctid = threadIdx.x % Tr::kWgThreads;
  const int warp = ctid / Tr::kWarpSize;
  const int lane = ctid % Tr::kWarpSize;
  const int wg_row0 = cw * Tr::kWgRows;
  const int tile_row = wg_row0 + warp * Tr::kWarpRows + lane / 4;
  const int col_lane = 2 * (lane % 4);
  const int seq_q = mask.seq_q;
  const float scale_log2 = prm.scale_log2;
  const float p_scale_log2 = prm.p_scale_log2;

  const Fp8Gemms<Tr> gemm(sm, cw);
  auto turn_begin = [&] { ptx::named_bar_sync(Tr::kBarTurn0 + cw, Tr::kTurnThreads); };
  auto turn_end = [&](bool last) {
    if (!(last && cw == Tr::kConsumerWgs - 1))
      ptx::named_bar_arrive(Tr::kBarTurn0 + (cw + 1) % Tr::kConsumerWgs, Tr::kTurnThreads);
  };
  auto release = [&](std::uint32_t bar) {
    if (lane == 0) ptx::mbar_arrive(bar);
  };
  auto stage_of = [](int i) { return i % Tr::kStages; };
  auto parity_of = [](int i) { return std::uint32_t((i / Tr::kStages) & 1); };

  float o[Tr::kORegs];
  float m[2], l[2], alpha[2];
  float s[Tr::kSRegs];
  std::uint32_t p[Tr::kPRegs];

  if (cw == Tr::kConsumerWgs - 1) ptx::named_bar_arrive(Tr::kBarTurn0, Tr::kTurnThreads);

  int it = 0;
  for (int t = blockIdx.x, tn = 0; t < n_work; t += gridDim.x, ++tn) {
    const WorkTile w = fp8_work_tile<Tr>(prm, mask, t);
    const bool last_work = t + int(gridDim.x) >= n_work;
    const int row = w.q0 + tile_row;
    const int wg_first_row = w.q0 + wg_row0;
    const int n_tiles = w.n_tiles;
    const int key_end[2] = {mask.key_end(row), mask.key_end(row + 8)};
    auto need_mask = [&](int j) { return mask.tile_needs_mask(wg_first_row, j * Tr::kBc, Tr::kBc); };

#pragma unroll
    for (int i = 0; i < Tr::kORegs; ++i) o[i] = 0.f;
    m[0] = m[1] = -INFINITY;
    l[0] = l[1] = 0.f;

    ptx::mbar_wait(bars.q_full(), tn & 1);

    // Tile 0: S_0 alone.
    ptx::mbar_wait(bars.k_full(stage_of(it)), parity_of(it));
    turn_begin();
    ptx::wgmma_fence();
    gemm.qk(s, stage_of(it));
    ptx::wgmma_commit();
    turn_end(false);
    ptx::wgmma_wait<0>();
    ptx::fence_operands(s);
    release(bars.k_empty(stage_of(it)));
    fp8_softmax_step<Tr>(s, m, l, alpha, key_end, need_mask(0), col_lane, scale_log2, p_scale_log2);
    fp8_pack_p<Tr>(p, s);
    // Tile j: S_j and P_{j-1} V_{j-1} in flight together.
    for (int j = 1; j < n_tiles; ++j) {
      const int st = stage_of(it + j);
      const int prev = stage_of(it + j - 1);
      ptx::mbar_wait(bars.k_full(st), parity_of(it + j));
      ptx::mbar_wait(bars.v_full(prev), parity_of(it + j - 1));
      turn_begin();
      ptx::wgmma_fence();
      gemm.qk(s, st);
      ptx::wgmma_commit();
      gemm.pv(o, p, prev);
      ptx::wgmma_commit();
      turn_end(false);
      ptx::wgmma_wait<1>();
      ptx::fence_operands(s);
      release(bars.k_empty(st));
      fp8_softmax_step<Tr>(s, m, l, alpha, key_end, need_mask(j), j * Tr::kBc + col_lane, scale_log2,
                           p_scale_log2);
      // alpha == 1 (no row of the warp raised its max: after the first tiles, most of them) makes
      // the multiply an identity, so a warp skips it whole (exact; the branch is warp-uniform).
      if constexpr (Tr::kPinSoftmax) {
        // The wait for P_{j-1} V_{j-1} sits in both arms of a branch after the softmax, so ptxas
        // cannot hoist it above the softmax. In one basic block with it (the else below, session 6)
        // it did, in every instance: the softmax started only after P V had finished, so S_j and
        // P_{j-1} V_{j-1} never overlapped inside the warpgroup. The branch is on a kernel parameter:
        // every warp of the warpgroup must take the same wgmma.wait_group (.aligned).
        if (prm.rescale_always) {
          ptx::wgmma_wait<0>();
          ptx::fence_operands(o);
          ptx::fence_operands(p);
          fp8_rescale_o<Tr>(o, alpha);
        } else {
          const bool grown = __any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f);
          ptx::wgmma_wait<0>();
          ptx::fence_operands(o);
          ptx::fence_operands(p);
          if (grown) fp8_rescale_o<Tr>(o, alpha);
        }
        release(bars.v_empty(prev));
      } else {
        ptx::wgmma_wait<0>();
        ptx::fence_operands(o);
        ptx::fence_operands(p);
        release(bars.v_empty(prev));
        if (prm.rescale_always || __any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f))
          fp8_rescale_o<Tr>(o, alpha);
      }
      fp8_pack_p<Tr>(p, s);
    }
    // Every S of this tile is done: Q may be replaced (O is staged apart from it).
    release(bars.q_empty());
    const int last = stage_of(it + n_tiles - 1);
    ptx::mbar_wait(bars.v_full(last), parity_of(it + n_tiles - 1));
    turn_begin();
    ptx::wgmma_fence();
    gemm.pv(o, p, last);
    ptx::wgmma_commit();
    turn_end(last_work);
    ptx::wgmma_wait<0>();
    ptx::fence_operands(o);
    ptx::fence_operands(p);
    release(bars.v_empty(last));
    it += n_tiles;

    // ---- epilogue: O *= descale_v / (p_scale x row sum), LSE from the fp32 statistics ----
    float inv[2];
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const float sum = quad_sum(l[hf]);  // p_scale x the row sum of P
      inv[hf] = sum > 0.f ? prm.descale_v / sum : 0.f;
      const int r = row + hf * 8;
      if (prm.lse && lane % 4 == 0 && r < seq_q)
        prm.lse[std::int64_t(w.bh) * seq_q + r] =
            sum > 0.f ? (m[hf] + (log2f(sum) - p_scale_log2)) * float(kLn2) : -INFINITY;
    }
    if constexpr (!Tr::kStageO) {
      // Straight to global memory: one 32-bit store (columns 8 nb + 2t, + 1) per n8 block and row, a
      // warp's store covering 8 rows x 16 bytes. O is a few percent of the bytes the forward moves,
      // so the half-filled sectors cost less than the staging tile's shared memory does (a K/V stage).
      __nv_bfloat16* o_plane = prm.o + std::int64_t(w.bh) * seq_q * Tr::kHeadDim;
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int r = row + hf * 8;
        if (r >= seq_q) continue;
        auto* dst = reinterpret_cast<std::uint32_t*>(o_plane + std::int64_t(r) * Tr::kHeadDim + col_lane);
#pragma unroll
        for (int nb = 0; nb < Tr::kHeadDim / Tr::kMmaN; ++nb)
          dst[nb * Tr::kMmaN / 2] = ptx::pack2<__nv_bfloat16>(o[4 * nb + 2 * hf] * inv[hf],
                                                             o[4 * nb + 2 * hf + 1] * inv[hf]);
      }
      continue;
    }
    ptx::named_bar_sync(Tr::kBarEpilogue0 + cw, Tr::kWgThreads);
#pragma unroll
    for (int nb = 0; nb < Tr::kHeadDim / Tr::kMmaN; ++nb) {
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int r = tile_row + hf * 8;
        const int col = nb * Tr::kMmaN + col_lane;
        const int chunk = col / Tr::kOChunkElems;
        const int unit = (col % Tr::kOChunkElems) * Tr::kOElemBytes / Tr::kUnitBytes;
        const int within = (col * Tr::kOElemBytes) % Tr::kUnitBytes;
        const std::uint32_t addr = sm.o + chunk * Tr::kOChunkBytes + r * Tr::kOSwizzleBytes +
                                   ((unit ^ (r % Tr::kAtomRows)) * Tr::kUnitBytes) + within;
        ptx::st_shared_u32(addr, ptx::pack2<__nv_bfloat16>(o[4 * nb + 2 * hf] * inv[hf],
                                                           o[4 * nb + 2 * hf + 1] * inv[hf]));
      }
    }
    ptx::fence_proxy_async_smem();
    ptx::named_bar_sync(Tr::kBarEpilogue0 + cw, Tr::kWgThreads);
    if (ctid == 0 && wg_first_row < seq_q) {
#pragma unroll
      for (int c = 0; c < Tr::kOChunks; ++c)
        ptx::tma_store_3d(&prm.tm_o, sm.o + c * Tr::kOChunkBytes + cw * Tr::kWgOBytes,
                          c * Tr::kOChunkElems, wg_first_row, w.bh);
      ptx::bulk_commit_group();
      ptx::bulk_wait_group_read_all();
    }
  }
}

#endif  // FB_PTX_SM90A

template <typename Tr>
__global__ void __launch_bounds__(Tr::kThreads, 1)
    flash_sm90_fp8_fwd_kernel(const __grid_constant__ Fp8FwdParams prm) {
#if FB_PTX_SM90A
  extern __shared__ __align__(16) unsigned char fb_sm90_fp8_smem[];
  const std::uint32_t base =
      (ptx::smem_addr(fb_sm90_fp8_smem) + Tr::kAlign - 1) & ~std::uint32_t(Tr::kAlign - 1);
  const SmemTiles<Tr> sm{base + Tr::kOffQ, base + Tr::kOffK, base + Tr::kOffV, base + Tr::kOffO};
  const Barriers<Tr> bars{base + Tr::kOffBar};
  const CausalMask mask = prm.mask;
  const int n_work = prm.planes * prm.q_tiles;

  init_barriers<Tr>(bars);
  run_roles<Tr>([&] { fp8_produce<Tr>(prm, sm, bars, mask, n_work); },
                [&](int cw) { fp8_consume<Tr>(prm, sm, bars, mask, n_work, cw); });
#else
  __trap();
#endif
}

}  // namespace fb::cuda::flash_sm90
