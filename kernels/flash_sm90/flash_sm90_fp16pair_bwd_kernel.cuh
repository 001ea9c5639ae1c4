// The Hopper fp32 backward on fp16 pairs (d = 64 non-causal: the default since session 20 call B; FB_SM90_FP32_BWD_PROBE=
// tf32pair runs the 3xTF32 kernel there instead;
// issue 15, docs/perf-notes.md "Session 20, prepared for call B"). Every fp32 operand x of a GEMM is held
// as two fp16 pieces of x s, s = 2^k a power of two per plane (per K/V plane for K, V; per K/V plane's
// group of query heads for Q, dO; 2^14 for P; an a-priori bound per K/V plane for dS):
//   hi = fp16_rn(x s),  lo = fp16_rn((x s - hi) 2^11),  x = (hi + 2^-11 lo) / s  to ~2^-22 relative,
// (x s's binade top at 2^15, under fp16's 65504; the residual shifted into fp16's normal range) and
// A B = (hi_a hi_b + 2^-11 (hi_a lo_b + lo_a hi_b)) / (s_a s_b), lo * lo dropped as in 3xTF32.
// hi * hi and the two cross terms go to separate fp32 accumulators (the study's and the known-order
// probe's form: results/model/fp32-split-study.txt, results/h200/s20/callA/fp32mma/), joined by one FMA
// at the end. Every scale is constant over a block's whole work, so dV and dK may run in the tensor core
// across query tiles: over kDkvChunkTiles of them (8 k16 MMAs a chain), then into fp32 totals (see the
// traits: a whole sequence in one chain would let the accumulator's truncation reach the rule's floor).
//
// Work: a pre-pass (fp16pair_stats_kernel, fp16pair_split_kernel) writes Q, dO, K, V as hi / lo in
// the wgmma's shared-memory layout (128-byte swizzled rows of 64 fp16) into the workspace, so that the
// kernel loads them with plain bulk copies: per 32-query tile 16 KB (Q hi, Q lo, dO hi, dO lo), per
// 128-key block 64 KB (K hi, K lo, V hi, V lo). One block per (128 keys, K/V plane), two consumer
// warpgroups of 64 keys each and no producer: thread 0 issues the copies (KV once, a 3-stage ring of
// query tiles refilled one tile ahead behind a __syncthreads), both warpgroups step through the tiles
// together. Per warpgroup and tile (64 keys x 32 queries), all wgmma f16 with fp32 accumulators:
//   S^T = K Q^T, dP^T = V dO^T    m64n32k16 SS (A, B K-major)             4 steps x 3 products each
//   dV += P^T dO, dK += dS^T Q    m64n64k16 RS (A from the S^T / dP^T      2 steps x 3 products each
//                                 accumulators, B MN-major)
//   dQ^T = K^T dS^T               m64n32k16 SS (A = K MN-major, B = dS      4 steps x 3 products
//                                 K-major, stored by the warpgroup)
// dQ (this warpgroup's 64 keys' part) staged in shared memory as 32 rows of dq and added by one bulk
// reduction (cp.reduce.async.bulk .add.f32) into p.dq (zeroed by the pre-pass).
// At the end of this file: the d = 128 forms. flash_sm90_fp16pair128_bwd_kernel (session 20; FB_SM90_FP32_BWD_PROBE=
// fp16pair128), one warpgroup of 64 keys a block, dV / dK as four m64n64 jobs; after it the two-warpgroup form (session
// 21; its kAhead instance, fp16pair128w2a, the d = 128 non-causal default since session 21's call C):
// flash_sm90_fp16pair128w2_bwd_kernel, the block's 64 keys shared by role (0: S^T / P / dV, 1: dP^T / dS / dK, dQ^T by
// d's panels), K / V scaled per 64-key block by fp16pair128_kvsplit_kernel.
#pragma once

#include <cstdint>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "common/ptx.cuh"
#include "common/ptx_sm90.cuh"

namespace fb::cuda::flash_sm90 {

struct Fp16PairBwdTraits {
  // The d = 64 kernel's blocks in plane-major order (blockIdx.x = plane * k_blocks + key block; session 22's
  // `s22d64`, as the d = 128 default's: docs/perf-notes.md "Session 22: the d = 64 kernel in plane-major order").
  static constexpr bool kPlaneMajor = true;
  static constexpr int kHeadDim = 64;
  static constexpr int kBlockN = 128;  // keys per block
  static constexpr int kWgKeys = 64;   // keys per consumer warpgroup (the wgmma M)
  static constexpr int kBlockM = 32;   // queries per tile
  static constexpr int kConsumers = kBlockN / kWgKeys;
  static constexpr int kWgThreads = 128;
  static constexpr int kThreads = kConsumers * kWgThreads;
  static constexpr int kStages = 3;
  static constexpr int kRowBytes = 128;  // 64 fp16: one 128-byte swizzled row
  static constexpr int kAtomBytes = 1024;
  static constexpr int kUnitBytes = 16;
  static constexpr int kMmaK = 16;
  static constexpr int kMmaN = 8;
  static constexpr int kMmaKBytes = kMmaK * 2;              // a k16 step along a K-major row
  static constexpr int kMmaKRowsBytes = kMmaK * kRowBytes;  // ... along MN-major rows
  // Workspace / shared-memory pieces (identical layouts: the pre-pass writes what the copies land).
  static constexpr int kKVPartBytes = kBlockN * kRowBytes;  // K hi, K lo, V hi, V lo: 16 KB each
  static constexpr int kKVBytes = 4 * kKVPartBytes;         // 64 KB a block
  static constexpr int kQPartBytes = kBlockM * kRowBytes;   // Q hi, Q lo, dO hi, dO lo: 4 KB each
  static constexpr int kStageBytes = 4 * kQPartBytes;       // 16 KB a query tile
  static constexpr int kDsPartBytes = kBlockM * kRowBytes;  // dS (32 queries x 64 keys) hi or lo
  static constexpr int kDsBytes = 2 * kDsPartBytes;         // per consumer
  static constexpr int kDqBytes = kBlockM * kHeadDim * 4;   // dQ staging (32 rows of dq), per consumer
  static constexpr int kOffKV = 0;
  static constexpr int kOffStage = kOffKV + kKVBytes;
  static constexpr int kOffDs = kOffStage + kStages * kStageBytes;
  static constexpr int kOffDq = kOffDs + kConsumers * kDsBytes;
  // dV and dK run in the tensor core over kDkvChunkTiles query tiles at a time (2 x 4 = 8 k16 MMAs a chain:
  // the known-order probe's per-tile length, 128), each chunk then added in fp32 (round to nearest) into a total
  // held in shared memory, per thread (register i of thread t at word i x 128 + t: conflict-free, no sharing).
  // Chained over a whole sequence (8k queries: 512 MMAs), the accumulator's truncation toward zero, biased by the
  // sign of the running sum, could reach ~2^-16 of |dV|, the FP32 rule's floor at that length.
  static constexpr int kDkvChunkTiles = 4;
  static constexpr int kDkvBytes = 2 * (kHeadDim / 2) * kWgThreads * 4;  // dV, dK totals: 32 KB per consumer
  static constexpr int kOffDkv = kOffDq + kConsumers * kDqBytes;
  static constexpr int kOffBar = kOffDkv + kConsumers * kDkvBytes;
  static constexpr int kNumBars = 1 + kStages;  // kv_full, full[s]
  static constexpr std::size_t kSmemBytes = std::size_t(kOffBar + 8 * kNumBars + kAtomBytes);  // + align slack
  // Registers per thread (m64nN fp32 accumulator: N / 2).
  static constexpr int kSRegs = kBlockM / 2;   // S^T, dP^T: 16
  static constexpr int kPRegs = kSRegs / 2;    // P^T, dS^T packed fp16 pairs: 8
  static constexpr int kDkvRegs = kHeadDim / 2;  // dK, dV: 32
  static constexpr int kDqRegs = kBlockM / 2;  // dQ^T: 16
  static constexpr int kQKSteps = kHeadDim / kMmaK;  // 4
  static constexpr int kKVSteps = kBlockM / kMmaK;   // 2
  static constexpr int kDqSteps = kWgKeys / kMmaK;   // 4
  // The split's constants: a scaled block's max in [2^14, 2^15); the residual x 2^11; P's s = 2^14.
  static constexpr int kScaleTop = 14;
  static constexpr float kLoShift = 2048.f;
  static constexpr float kLoWeight = 1.f / 2048.f;
  static constexpr int kPExp = 14;
  // Stats per K/V plane (uint bits of non-negative floats, combined by atomicMax).
  static constexpr int kStatQ = 0, kStatDo = 1, kStatK = 2, kStatV = 3, kStatDoNorm = 4, kStatVNorm = 5;
  static constexpr int kStats = 8;
  static_assert(kOffStage % kAtomBytes == 0 && kOffDs % kAtomBytes == 0 && kOffDq % kAtomBytes == 0 &&
                    kQPartBytes % kAtomBytes == 0 && kDsPartBytes % kAtomBytes == 0,
                "wgmma operands start on 1024-byte swizzle atoms");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory");
  static_assert(kBlockM % 8 == 0 && kBlockN % 8 == 0, "tiles are whole swizzle atoms");
};

struct Fp16PairBwdParams {
  const unsigned char* qd;     // [batch * heads][q_tiles][Q hi, Q lo, dO hi, dO lo][32 rows][128 B]
  const unsigned char* kv;     // [batch * kv_heads][k_blocks][K hi, K lo, V hi, V lo][128 rows][128 B]
  const unsigned* stats;       // [batch * kv_heads][kStats]
  const float* lse;            // [batch * heads, seq_pad]: LSE * log2(e), +inf on padding rows
  const float* dsum;           // [batch * heads, seq_pad]: D = rowsum(dO o O), 0 on padding rows
  float* dq;                   // [batch, heads, seq_q, d], zeroed: added into by bulk reductions
  float* dk;                   // [batch, kv_heads, seq_k, d]
  float* dv;
  int heads;
  int kv_heads;
  int group;
  int seq_q;
  int seq_k;
  int seq_pad;
  int kv_planes;
  int q_tiles;
  int k_blocks;
  float scale_log2;  // softmax scale * log2(e)
  float scale;
};

// k such that max |x| 2^k lies in [2^14, 2^15) (0 for an all-zero plane), clamped so that 2^k and the
// products of two such factors stay normal fp32 for inputs within 2^+-100.
__host__ __device__ __forceinline__ int fp16pair_exponent(float maxabs) {
  if (!(maxabs > 0.f)) return 0;
  if (!(maxabs <= 3.0e38f)) return -110;
  int e = 0;
  (void)frexpf(maxabs, &e);  // maxabs = m 2^e, m in [0.5, 1): floor(log2 maxabs) = e - 1
  const int k = Fp16PairBwdTraits::kScaleTop + 1 - e;
  return k < -110 ? -110 : (k > 110 ? 110 : k);
}

// The exponents of one K/V plane's scales: Q, dO (its group of query heads), K, V and dS (the bound
// |dS_ij| = P_ij |dP_ij - D_i| <= |dO_i . V_j| + |dO_i . O_i| <= 2 max ||dO_i|| max ||V_j||, O_i being a
// convex combination of V's rows).
struct Fp16PairScales {
  int q, dout, k, v, ds;
  __device__ __forceinline__ static Fp16PairScales of(const unsigned* st) {
    using Tr = Fp16PairBwdTraits;
    Fp16PairScales s;
    s.q = fp16pair_exponent(__uint_as_float(st[Tr::kStatQ]));
    s.dout = fp16pair_exponent(__uint_as_float(st[Tr::kStatDo]));
    s.k = fp16pair_exponent(__uint_as_float(st[Tr::kStatK]));
    s.v = fp16pair_exponent(__uint_as_float(st[Tr::kStatV]));
    s.ds = fp16pair_exponent(2.f * __uint_as_float(st[Tr::kStatDoNorm]) * __uint_as_float(st[Tr::kStatVNorm]));
    return s;
  }
};

// ---- pre-pass (any architecture) ----

// Two fp32 values (already scaled) as fp16 hi / lo pairs: hi = fp16(x), lo = fp16((x - hi) 2^11).
__device__ __forceinline__ void fp16pair_split2(float x0, float x1, std::uint32_t& hi, std::uint32_t& lo) {
  const __half2 h = __floats2half2_rn(x0, x1);
  const float2 hf = __half22float2(h);
  const __half2 l = __floats2half2_rn((x0 - hf.x) * Fp16PairBwdTraits::kLoShift,
                                      (x1 - hf.y) * Fp16PairBwdTraits::kLoShift);
  hi = *reinterpret_cast<const std::uint32_t*>(&h);
  lo = *reinterpret_cast<const std::uint32_t*>(&l);
}

// Per plane of `src` ([planes, seq, 64] fp32): max |x| into stats[plane / group][stat] and, when
// norm_stat >= 0, the largest row norm into stats[plane / group][norm_stat]. 16 threads per row (a
// float4 each); grid (blocks, planes).
__global__ void __launch_bounds__(256) fp16pair_stats_kernel(const float* __restrict__ src, int planes, int seq,
                                                            int group, unsigned* __restrict__ stats, int stat,
                                                            int norm_stat) {
  const int sub = threadIdx.x % 16;
  for (int plane = blockIdx.y; plane < planes; plane += gridDim.y) {
    float mx = 0.f, nmax = 0.f;
    // The same trip count for every lane of a warp (the shuffles below take all 32).
    for (int row0 = blockIdx.x * 16; row0 < seq; row0 += gridDim.x * 16) {
      const int row = row0 + int(threadIdx.x / 16);
      float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
      if (row < seq) x = reinterpret_cast<const float4*>(src + (std::int64_t(plane) * seq + row) * 64)[sub];
      mx = fmaxf(mx, fmaxf(fmaxf(fabsf(x.x), fabsf(x.y)), fmaxf(fabsf(x.z), fabsf(x.w))));
      float ss = x.x * x.x + x.y * x.y + x.z * x.z + x.w * x.w;
#pragma unroll
      for (int o = 8; o > 0; o /= 2) ss += __shfl_xor_sync(0xffffffffu, ss, o);
      nmax = fmaxf(nmax, sqrtf(ss));
    }
    // Non-negative floats order as their bit patterns.
    unsigned umx = __float_as_uint(mx), unn = __float_as_uint(nmax);
#pragma unroll
    for (int o = 16; o > 0; o /= 2) {
      umx = max(umx, __shfl_xor_sync(0xffffffffu, umx, o));
      unn = max(unn, __shfl_xor_sync(0xffffffffu, unn, o));
    }
    if (threadIdx.x % 32 == 0) {
      unsigned* st = stats + (plane / group) * Fp16PairBwdTraits::kStats;
      atomicMax(st + stat, umx);
      if (norm_stat >= 0) atomicMax(st + norm_stat, unn);
    }
  }
}

// src ([planes, seq, 64] fp32) as fp16 hi / lo pieces into dst's tiles of tile_rows rows: tile t of
// plane p at (p tiles + t) parts tile_bytes, hi as part `part`, lo as part + 1; rows past seq zero.
// Row r of a tile holds its 64 values as 8 16-byte units, unit c at c ^ (r % 8) (the 128-byte
// swizzle wgmma reads). One thread per unit.
__global__ void __launch_bounds__(256) fp16pair_split_kernel(const float* __restrict__ src, int planes, int seq,
                                                            int tiles, int tile_rows, int parts, int part,
                                                            int group, const unsigned* __restrict__ stats,
                                                            int stat, unsigned char* __restrict__ dst) {
  using Tr = Fp16PairBwdTraits;
  const std::int64_t rows_pad = std::int64_t(tiles) * tile_rows;
  const std::int64_t n = std::int64_t(planes) * rows_pad * 8;
  for (std::int64_t idx = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < n;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const int unit = int(idx % 8);
    const std::int64_t prow = idx / 8;
    const int plane = int(prow / rows_pad);
    const int row = int(prow % rows_pad);
    const float s = ldexpf(1.f, fp16pair_exponent(__uint_as_float(stats[(plane / group) * Tr::kStats + stat])));
    float x[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    if (row < seq) {
      const float4* p = reinterpret_cast<const float4*>(src + (std::int64_t(plane) * seq + row) * 64 + unit * 8);
      const float4 a = p[0], b = p[1];
      x[0] = a.x; x[1] = a.y; x[2] = a.z; x[3] = a.w;
      x[4] = b.x; x[5] = b.y; x[6] = b.z; x[7] = b.w;
    }
    std::uint32_t hi[4], lo[4];
    // x s is exact: s is a power of two.
#pragma unroll
    for (int i = 0; i < 4; ++i) fp16pair_split2(x[2 * i] * s, x[2 * i + 1] * s, hi[i], lo[i]);
    const int tile = row / tile_rows, r = row % tile_rows;
    const std::int64_t part_bytes = std::int64_t(tile_rows) * Tr::kRowBytes;
    unsigned char* t = dst + ((std::int64_t(plane) * tiles + tile) * parts + part) * part_bytes + r * Tr::kRowBytes +
                       ((unit ^ (r % 8)) * Tr::kUnitBytes);
    *reinterpret_cast<uint4*>(t) = make_uint4(hi[0], hi[1], hi[2], hi[3]);
    *reinterpret_cast<uint4*>(t + part_bytes) = make_uint4(lo[0], lo[1], lo[2], lo[3]);
  }
}

#if FB_PTX_SM90A

// m64n32k16 f16 wgmma, A MN-major (transpose-A: K stored [key][d] is K^T's rows along M = d), B K-major.
struct Fp16PairWgmmaSSAT32 {
  FB_WGMMA_SS_BODY(16, "m64n32k16.f32.f16.f16", "%16", "%17", "%18", "1, 1, 1, 0")
};

__device__ __forceinline__ float fp16pair_ld_shared_f32(std::uint32_t addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
  return v;
}

// The block prologue of the three fp16pair backward kernels (d = 64, fp16pair128, fp16pair128w2): the aligned
// shared-memory base, kv_full and full[s] at Tr::kOffBar, the stages at Tr::kOffStage, this thread's place (wg, ctid:
// its warpgroup and index in it; one warpgroup, as fp16pair128's: ctid = tid), the block's K/V plane and key block
// (blockIdx.x = plane * k_blocks + key block under Tr::kPlaneMajor, else key block * kv_planes + plane) and its query
// steps (the group's heads' tiles); thread 0 inits the barriers (then __syncthreads), issues K / V's copy (kv_full: one
// arrival + kKVBytes) and the first `ahead` query tiles' (full[s]: one arrival + kStageBytes a tile). Below it, the
// per-tile steps that more than one of the kernels take word for word (descriptors, LSE / D loads, the dS store, dQ^T's
// GEMM, dQ's bulk reduction). Each kernel's PTX and SASS are those of its own copy of these lines (checked: session 21,
// branch dedup21).
template <typename Tr>
struct Fp16PairBlock {
  static constexpr int kWgThreads = 128;
  static constexpr bool kOneWg = Tr::kThreads == kWgThreads;
  const Fp16PairBwdParams& prm;
  const std::uint32_t base;
  const std::uint32_t bar_kv;
  const int tid, wg, ctid, warp, lane, g, t4;
  const int kv_bh, kblk, n0, q_bh0, steps;

  __device__ __forceinline__ Fp16PairBlock(const unsigned char* smem, const Fp16PairBwdParams& p, int ahead)
      : prm(p),
        base((ptx::smem_addr(smem) + Tr::kAtomBytes - 1) & ~std::uint32_t(Tr::kAtomBytes - 1)),
        bar_kv(base + Tr::kOffBar),
        tid(threadIdx.x),
        wg(kOneWg ? 0 : tid / kWgThreads),
        ctid(kOneWg ? tid : tid % kWgThreads),
        warp(ctid / 32),
        lane(ctid % 32),
        g(lane / 4),
        t4(lane % 4),
        kv_bh(int(Tr::kPlaneMajor ? blockIdx.x / unsigned(p.k_blocks) : blockIdx.x % unsigned(p.kv_planes))),
        kblk(int(Tr::kPlaneMajor ? blockIdx.x % unsigned(p.k_blocks) : blockIdx.x / unsigned(p.kv_planes))),
        n0(kblk * Tr::kBlockN),
        q_bh0((kv_bh / p.kv_heads) * p.heads + (kv_bh % p.kv_heads) * p.group),
        steps(p.q_tiles * p.group) {
    if (tid == 0) {
      ptx::mbar_init(bar_kv, 1);
#pragma unroll
      for (int s = 0; s < Tr::kStages; ++s) ptx::mbar_init(bar_full(s), 1);
      ptx::fence_mbar_init();
    }
    __syncthreads();
    if (tid == 0) {
      ptx::mbar_arrive_expect_tx(bar_kv, Tr::kKVBytes);
      ptx::bulk_load(base + Tr::kOffKV, prm.kv + (std::int64_t(kv_bh) * prm.k_blocks + kblk) * Tr::kKVBytes,
                     Tr::kKVBytes, bar_kv);
      for (int it = 0; it < ahead && it < steps; ++it) issue(it);
    }
  }
  __device__ __forceinline__ std::uint32_t bar_full(int s) const { return base + Tr::kOffBar + 8 * (1 + s); }
  __device__ __forceinline__ std::uint32_t stage(int s) const {
    return base + Tr::kOffStage + std::uint32_t(s * Tr::kStageBytes);
  }
  __device__ __forceinline__ static std::uint64_t units(std::uint32_t bytes) {
    return std::uint64_t(bytes / Tr::kUnitBytes);
  }
  // Query tile `it` (head q_bh0 + it / q_tiles, tile it % q_tiles) into stage it % kStages (thread 0).
  __device__ __forceinline__ void issue(int it) const {
    const int s = it % Tr::kStages;
    const std::int64_t tile = std::int64_t(q_bh0 + it / prm.q_tiles) * prm.q_tiles + it % prm.q_tiles;
    ptx::mbar_arrive_expect_tx(bar_full(s), Tr::kStageBytes);
    ptx::bulk_load(stage(s), prm.qd + tile * Tr::kStageBytes, Tr::kStageBytes, bar_full(s));
  }
  // Descriptors of 128-byte swizzled operands. K-major: LBO unused (16), SBO = 8 rows; MN-major: LBO = a 64-element
  // block's distance along M / N, SBO = 8 rows along K.
  __device__ __forceinline__ static std::uint64_t kmajor(std::uint32_t a) {
    return ptx::make_desc_sw128(a, Tr::kUnitBytes, Tr::kAtomBytes);
  }
  __device__ __forceinline__ static std::uint64_t mnmajor(std::uint32_t a, std::uint32_t lbo) {
    return ptx::make_desc_sw128(a, lbo, Tr::kAtomBytes);
  }
  // stmatrix (trans) of dS^T's packed registers into dS (K-major rows of 64 keys): this lane's offset in its warp's
  // 16 keys (the tile x adds x 2 kMmaN rows).
  __device__ __forceinline__ std::uint32_t stmatrix_off() const {
    const int st_row = lane % 8, st_tile = lane / 8;
    return std::uint32_t((8 * (st_tile / 2) + st_row) * Tr::kRowBytes +
                         (((2 * warp + st_tile % 2) ^ st_row) * Tr::kUnitBytes));
  }
  // dQ of query tile (head bh, first query m0), staged at dq_s (rows of kHeadDim floats), added into dq by one bulk
  // reduction of the valid rows (one thread).
  __device__ __forceinline__ void reduce_dq(std::uint32_t dq_s, int bh, int m0) const {
    const int rows = min(Tr::kBlockM, prm.seq_q - m0);
    ptx::bulk_reduce_add_f32(prm.dq + (std::int64_t(bh) * prm.seq_q + m0) * Tr::kHeadDim, dq_s,
                             std::uint32_t(rows * Tr::kHeadDim * 4));
    ptx::bulk_commit_group();
  }
  // This thread's LSE and D (queries 8 j + 2 t, + 1) of query tile (head bh, first query m0).
  __device__ __forceinline__ void load_lse_d(float2 (&lse)[Tr::kBlockM / Tr::kMmaN],
                                             float2 (&dd)[Tr::kBlockM / Tr::kMmaN], int bh, int m0) const {
    const float* lse_row = prm.lse + std::int64_t(bh) * prm.seq_pad + m0 + 2 * t4;
    const float* d_row = prm.dsum + std::int64_t(bh) * prm.seq_pad + m0 + 2 * t4;
#pragma unroll
    for (int j = 0; j < Tr::kBlockM / Tr::kMmaN; ++j) {
      lse[j] = *reinterpret_cast<const float2*>(lse_row + j * Tr::kMmaN);
      dd[j] = *reinterpret_cast<const float2*>(d_row + j * Tr::kMmaN);
    }
  }
  // dS (queries x 64 keys, K-major) for dQ^T's B: hi at ds_s, lo kDsPartBytes on, from dS^T's packed registers.
  __device__ __forceinline__ static void store_ds(std::uint32_t ds_s, std::uint32_t st_off,
                                                  const std::uint32_t (&hi)[Tr::kPRegs],
                                                  const std::uint32_t (&lo)[Tr::kPRegs]) {
#pragma unroll
    for (int x = 0; x < Tr::kPRegs / 4; ++x) {
      const std::uint32_t a = ds_s + st_off + std::uint32_t(x * 2 * Tr::kMmaN * Tr::kRowBytes);
      ptx::stmatrix_x4_trans(a, hi[4 * x], hi[4 * x + 1], hi[4 * x + 2], hi[4 * x + 3]);
      ptx::stmatrix_x4_trans(a + Tr::kDsPartBytes, lo[4 * x], lo[4 * x + 1], lo[4 * x + 2], lo[4 * x + 3]);
    }
    ptx::fence_proxy_async_smem();  // dQ^T's wgmma (async proxy) reads what stmatrix wrote
  }
  // dQ^T = K^T dS^T over kDqSteps k16 steps (A = K^T's hi / lo, MN-major; B = dS hi / lo): hi * hi and the cross
  // terms apart, one commit group.
  __device__ __forceinline__ static void dq_mma(float (&dq_hh)[Tr::kDqRegs], float (&dq_x)[Tr::kDqRegs],
                                                std::uint64_t d_kthi, std::uint64_t d_ktlo, std::uint64_t d_dshi,
                                                std::uint64_t d_dslo) {
    ptx::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Tr::kDqSteps; ++kk) {
      const std::uint64_t ua = units(kk * Tr::kMmaKRowsBytes), ub = units(kk * Tr::kMmaKBytes);
      Fp16PairWgmmaSSAT32::run(dq_hh, d_kthi + ua, d_dshi + ub, kk > 0);
      Fp16PairWgmmaSSAT32::run(dq_x, d_kthi + ua, d_dslo + ub, kk > 0);
      Fp16PairWgmmaSSAT32::run(dq_x, d_ktlo + ua, d_dshi + ub, 1);
    }
    ptx::wgmma_commit();
  }
};

#endif  // FB_PTX_SM90A

// One block per (128 keys, K/V plane); blockIdx.x = plane * k_blocks + key block (Tr::kPlaneMajor; the TF32 kernel and
// session 20's order: key block * kv_planes + plane).
template <typename Tr>
__global__ void __launch_bounds__(Tr::kThreads, 1) flash_sm90_fp16pair_bwd_kernel(const __grid_constant__ Fp16PairBwdParams prm) {
#if FB_PTX_SM90A
  extern __shared__ __align__(16) unsigned char fb_sm90_fp16pair_bwd_smem[];
  const Fp16PairBlock<Tr> blk(fb_sm90_fp16pair_bwd_smem, prm, Tr::kStages - 1);

  const Fp16PairScales sc = Fp16PairScales::of(prm.stats + blk.kv_bh * Tr::kStats);
  const float f_s = prm.scale_log2 * ldexpf(1.f, -(sc.k + sc.q));     // S^T's accumulators -> S log2(e) scale
  const float f_dp = ldexpf(1.f, -(sc.v + sc.dout));                  // dP^T's -> dP
  const float s_p = ldexpf(1.f, Tr::kPExp);                           // P -> P s
  const float s_ds = ldexpf(1.f, sc.ds);                              // dS -> dS s
  const float f_dv = ldexpf(1.f, -(Tr::kPExp + sc.dout));
  const float f_dk = prm.scale * ldexpf(1.f, -(sc.ds + sc.q));
  const float f_dq = prm.scale * ldexpf(1.f, -(sc.ds + sc.k));

  // Shared-memory operands of this warpgroup.
  const std::uint32_t kv_s = blk.base + Tr::kOffKV;
  const std::uint32_t k_hi = kv_s, k_lo = kv_s + Tr::kKVPartBytes;
  const std::uint32_t v_hi = kv_s + 2 * Tr::kKVPartBytes, v_lo = kv_s + 3 * Tr::kKVPartBytes;
  const std::uint32_t wg_rows = std::uint32_t(blk.wg * Tr::kWgKeys * Tr::kRowBytes);
  const std::uint32_t ds_s = blk.base + Tr::kOffDs + std::uint32_t(blk.wg * Tr::kDsBytes);  // hi, then lo
  const std::uint32_t dq_s = blk.base + Tr::kOffDq + std::uint32_t(blk.wg * Tr::kDqBytes);
  // This thread's dV total (register i at word i x 128), then dK's.
  const std::uint32_t dkv_s = blk.base + Tr::kOffDkv + std::uint32_t(blk.wg * Tr::kDkvBytes + blk.ctid * 4);
  auto dkv_word = [&](int tensor, int i) {
    return dkv_s + std::uint32_t((tensor * Tr::kDkvRegs + i) * Tr::kWgThreads * 4);
  };
  const std::uint64_t d_khi = blk.kmajor(k_hi + wg_rows), d_klo = blk.kmajor(k_lo + wg_rows);
  const std::uint64_t d_vhi = blk.kmajor(v_hi + wg_rows), d_vlo = blk.kmajor(v_lo + wg_rows);
  const std::uint64_t d_kthi = blk.mnmajor(k_hi + wg_rows, Tr::kKVPartBytes);
  const std::uint64_t d_ktlo = blk.mnmajor(k_lo + wg_rows, Tr::kKVPartBytes);
  const std::uint64_t d_dshi = blk.kmajor(ds_s), d_dslo = blk.kmajor(ds_s + Tr::kDsPartBytes);

  // stmatrix (trans) of dS^T's packed registers into dS (32 query rows of this warpgroup's 64 keys):
  // lane l gives row l % 8 of tile l / 8; tile i of instruction x is dS^T's 8 x 8 block (keys 16 warp +
  // 8 (i % 2) .., queries 8 (2x + i / 2) ..), stored as 8 query rows of one 16-byte unit (unit 2 warp +
  // i % 2 of the row, swizzled by the row; q % 8 == l % 8 for every row the lane addresses).
  const std::uint32_t st_off = blk.stmatrix_off();

  const int key_row = blk.warp * 16 + blk.g;  // this thread's first key among the warpgroup's 64
  const int wg_key0 = blk.n0 + blk.wg * Tr::kWgKeys;
  const bool need_mask = wg_key0 + Tr::kWgKeys > prm.seq_k;

  float dv_hh[Tr::kDkvRegs], dv_x[Tr::kDkvRegs], dk_hh[Tr::kDkvRegs], dk_x[Tr::kDkvRegs];
#pragma unroll
  for (int i = 0; i < Tr::kDkvRegs; ++i) {
    dv_hh[i] = dv_x[i] = dk_hh[i] = dk_x[i] = 0.f;
    ptx::st_shared_u32(dkv_word(0, i), 0u);
    ptx::st_shared_u32(dkv_word(1, i), 0u);
  }

  ptx::mbar_wait(blk.bar_kv, 0);
  for (int it = 0; it < blk.steps; ++it) {
    // Every thread is past tile it - 1 (its wgmmas complete): its stage (it - 1) % kStages, this
    // warpgroup's dS and (its reduction waited for below) dQ staging are free.
    __syncthreads();
    if (blk.tid == 0 && it + Tr::kStages - 1 < blk.steps) blk.issue(it + Tr::kStages - 1);
    const int st = it % Tr::kStages;
    const int bh = blk.q_bh0 + it / prm.q_tiles;
    const int m0 = (it % prm.q_tiles) * Tr::kBlockM;
    ptx::mbar_wait(blk.bar_full(st), (it / Tr::kStages) & 1);
    const std::uint32_t sq_hi = blk.stage(st), sq_lo = sq_hi + Tr::kQPartBytes;
    const std::uint32_t sdo_hi = sq_hi + 2 * Tr::kQPartBytes, sdo_lo = sq_hi + 3 * Tr::kQPartBytes;

    // This thread's LSE and D (queries 8 j + 2 t, + 1), loaded before the wgmmas so that their latency hides
    // under S^T and dP^T (the wgmma asm statements' memory clobbers keep them on this side).
    float2 lse[Tr::kBlockM / Tr::kMmaN], dd[Tr::kBlockM / Tr::kMmaN];
    blk.load_lse_d(lse, dd, bh, m0);

    // S^T = K Q^T, dP^T = V dO^T: hi * hi, and the cross terms, each in its own accumulator.
    float s_hh[Tr::kSRegs], s_x[Tr::kSRegs], dp_hh[Tr::kSRegs], dp_x[Tr::kSRegs];
    {
      const std::uint64_t qh = blk.kmajor(sq_hi), ql = blk.kmajor(sq_lo);
      const std::uint64_t oh = blk.kmajor(sdo_hi), ol = blk.kmajor(sdo_lo);
      ptx::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < Tr::kQKSteps; ++kk) {
        const std::uint64_t u = blk.units(kk * Tr::kMmaKBytes);
        ptx::wgmma_ss<__half, Tr::kBlockM>(s_hh, d_khi + u, qh + u, kk > 0);
        ptx::wgmma_ss<__half, Tr::kBlockM>(dp_hh, d_vhi + u, oh + u, kk > 0);
        ptx::wgmma_ss<__half, Tr::kBlockM>(s_x, d_khi + u, ql + u, kk > 0);
        ptx::wgmma_ss<__half, Tr::kBlockM>(dp_x, d_vhi + u, ol + u, kk > 0);
        ptx::wgmma_ss<__half, Tr::kBlockM>(s_x, d_klo + u, qh + u, 1);
        ptx::wgmma_ss<__half, Tr::kBlockM>(dp_x, d_vlo + u, oh + u, 1);
      }
      ptx::wgmma_commit();
      ptx::wgmma_wait<0>();
      ptx::fence_operands(s_hh);
      ptx::fence_operands(s_x);
      ptx::fence_operands(dp_hh);
      ptx::fence_operands(dp_x);
    }

    // P^T = exp2(S^T scale log2 e - LSE log2 e) (0 for keys past seq_k), dS^T = P^T o (dP^T - D);
    // both scaled and split. Register i: key key_row + 8 ((i / 2) % 2), query 8 (i / 4) + 2 t + i % 2;
    // the packed pair k = registers 2k, 2k + 1 (A fragment register k % 4 of k16 step k / 4).
    std::uint32_t p_hi[Tr::kPRegs], p_lo[Tr::kPRegs], ds_hi[Tr::kPRegs], ds_lo[Tr::kPRegs];
    {
#pragma unroll
      for (int j = 0; j < Tr::kBlockM / Tr::kMmaN; ++j) {
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
          float pv[2], dsv[2];
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int i = 4 * j + 2 * hf + e;
            const float sv = fmaf(s_x[i], Tr::kLoWeight, s_hh[i]);
            float p = ptx::exp2_approx(fmaf(sv, f_s, e == 0 ? -lse[j].x : -lse[j].y));
            if (need_mask && wg_key0 + key_row + 8 * hf >= prm.seq_k) p = 0.f;
            const float dp = fmaf(dp_x[i], Tr::kLoWeight, dp_hh[i]) * f_dp;
            pv[e] = p * s_p;
            dsv[e] = p * (dp - (e == 0 ? dd[j].x : dd[j].y)) * s_ds;
          }
          fp16pair_split2(pv[0], pv[1], p_hi[2 * j + hf], p_lo[2 * j + hf]);
          fp16pair_split2(dsv[0], dsv[1], ds_hi[2 * j + hf], ds_lo[2 * j + hf]);
        }
      }
    }
    // dS (queries x this warpgroup's keys, K-major) for dQ^T's B.
    blk.store_ds(ds_s, st_off, ds_hi, ds_lo);

    // dV += P^T dO, dK += dS^T Q (B MN-major), chained over kDkvChunkTiles tiles (the first of a chunk starts from
    // zero): hi * hi and the cross terms apart.
    const bool fresh = it % Tr::kDkvChunkTiles == 0;
    {
      const std::uint64_t oh = blk.mnmajor(sdo_hi, Tr::kQPartBytes), ol = blk.mnmajor(sdo_lo, Tr::kQPartBytes);
      const std::uint64_t qh = blk.mnmajor(sq_hi, Tr::kQPartBytes), ql = blk.mnmajor(sq_lo, Tr::kQPartBytes);
      ptx::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < Tr::kKVSteps; ++kk) {
        const std::uint64_t u = blk.units(kk * Tr::kMmaKRowsBytes);
        const std::uint32_t ph[4] = {p_hi[4 * kk], p_hi[4 * kk + 1], p_hi[4 * kk + 2], p_hi[4 * kk + 3]};
        const std::uint32_t pl[4] = {p_lo[4 * kk], p_lo[4 * kk + 1], p_lo[4 * kk + 2], p_lo[4 * kk + 3]};
        const std::uint32_t dh[4] = {ds_hi[4 * kk], ds_hi[4 * kk + 1], ds_hi[4 * kk + 2], ds_hi[4 * kk + 3]};
        const std::uint32_t dl[4] = {ds_lo[4 * kk], ds_lo[4 * kk + 1], ds_lo[4 * kk + 2], ds_lo[4 * kk + 3]};
        const std::uint32_t acc = (kk > 0 || !fresh) ? 1u : 0u;
        ptx::wgmma_rs<__half, Tr::kHeadDim>(dv_hh, ph, oh + u, acc);
        ptx::wgmma_rs<__half, Tr::kHeadDim>(dk_hh, dh, qh + u, acc);
        ptx::wgmma_rs<__half, Tr::kHeadDim>(dv_x, ph, ol + u, acc);
        ptx::wgmma_rs<__half, Tr::kHeadDim>(dk_x, dh, ql + u, acc);
        ptx::wgmma_rs<__half, Tr::kHeadDim>(dv_x, pl, oh + u, 1);
        ptx::wgmma_rs<__half, Tr::kHeadDim>(dk_x, dl, qh + u, 1);
      }
      ptx::wgmma_commit();
    }

    // Every thread of this warpgroup has stored its dS (and the issuer's previous reduction has read
    // the dQ staging: a no-op wait for the other threads, none of which has bulk groups).
    ptx::bulk_wait_group_read_all();
    ptx::named_bar_sync(1 + blk.wg, Tr::kWgThreads);

    // dQ^T = K^T dS^T over this warpgroup's 64 keys.
    float dq_hh[Tr::kDqRegs], dq_x[Tr::kDqRegs];
    blk.dq_mma(dq_hh, dq_x, d_kthi, d_ktlo, d_dshi, d_dslo);
    ptx::wgmma_wait<0>();  // dV, dK, dQ^T complete: the stage's Q, dO and this warpgroup's dS are free
    ptx::fence_operands(dv_hh);
    ptx::fence_operands(dv_x);
    ptx::fence_operands(dk_hh);
    ptx::fence_operands(dk_x);
    ptx::fence_operands(dq_hh);
    ptx::fence_operands(dq_x);
    ptx::fence_operands(p_hi);
    ptx::fence_operands(p_lo);
    ptx::fence_operands(ds_hi);
    ptx::fence_operands(ds_lo);
    // A chunk of dV, dK done (or the last tile): hi * hi + 2^-11 cross terms into the fp32 totals.
    if ((it + 1) % Tr::kDkvChunkTiles == 0 || it + 1 == blk.steps) {
#pragma unroll
      for (int i = 0; i < Tr::kDkvRegs; ++i) {
        ptx::st_shared_u32(dkv_word(0, i), __float_as_uint(fp16pair_ld_shared_f32(dkv_word(0, i)) +
                                                           fmaf(dv_x[i], Tr::kLoWeight, dv_hh[i])));
        ptx::st_shared_u32(dkv_word(1, i), __float_as_uint(fp16pair_ld_shared_f32(dkv_word(1, i)) +
                                                           fmaf(dk_x[i], Tr::kLoWeight, dk_hh[i])));
      }
    }

    // scale dQ (register i: column 16 warp + g + 8 ((i / 2) % 2) of d, query 8 (i / 4) + 2 t + i % 2)
    // into the staging rows (row-major, 64 floats a query), then one bulk reduction of the valid rows.
#pragma unroll
    for (int i = 0; i < Tr::kDqRegs; ++i) {
      const int col = blk.warp * 16 + blk.g + 8 * ((i / 2) % 2);
      const int q = (i / 4) * Tr::kMmaN + 2 * blk.t4 + i % 2;
      ptx::st_shared_u32(dq_s + std::uint32_t((q * Tr::kHeadDim + col) * 4),
                         __float_as_uint(fmaf(dq_x[i], Tr::kLoWeight, dq_hh[i]) * f_dq));
    }
    ptx::fence_proxy_async_smem();  // the bulk reduction (async proxy) reads what the stores wrote
    ptx::named_bar_sync(1 + blk.wg, Tr::kWgThreads);
    if (blk.ctid == 0) {
      blk.reduce_dq(dq_s, bh, m0);
    }
  }
  // The last reduction must have read its staging rows before the block's shared memory goes.
  ptx::bulk_wait_group_all();

  // dK (times the softmax scale) and dV of this thread's keys from its totals: register i is key key_row +
  // 8 ((i / 2) % 2), column 8 (i / 4) + 2 t + i % 2.
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const int key = wg_key0 + key_row + 8 * hf;
    if (key >= prm.seq_k) continue;
    const std::int64_t row = (std::int64_t(blk.kv_bh) * prm.seq_k + key) * Tr::kHeadDim;
#pragma unroll
    for (int j = 0; j < Tr::kDkvRegs / 4; ++j) {
      const int i = 4 * j + 2 * hf;
      const int col = j * Tr::kMmaN + 2 * blk.t4;
      auto total = [&](int tensor, int r) { return fp16pair_ld_shared_f32(dkv_word(tensor, r)); };
      *reinterpret_cast<float2*>(prm.dk + row + col) = make_float2(total(1, i) * f_dk, total(1, i + 1) * f_dk);
      *reinterpret_cast<float2*>(prm.dv + row + col) = make_float2(total(0, i) * f_dv, total(0, i + 1) * f_dv);
    }
  }
#else
  __trap();
#endif
}

// ---- d = 128: fp16pair128 (session 20; the d = 128 non-causal default between session 21's calls A and C) ----
// The d = 64 kernel's split, scales and GEMM forms at d = 128 (docs/perf-notes.md, "Session 20, prepared for session
// 21: fp16pair at d = 128"). d = 128 is held as two 64-column panels of 128-byte swizzled rows (panel p: columns
// 64 p ..). dV and dK at d = 128 are m64n128 per warpgroup, 64 registers per accumulator and 256 with hi * hi and the
// cross terms apart for both, more than a warpgroup holds; so dV, dK run as four m64n64 jobs per tile (dV panel 0,
// dV panel 1, dK panel 0, dK panel 1) through two accumulator sets, each job's result added (fp32, round to nearest)
// into per-thread totals in shared memory while the next job runs (a chunk of one tile: 2 k16 MMAs a chain). The
// totals (64 KB) and K / V hi / lo (64 KB) for 64 keys leave room for one warpgroup a block: one block per (64 keys,
// K/V plane), 128 threads, 2 stages of 32 queries (32 KB each); thread 0 issues the copies as at d = 64.
struct Fp16Pair128BwdTraits {
  static constexpr bool kPlaneMajor = false;
  static constexpr int kHeadDim = 128;
  static constexpr int kPanels = 2;     // 64-column panels of d
  static constexpr int kBlockN = 64;    // keys per block = the warpgroup's (the wgmma M)
  static constexpr int kBlockM = 32;    // queries per tile
  static constexpr int kThreads = 128;  // one consumer warpgroup, no producer
  static constexpr int kStages = 2;
  static constexpr int kRowBytes = 128;
  static constexpr int kAtomBytes = 1024;
  static constexpr int kUnitBytes = 16;
  static constexpr int kMmaK = 16;
  static constexpr int kMmaN = 8;
  static constexpr int kMmaKBytes = kMmaK * 2;
  static constexpr int kMmaKRowsBytes = kMmaK * kRowBytes;
  static constexpr int kKVPanelBytes = kBlockN * kRowBytes;     // 8 KB
  static constexpr int kKVPartBytes = kPanels * kKVPanelBytes;  // K hi, K lo, V hi, V lo: 16 KB each
  static constexpr int kKVBytes = 4 * kKVPartBytes;             // 64 KB a block
  static constexpr int kQPanelBytes = kBlockM * kRowBytes;      // 4 KB
  static constexpr int kQPartBytes = kPanels * kQPanelBytes;    // Q hi, Q lo, dO hi, dO lo: 8 KB each
  static constexpr int kStageBytes = 4 * kQPartBytes;           // 32 KB a query tile
  static constexpr int kDsPartBytes = kBlockM * kRowBytes;      // dS (32 queries x 64 keys) hi or lo: 4 KB
  static constexpr int kDsBytes = 2 * kDsPartBytes;
  static constexpr int kDqBytes = kBlockM * kHeadDim * 4;       // dQ staging (32 rows of dq): 16 KB
  static constexpr int kJobs = 4;                               // dV p0, dV p1, dK p0, dK p1 (m64n64 each)
  static constexpr int kJobRegs = 32;                           // an m64n64 accumulator
  static constexpr int kDkvBytes = kJobs * kJobRegs * kThreads * 4;  // totals: 64 KB
  static constexpr int kOffKV = 0;
  static constexpr int kOffStage = kOffKV + kKVBytes;
  static constexpr int kOffDs = kOffStage + kStages * kStageBytes;
  static constexpr int kOffDq = kOffDs + kDsBytes;
  static constexpr int kOffDkv = kOffDq + kDqBytes;
  static constexpr int kOffBar = kOffDkv + kDkvBytes;
  static constexpr int kNumBars = 1 + kStages;  // kv_full, full[s]
  static constexpr std::size_t kSmemBytes = std::size_t(kOffBar + 8 * kNumBars + kAtomBytes);  // + align slack
  static constexpr int kSRegs = kBlockM / 2;         // S^T, dP^T: 16
  static constexpr int kPRegs = kSRegs / 2;          // P^T, dS^T packed fp16 pairs: 8
  static constexpr int kDqRegs = kBlockM / 2;        // dQ^T per 64-row half of d: 16
  static constexpr int kQKSteps = kHeadDim / kMmaK;  // 8 (4 a panel)
  static constexpr int kPanelSteps = 64 / kMmaK;     // 4
  static constexpr int kKVSteps = kBlockM / kMmaK;   // 2
  static constexpr int kDqSteps = kBlockN / kMmaK;   // 4
  static_assert(kOffStage % kAtomBytes == 0 && kOffDs % kAtomBytes == 0 && kOffDq % kAtomBytes == 0 &&
                    kQPanelBytes % kAtomBytes == 0 && kKVPanelBytes % kAtomBytes == 0 &&
                    kDsPartBytes % kAtomBytes == 0,
                "wgmma operands start on 1024-byte swizzle atoms");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory");
  static_assert(kStages == 2, "the loop refills stage (it + 1) % 2 = (it - 1) % 2 after the tile's __syncthreads");
};

// Unit `unit` (8 values) of row `row` of plane `plane` of src ([planes, seq, 128] fp32) into x; past seq x is left as
// it is (the callers' zeros).
__device__ __forceinline__ void fp16pair128_load_unit(const float* __restrict__ src, int seq, int plane, int row,
                                                      int unit, float (&x)[8]) {
  if (row < seq) {
    const float4* p = reinterpret_cast<const float4*>(src + (std::int64_t(plane) * seq + row) * 128 + unit * 8);
    const float4 a = p[0], b = p[1];
    x[0] = a.x; x[1] = a.y; x[2] = a.z; x[3] = a.w;
    x[4] = b.x; x[5] = b.y; x[6] = b.z; x[7] = b.w;
  }
}

// v0..v7 (unit `unit` of row `row` of plane `plane`) as fp16 hi / lo pieces, scaled by s, into dst's tiles of
// tile_rows rows, 4 parts a tile (hi at `part`, lo at part + 1), each part two panels: the unit in panel unit / 8 at
// unit (unit % 8) ^ (r % 8) of the panel's row r (the 128-byte swizzle wgmma reads). The one split of Q and dO at
// d = 128 (fp16pair128_split_kernel, fp16pair128_prepass_split_kernel). The values come as scalars: with an array
// reference the split kernel's PTX numbers its registers otherwise than before this function existed.
__device__ __forceinline__ void fp16pair128_store_unit(float v0, float v1, float v2, float v3, float v4, float v5,
                                                       float v6, float v7, int tiles, int tile_rows, int part,
                                                       float s, int plane, int row, int unit,
                                                       unsigned char* __restrict__ dst) {
  using Tr = Fp16PairBwdTraits;
  const float x[8] = {v0, v1, v2, v3, v4, v5, v6, v7};
  std::uint32_t hi[4], lo[4];
  // x s is exact: s is a power of two.
#pragma unroll
  for (int i = 0; i < 4; ++i) fp16pair_split2(x[2 * i] * s, x[2 * i + 1] * s, hi[i], lo[i]);
  const int tile = row / tile_rows, r = row % tile_rows;
  const int panel = unit / 8, c = unit % 8;
  const std::int64_t panel_bytes = std::int64_t(tile_rows) * Tr::kRowBytes;
  const std::int64_t part_bytes = 2 * panel_bytes;
  unsigned char* t = dst + ((std::int64_t(plane) * tiles + tile) * 4 + part) * part_bytes + panel * panel_bytes +
                     r * Tr::kRowBytes + ((c ^ (r % 8)) * Tr::kUnitBytes);
  *reinterpret_cast<uint4*>(t) = make_uint4(hi[0], hi[1], hi[2], hi[3]);
  *reinterpret_cast<uint4*>(t + part_bytes) = make_uint4(lo[0], lo[1], lo[2], lo[3]);
}

// src ([planes, seq, 128] fp32) as fp16 hi / lo pieces into dst's tiles of tile_rows rows (fp16pair128_store_unit),
// rows past seq zero; scaled by stats[(plane / group) kStats + stat] as the d = 64 split (fp16pair_split_kernel). One
// thread per unit.
__global__ void __launch_bounds__(256) fp16pair128_split_kernel(const float* __restrict__ src, int planes, int seq,
                                                               int tiles, int tile_rows, int part, int group,
                                                               const unsigned* __restrict__ stats, int stat,
                                                               unsigned char* __restrict__ dst) {
  using Tr = Fp16PairBwdTraits;
  constexpr int kRowUnits = 16;  // 128 values: two panels of 8 units
  const std::int64_t rows_pad = std::int64_t(tiles) * tile_rows;
  const std::int64_t n = std::int64_t(planes) * rows_pad * kRowUnits;
  for (std::int64_t idx = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < n;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const int unit = int(idx % kRowUnits);
    const std::int64_t prow = idx / kRowUnits;
    const int plane = int(prow / rows_pad);
    const int row = int(prow % rows_pad);
    const float s = ldexpf(1.f, fp16pair_exponent(__uint_as_float(stats[(plane / group) * Tr::kStats + stat])));
    float x[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    if (row < seq) {
      const float4* p = reinterpret_cast<const float4*>(src + (std::int64_t(plane) * seq + row) * 128 + unit * 8);
      const float4 a = p[0], b = p[1];
      x[0] = a.x; x[1] = a.y; x[2] = a.z; x[3] = a.w;
      x[4] = b.x; x[5] = b.y; x[6] = b.z; x[7] = b.w;
    }
    fp16pair128_store_unit(x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], tiles, tile_rows, part, s, plane, row,
                           unit, dst);
  }
}

#if FB_PTX_SM90A

// One dV / dK job (m64n64, 64 keys x one 64-column panel of d) of a tile: += A B over the tile's 32 queries (2 k16
// steps x 3 products: hi * hi into hh, the cross terms into x; the first step starts from zero), A = P^T or dS^T
// packed from registers, B = the panel of dO or Q, MN-major. One commit group.
template <typename Tr>
__device__ __forceinline__ void fp16pair128_job(float (&hh)[Tr::kJobRegs], float (&x)[Tr::kJobRegs],
                                                const std::uint32_t (&a_hi)[Tr::kPRegs],
                                                const std::uint32_t (&a_lo)[Tr::kPRegs], std::uint64_t b_hi,
                                                std::uint64_t b_lo) {
  ptx::wgmma_fence();  // the accumulators were read by the previous job's totals update
#pragma unroll
  for (int kk = 0; kk < Tr::kKVSteps; ++kk) {
    const std::uint64_t u = std::uint64_t(kk * Tr::kMmaKRowsBytes / Tr::kUnitBytes);
    const std::uint32_t ah[4] = {a_hi[4 * kk], a_hi[4 * kk + 1], a_hi[4 * kk + 2], a_hi[4 * kk + 3]};
    const std::uint32_t al[4] = {a_lo[4 * kk], a_lo[4 * kk + 1], a_lo[4 * kk + 2], a_lo[4 * kk + 3]};
    ptx::wgmma_rs<__half, 64>(hh, ah, b_hi + u, kk > 0 ? 1u : 0u);
    ptx::wgmma_rs<__half, 64>(x, ah, b_lo + u, kk > 0 ? 1u : 0u);
    ptx::wgmma_rs<__half, 64>(x, al, b_hi + u, 1u);
  }
  ptx::wgmma_commit();
}

// A finished job's hi * hi + 2^-11 cross terms added into this thread's totals (register i at word0 + i x 512 B).
template <typename Tr>
__device__ __forceinline__ void fp16pair128_total(std::uint32_t word0, float (&hh)[Tr::kJobRegs],
                                                  float (&x)[Tr::kJobRegs]) {
  ptx::fence_operands(hh);
  ptx::fence_operands(x);
#pragma unroll
  for (int i = 0; i < Tr::kJobRegs; ++i) {
    const std::uint32_t w = word0 + std::uint32_t(i * Tr::kThreads * 4);
    ptx::st_shared_u32(w, __float_as_uint(fp16pair_ld_shared_f32(w) +
                                          fmaf(x[i], Fp16PairBwdTraits::kLoWeight, hh[i])));
  }
}

#endif  // FB_PTX_SM90A

// One block per (64 keys, K/V plane); blockIdx.x = key block * kv_planes + plane (session 20's order, kept here).
template <typename Tr>
__global__ void __launch_bounds__(Tr::kThreads, 1)
    flash_sm90_fp16pair128_bwd_kernel(const __grid_constant__ Fp16PairBwdParams prm) {
#if FB_PTX_SM90A
  using Sp = Fp16PairBwdTraits;  // the split's constants and the stats' layout
  extern __shared__ __align__(16) unsigned char fb_sm90_fp16pair128_bwd_smem[];
  const Fp16PairBlock<Tr> blk(fb_sm90_fp16pair128_bwd_smem, prm, Tr::kStages - 1);

  // The scales (Fp16PairScales' except dS's: the stats' row norms are of 64-column halves of the rows, and
  // ||x|| <= sqrt(2) max half norm, so the bound 2 max ||dO_i|| max ||V_j|| is at most 4 x the halves' maxima).
  const unsigned* st = prm.stats + blk.kv_bh * Sp::kStats;
  const int e_q = fp16pair_exponent(__uint_as_float(st[Sp::kStatQ]));
  const int e_do = fp16pair_exponent(__uint_as_float(st[Sp::kStatDo]));
  const int e_k = fp16pair_exponent(__uint_as_float(st[Sp::kStatK]));
  const int e_v = fp16pair_exponent(__uint_as_float(st[Sp::kStatV]));
  const int e_ds = fp16pair_exponent(4.f * __uint_as_float(st[Sp::kStatDoNorm]) * __uint_as_float(st[Sp::kStatVNorm]));
  const float f_s = prm.scale_log2 * ldexpf(1.f, -(e_k + e_q));  // S^T's accumulators -> S log2(e) scale
  const float f_dp = ldexpf(1.f, -(e_v + e_do));                 // dP^T's -> dP
  const float s_p = ldexpf(1.f, Sp::kPExp);                      // P -> P s
  const float s_ds = ldexpf(1.f, e_ds);                          // dS -> dS s
  const float f_dv = ldexpf(1.f, -(Sp::kPExp + e_do));
  const float f_dk = prm.scale * ldexpf(1.f, -(e_ds + e_q));
  const float f_dq = prm.scale * ldexpf(1.f, -(e_ds + e_k));

  const std::uint32_t kv_s = blk.base + Tr::kOffKV;
  const std::uint32_t k_hi = kv_s, k_lo = kv_s + Tr::kKVPartBytes;
  const std::uint32_t v_hi = kv_s + 2 * Tr::kKVPartBytes, v_lo = kv_s + 3 * Tr::kKVPartBytes;
  const std::uint32_t ds_s = blk.base + Tr::kOffDs;  // hi, then lo
  const std::uint32_t dq_s = blk.base + Tr::kOffDq;
  // This thread's totals: job j's register i at word (j x 32 + i) x 128 + tid.
  const std::uint32_t dkv_s = blk.base + Tr::kOffDkv + std::uint32_t(blk.tid * 4);
  auto job_word = [&](int j) { return dkv_s + std::uint32_t(j * Tr::kJobRegs * Tr::kThreads * 4); };
  const std::uint64_t d_khi = blk.kmajor(k_hi), d_klo = blk.kmajor(k_lo);
  const std::uint64_t d_vhi = blk.kmajor(v_hi), d_vlo = blk.kmajor(v_lo);
  // K^T (A of dQ^T, MN-major): half h of d is panel h of K.
  const std::uint64_t d_kthi0 = blk.mnmajor(k_hi, Tr::kKVPanelBytes);
  const std::uint64_t d_ktlo0 = blk.mnmajor(k_lo, Tr::kKVPanelBytes);
  const std::uint64_t d_kthi1 = blk.mnmajor(k_hi + Tr::kKVPanelBytes, Tr::kKVPanelBytes);
  const std::uint64_t d_ktlo1 = blk.mnmajor(k_lo + Tr::kKVPanelBytes, Tr::kKVPanelBytes);
  const std::uint64_t d_dshi = blk.kmajor(ds_s), d_dslo = blk.kmajor(ds_s + Tr::kDsPartBytes);

  // stmatrix (trans) of dS^T's packed registers into dS, as the d = 64 kernel (one warpgroup of 64 keys).
  const std::uint32_t st_off = blk.stmatrix_off();

  const int key_row = blk.warp * 16 + blk.g;  // this thread's first key among the block's 64
  const bool need_mask = blk.n0 + Tr::kBlockN > prm.seq_k;

#pragma unroll
  for (int i = 0; i < Tr::kJobs * Tr::kJobRegs; ++i)
    ptx::st_shared_u32(dkv_s + std::uint32_t(i * Tr::kThreads * 4), 0u);

  ptx::mbar_wait(blk.bar_kv, 0);
  for (int it = 0; it < blk.steps; ++it) {
    // Every thread is past tile it - 1 (its wgmmas complete): its stage (it - 1) % 2 = (it + 1) % 2, dS and (its
    // reduction waited for below) the dQ staging are free.
    __syncthreads();
    if (blk.tid == 0 && it + Tr::kStages - 1 < blk.steps) blk.issue(it + Tr::kStages - 1);
    const int stg = it % Tr::kStages;
    const int bh = blk.q_bh0 + it / prm.q_tiles;
    const int m0 = (it % prm.q_tiles) * Tr::kBlockM;
    ptx::mbar_wait(blk.bar_full(stg), (it / Tr::kStages) & 1);
    const std::uint32_t sq_hi = blk.stage(stg), sq_lo = sq_hi + Tr::kQPartBytes;
    const std::uint32_t sdo_hi = sq_hi + 2 * Tr::kQPartBytes, sdo_lo = sq_hi + 3 * Tr::kQPartBytes;

    float2 lse[Tr::kBlockM / Tr::kMmaN], dd[Tr::kBlockM / Tr::kMmaN];
    blk.load_lse_d(lse, dd, bh, m0);

    // S^T = K Q^T, dP^T = V dO^T over d's 8 k16 steps (4 a panel): hi * hi and the cross terms apart.
    float s_hh[Tr::kSRegs], s_x[Tr::kSRegs], dp_hh[Tr::kSRegs], dp_x[Tr::kSRegs];
    {
      const std::uint64_t qh = blk.kmajor(sq_hi), ql = blk.kmajor(sq_lo);
      const std::uint64_t oh = blk.kmajor(sdo_hi), ol = blk.kmajor(sdo_lo);
      ptx::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < Tr::kQKSteps; ++kk) {
        const int pn = kk / Tr::kPanelSteps, ks = kk % Tr::kPanelSteps;
        const std::uint64_t ua = blk.units(pn * Tr::kKVPanelBytes + ks * Tr::kMmaKBytes);
        const std::uint64_t ub = blk.units(pn * Tr::kQPanelBytes + ks * Tr::kMmaKBytes);
        ptx::wgmma_ss<__half, Tr::kBlockM>(s_hh, d_khi + ua, qh + ub, kk > 0);
        ptx::wgmma_ss<__half, Tr::kBlockM>(dp_hh, d_vhi + ua, oh + ub, kk > 0);
        ptx::wgmma_ss<__half, Tr::kBlockM>(s_x, d_khi + ua, ql + ub, kk > 0);
        ptx::wgmma_ss<__half, Tr::kBlockM>(dp_x, d_vhi + ua, ol + ub, kk > 0);
        ptx::wgmma_ss<__half, Tr::kBlockM>(s_x, d_klo + ua, qh + ub, 1);
        ptx::wgmma_ss<__half, Tr::kBlockM>(dp_x, d_vlo + ua, oh + ub, 1);
      }
      ptx::wgmma_commit();
      ptx::wgmma_wait<0>();
      ptx::fence_operands(s_hh);
      ptx::fence_operands(s_x);
      ptx::fence_operands(dp_hh);
      ptx::fence_operands(dp_x);
    }

    // P^T, dS^T scaled and split, as the d = 64 kernel (register i: key key_row + 8 ((i / 2) % 2), query
    // 8 (i / 4) + 2 t + i % 2).
    std::uint32_t p_hi[Tr::kPRegs], p_lo[Tr::kPRegs], ds_hi[Tr::kPRegs], ds_lo[Tr::kPRegs];
#pragma unroll
    for (int j = 0; j < Tr::kBlockM / Tr::kMmaN; ++j) {
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        float pv[2], dsv[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int i = 4 * j + 2 * hf + e;
          const float sv = fmaf(s_x[i], Sp::kLoWeight, s_hh[i]);
          float p = ptx::exp2_approx(fmaf(sv, f_s, e == 0 ? -lse[j].x : -lse[j].y));
          if (need_mask && blk.n0 + key_row + 8 * hf >= prm.seq_k) p = 0.f;
          const float dp = fmaf(dp_x[i], Sp::kLoWeight, dp_hh[i]) * f_dp;
          pv[e] = p * s_p;
          dsv[e] = p * (dp - (e == 0 ? dd[j].x : dd[j].y)) * s_ds;
        }
        fp16pair_split2(pv[0], pv[1], p_hi[2 * j + hf], p_lo[2 * j + hf]);
        fp16pair_split2(dsv[0], dsv[1], ds_hi[2 * j + hf], ds_lo[2 * j + hf]);
      }
    }
    // dS (queries x the block's 64 keys, K-major) for dQ^T's B.
    blk.store_ds(ds_s, st_off, ds_hi, ds_lo);

    // dV += P^T dO, dK += dS^T Q as four m64n64 jobs through two accumulator sets (a, b): each job's totals update
    // runs while the next job is in the tensor core. Job j reads B = panel j % 2 of dO (j < 2) or Q (MN-major).
    {
      float a_hh[Tr::kJobRegs], a_x[Tr::kJobRegs], b_hh[Tr::kJobRegs], b_x[Tr::kJobRegs];
      auto bpanel = [&](std::uint32_t part, int pn) {
        return blk.mnmajor(part + std::uint32_t(pn * Tr::kQPanelBytes), Tr::kQPanelBytes);
      };
      fp16pair128_job<Tr>(a_hh, a_x, p_hi, p_lo, bpanel(sdo_hi, 0), bpanel(sdo_lo, 0));  // dV, panel 0
      fp16pair128_job<Tr>(b_hh, b_x, p_hi, p_lo, bpanel(sdo_hi, 1), bpanel(sdo_lo, 1));  // dV, panel 1
      ptx::wgmma_wait<1>();
      fp16pair128_total<Tr>(job_word(0), a_hh, a_x);
      fp16pair128_job<Tr>(a_hh, a_x, ds_hi, ds_lo, bpanel(sq_hi, 0), bpanel(sq_lo, 0));  // dK, panel 0
      ptx::wgmma_wait<1>();
      fp16pair128_total<Tr>(job_word(1), b_hh, b_x);
      fp16pair128_job<Tr>(b_hh, b_x, ds_hi, ds_lo, bpanel(sq_hi, 1), bpanel(sq_lo, 1));  // dK, panel 1
      ptx::wgmma_wait<1>();
      fp16pair128_total<Tr>(job_word(2), a_hh, a_x);
      ptx::wgmma_wait<0>();  // every job complete: P^T's, dS^T's registers and the stage's dO, Q are free
      fp16pair128_total<Tr>(job_word(3), b_hh, b_x);
      ptx::fence_operands(p_hi);
      ptx::fence_operands(p_lo);
      ptx::fence_operands(ds_hi);
      ptx::fence_operands(ds_lo);
    }

    // Every thread has stored its dS (and thread 0's previous reduction has read the dQ staging: a no-op wait for
    // the other threads, none of which has bulk groups).
    ptx::bulk_wait_group_read_all();
    ptx::named_bar_sync(1, Tr::kThreads);

    // dQ^T = K^T dS^T over the block's 64 keys: two 64-row halves of d (panel h of K as A).
    float dq0_hh[Tr::kDqRegs], dq0_x[Tr::kDqRegs], dq1_hh[Tr::kDqRegs], dq1_x[Tr::kDqRegs];
    ptx::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Tr::kDqSteps; ++kk) {
      const std::uint64_t ua = blk.units(kk * Tr::kMmaKRowsBytes), ub = blk.units(kk * Tr::kMmaKBytes);
      Fp16PairWgmmaSSAT32::run(dq0_hh, d_kthi0 + ua, d_dshi + ub, kk > 0);
      Fp16PairWgmmaSSAT32::run(dq0_x, d_kthi0 + ua, d_dslo + ub, kk > 0);
      Fp16PairWgmmaSSAT32::run(dq0_x, d_ktlo0 + ua, d_dshi + ub, 1);
      Fp16PairWgmmaSSAT32::run(dq1_hh, d_kthi1 + ua, d_dshi + ub, kk > 0);
      Fp16PairWgmmaSSAT32::run(dq1_x, d_kthi1 + ua, d_dslo + ub, kk > 0);
      Fp16PairWgmmaSSAT32::run(dq1_x, d_ktlo1 + ua, d_dshi + ub, 1);
    }
    ptx::wgmma_commit();
    ptx::wgmma_wait<0>();  // dQ^T complete: dS is free
    ptx::fence_operands(dq0_hh);
    ptx::fence_operands(dq0_x);
    ptx::fence_operands(dq1_hh);
    ptx::fence_operands(dq1_x);

    // dQ (register i of half h: column 64 h + 16 warp + g + 8 ((i / 2) % 2) of d, query 8 (i / 4) + 2 t + i % 2)
    // scaled into the staging rows (row-major, 128 floats a query), then one bulk reduction of the valid rows.
#pragma unroll
    for (int i = 0; i < Tr::kDqRegs; ++i) {
      const int col = blk.warp * 16 + blk.g + 8 * ((i / 2) % 2);
      const int q = (i / 4) * Tr::kMmaN + 2 * blk.t4 + i % 2;
      ptx::st_shared_u32(dq_s + std::uint32_t((q * Tr::kHeadDim + col) * 4),
                         __float_as_uint(fmaf(dq0_x[i], Sp::kLoWeight, dq0_hh[i]) * f_dq));
      ptx::st_shared_u32(dq_s + std::uint32_t((q * Tr::kHeadDim + 64 + col) * 4),
                         __float_as_uint(fmaf(dq1_x[i], Sp::kLoWeight, dq1_hh[i]) * f_dq));
    }
    ptx::fence_proxy_async_smem();  // the bulk reduction (async proxy) reads what the stores wrote
    ptx::named_bar_sync(1, Tr::kThreads);
    if (blk.tid == 0) {
      blk.reduce_dq(dq_s, bh, m0);
    }
  }
  // The last reduction must have read its staging rows before the block's shared memory goes.
  ptx::bulk_wait_group_all();

  // dV (jobs 0, 1) and dK (jobs 2, 3, times the softmax scale) of this thread's keys from its totals: register i of
  // job j is key key_row + 8 ((i / 2) % 2), column 64 (j % 2) + 8 (i / 4) + 2 t + i % 2.
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const int key = blk.n0 + key_row + 8 * hf;
    if (key >= prm.seq_k) continue;
    const std::int64_t row = (std::int64_t(blk.kv_bh) * prm.seq_k + key) * Tr::kHeadDim;
#pragma unroll
    for (int pn = 0; pn < Tr::kPanels; ++pn) {
#pragma unroll
      for (int j = 0; j < Tr::kJobRegs / 4; ++j) {
        const int i = 4 * j + 2 * hf;
        const int col = 64 * pn + j * Tr::kMmaN + 2 * blk.t4;
        auto total = [&](int job, int r) {
          return fp16pair_ld_shared_f32(job_word(job) + std::uint32_t(r * Tr::kThreads * 4));
        };
        *reinterpret_cast<float2*>(prm.dv + row + col) = make_float2(total(pn, i) * f_dv, total(pn, i + 1) * f_dv);
        *reinterpret_cast<float2*>(prm.dk + row + col) =
            make_float2(total(2 + pn, i) * f_dk, total(2 + pn, i + 1) * f_dk);
      }
    }
  }
#else
  __trap();
#endif
}


// ---- d = 128, two warpgroups: the default (kAhead, plane-major; session 22) and session 21's fp16pair128w2a / w2 ----
// The w2 kernels' K / V pre-pass: scales per 64-key block instead of per plane (a block's work sees one K / V block, so
// every contraction that involves K, V or dS -- S^T and dP^T over d, dQ^T over the block's keys, dK over queries with
// dS's scale -- has its scale constant), computed where the block is split: one read of K and V, no stats pass over
// them. Per block: max |K|, max |V| and the largest full row norm of V, into kvstats[(plane k_blocks + block) 4 + {0,
// 1, 2}] (float bits); the dS bound of the block is 2 max ||dO_i|| max_j in block ||V_j|| (dO's from the plane stats).
struct Fp16Pair128KvStats {
  static constexpr int kMaxK = 0, kMaxV = 1, kVNorm = 2, kWords = 4;
};

// The block's maxima of three non-negative floats (each thread's a, b, c) as bit patterns (non-negative floats order
// as their bits): shuffles within each warp, the warps' maxima through red (one __syncthreads), every thread's out.
// Every thread of the block calls it.
template <int kWarps>
__device__ __forceinline__ void fp16pair_block_max3(float a, float b, float c, unsigned (&red)[3][kWarps],
                                                    unsigned (&out)[3]) {
  unsigned v[3] = {__float_as_uint(a), __float_as_uint(b), __float_as_uint(c)};
#pragma unroll
  for (int o = 16; o > 0; o /= 2) {
#pragma unroll
    for (int x = 0; x < 3; ++x) v[x] = max(v[x], __shfl_xor_sync(0xffffffffu, v[x], o));
  }
  if (threadIdx.x % 32 == 0) {
#pragma unroll
    for (int x = 0; x < 3; ++x) red[x][threadIdx.x / 32] = v[x];
  }
  __syncthreads();
#pragma unroll
  for (int x = 0; x < 3; ++x) {
    out[x] = red[x][0];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) out[x] = max(out[x], red[x][w]);
  }
}

// One block of 256 threads per (64-key block, K/V plane) = (blk, plane): K and V's 64 rows of 128 floats (1,024 units
// of 8 a tensor, 4 a thread: unit u = tid + 256 m, row u / 16 -- the 16 units of a row in 16 consecutive lanes), the
// block's maxima reduced (through red), then both split as fp16pair128_split_kernel splits (hi at part 0 / 2, lo at
// part 1 / 3 of the block's 64 KB; rows past seq zero). Every thread of the block calls it (one __syncthreads).
__device__ __forceinline__ void fp16pair128_kvsplit_block(const float* __restrict__ k, const float* __restrict__ v,
                                                          int seq, int k_blocks, unsigned* __restrict__ kvstats,
                                                          unsigned char* __restrict__ dst, int blk, int plane,
                                                          unsigned (&red)[3][8]) {
  using Tr = Fp16PairBwdTraits;
  constexpr int kRows = 64, kRowUnits = 16, kPerThread = kRows * kRowUnits / 256;  // 4 units a tensor
  const int tid = int(threadIdx.x);
  float xk[kPerThread][8], xv[kPerThread][8];
  float mk = 0.f, mv = 0.f, nv = 0.f;
#pragma unroll
  for (int m = 0; m < kPerThread; ++m) {
    const int u = tid + 256 * m, row = blk * kRows + u / kRowUnits, unit = u % kRowUnits;
#pragma unroll
    for (int e = 0; e < 8; ++e) xk[m][e] = xv[m][e] = 0.f;
    if (row < seq) {
      const std::int64_t off = (std::int64_t(plane) * seq + row) * 128 + unit * 8;
      const float4 a = reinterpret_cast<const float4*>(k + off)[0], b = reinterpret_cast<const float4*>(k + off)[1];
      const float4 c = reinterpret_cast<const float4*>(v + off)[0], d = reinterpret_cast<const float4*>(v + off)[1];
      xk[m][0] = a.x; xk[m][1] = a.y; xk[m][2] = a.z; xk[m][3] = a.w;
      xk[m][4] = b.x; xk[m][5] = b.y; xk[m][6] = b.z; xk[m][7] = b.w;
      xv[m][0] = c.x; xv[m][1] = c.y; xv[m][2] = c.z; xv[m][3] = c.w;
      xv[m][4] = d.x; xv[m][5] = d.y; xv[m][6] = d.z; xv[m][7] = d.w;
    }
    float ss = 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      mk = fmaxf(mk, fabsf(xk[m][e]));
      mv = fmaxf(mv, fabsf(xv[m][e]));
      ss = fmaf(xv[m][e], xv[m][e], ss);
    }
#pragma unroll
    for (int o = 8; o > 0; o /= 2) ss += __shfl_xor_sync(0xffffffffu, ss, o);  // the row's 16 lanes
    nv = fmaxf(nv, sqrtf(ss));
  }
  unsigned mx[3];
  fp16pair_block_max3(mk, mv, nv, red, mx);
  const unsigned umk = mx[0], umv = mx[1], unv = mx[2];
  if (tid == 0) {
    unsigned* st = kvstats + (std::int64_t(plane) * k_blocks + blk) * Fp16Pair128KvStats::kWords;
    st[Fp16Pair128KvStats::kMaxK] = umk;
    st[Fp16Pair128KvStats::kMaxV] = umv;
    st[Fp16Pair128KvStats::kVNorm] = unv;
  }
  const float sk = ldexpf(1.f, fp16pair_exponent(__uint_as_float(umk)));
  const float sv = ldexpf(1.f, fp16pair_exponent(__uint_as_float(umv)));
  const std::int64_t panel_bytes = std::int64_t(kRows) * Tr::kRowBytes;
  const std::int64_t part_bytes = 2 * panel_bytes;
  unsigned char* const blk_dst = dst + (std::int64_t(plane) * k_blocks + blk) * 4 * part_bytes;
#pragma unroll
  for (int m = 0; m < kPerThread; ++m) {
    const int u = tid + 256 * m, r = u / kRowUnits, unit = u % kRowUnits;
    const int panel = unit / 8, c = unit % 8;
    unsigned char* const t = blk_dst + panel * panel_bytes + r * Tr::kRowBytes + ((c ^ (r % 8)) * Tr::kUnitBytes);
#pragma unroll
    for (int tensor = 0; tensor < 2; ++tensor) {
      const float(&x)[8] = tensor == 0 ? xk[m] : xv[m];
      const float s = tensor == 0 ? sk : sv;
      std::uint32_t hi[4], lo[4];
      // x s is exact: s is a power of two.
#pragma unroll
      for (int i = 0; i < 4; ++i) fp16pair_split2(x[2 * i] * s, x[2 * i + 1] * s, hi[i], lo[i]);
      unsigned char* const th = t + 2 * tensor * part_bytes;
      *reinterpret_cast<uint4*>(th) = make_uint4(hi[0], hi[1], hi[2], hi[3]);
      *reinterpret_cast<uint4*>(th + part_bytes) = make_uint4(lo[0], lo[1], lo[2], lo[3]);
    }
  }
}

// fp16pair128_kvsplit_block over a grid (k_blocks, kv planes) of 256 threads.
__global__ void __launch_bounds__(256) fp16pair128_kvsplit_kernel(const float* __restrict__ k,
                                                                 const float* __restrict__ v, int seq, int k_blocks,
                                                                 unsigned* __restrict__ kvstats,
                                                                 unsigned char* __restrict__ dst) {
  __shared__ unsigned red[3][8];
  fp16pair128_kvsplit_block(k, v, seq, k_blocks, kvstats, dst, int(blockIdx.x), int(blockIdx.y), red);
}

// ---- the w2 kernels' fused pre-pass in two launches (session 22's fp16pair128w2f, the default since its call A) ----
// What ran before the w2 kernels until then (and under fp16pair128w2a / w2), seven launches (flash::backward_prepass:
// padded LSE, D = rowsum(dO o O), dQ zeroed; the stats memset; fp16pair_stats_kernel on Q and on dO;
// fp16pair128_split_kernel on Q and on dO; fp16pair128_kvsplit_kernel), as a memset and two launches that write the
// same bits:
//   1. fp16pair128_rows_prepass_kernel, one read of Q, dO and O: the padded LSE, D, dQ zeroed, and Q's / dO's stats;
//   2. fp16pair128_prepass_split_kernel, blocks by role: Q / dO split (fp16pair128_store_unit, the default's code)
//      with the scales of 1's stats, then K / V (fp16pair128_kvsplit_block, the default's code).
// Q and dO are still read twice each (their stats must be whole before their split), O, K and V once: one read of dO
// (the stats pass's) and four launches fewer. The Q / dO blocks of 2 take the rows in reverse, so that they start on
// the rows 1 read last (some may still be in L2).
struct Fp16Pair128PrepassParams {
  const float* q;     // [q_planes, seq_q, 128]
  const float* dout;  // [q_planes, seq_q, 128]
  const float* o;     // [q_planes, seq_q, 128]
  const float* lse;   // [q_planes, seq_q]: natural log
  const float* k;     // [kv_planes, seq_k, 128]
  const float* v;
  float* lse_pad;     // [q_planes, seq_pad]: LSE lse_mult, +inf on padding rows and rows that see no key
  float* d_pad;       // [q_planes, seq_pad]: D, 0 on padding rows
  float* dq;          // [q_planes, seq_q, 128]: zeroed
  unsigned* stats;    // [kv_planes][Fp16PairBwdTraits::kStats], zeroed before 1: Q's, dO's maxima (atomicMax)
  unsigned* kvstats;  // [kv_planes][k_blocks][Fp16Pair128KvStats::kWords]
  unsigned char* qd;  // split Q / dO tiles (fp16pair128_store_unit's layout)
  unsigned char* kv;  // split K / V blocks (fp16pair128_kvsplit_block's)
  int seq_q, seq_pad, seq_k, group;
  int q_tiles, tile_rows, k_blocks;
  int row_chunks;                // 1's blocks per query plane: ceil(seq_pad / kRowsPerBlock)
  std::int64_t qd_units;         // q_planes q_tiles tile_rows 16
  std::int64_t qd_blocks;        // 2's Q / dO blocks: ceil(qd_units / kQdUnitsPerBlock); then the K / V blocks
  float lse_mult;                // log2(e), as backward_prepass's lse_log2
  static constexpr int kThreads = 256;
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kRowsPerWarp = 4;
  static constexpr int kRowsPerBlock = kWarps * kRowsPerWarp;  // 32 padded query rows a block of 1
  static constexpr int kQdUnitsPerThread = 2;                  // 2: a Q and a dO unit each, twice
  static constexpr int kQdUnitsPerBlock = kThreads * kQdUnitsPerThread;
};

// 1: one warp per padded query row (kRowsPerWarp rows a warp), block b on rows [32 (b % row_chunks), + 32) of query
// plane b / row_chunks. Per row: D and the padded LSE exactly as backward_prepass's kernel computes them (lane l sums
// O dO over columns l + 32 j, j = 0..3 in order, then the 16, 8, 4, 2, 1 butterfly), dQ's row zeroed, and Q's, dO's
// stats as fp16pair_stats_kernel takes them from a row of 128 read as two rows of 64: lanes 16 h .. 16 h + 15 hold
// half h, a float4 each, dO's half-row norm the sum of their squares over the 8, 4, 2, 1 butterfly. The block's
// maxima (bit patterns of non-negative floats) reduced, then one atomicMax each into stats.
__global__ void __launch_bounds__(Fp16Pair128PrepassParams::kThreads)
    fp16pair128_rows_prepass_kernel(const Fp16Pair128PrepassParams pp) {
  using Sp = Fp16PairBwdTraits;
  using Pp = Fp16Pair128PrepassParams;
  __shared__ unsigned red[3][Pp::kWarps];
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  const int plane = int(blockIdx.x / unsigned(pp.row_chunks)), chunk = int(blockIdx.x % unsigned(pp.row_chunks));
  float mq = 0.f, mdo = 0.f, ndo = 0.f;
#pragma unroll
  for (int it = 0; it < Pp::kRowsPerWarp; ++it) {
    const int i = chunk * Pp::kRowsPerBlock + it * Pp::kWarps + warp;  // warp-uniform
    if (i >= pp.seq_pad) break;
    const std::int64_t row = std::int64_t(plane) * pp.seq_pad + i;
    if (i >= pp.seq_q) {
      if (lane == 0) {
        pp.d_pad[row] = 0.f;
        pp.lse_pad[row] = INFINITY;
      }
      continue;
    }
    const std::int64_t off = (std::int64_t(plane) * pp.seq_q + i) * 128;
    const float4 xq = reinterpret_cast<const float4*>(pp.q + off)[lane];
    const float4 xd = reinterpret_cast<const float4*>(pp.dout + off)[lane];
    // The roundings spelled out (__fmaf_rn, __fmul_rn: no contraction left to the compiler) as the other kernels' PTX
    // has them: backward_prepass's chain is fma.rn from a sum register holding +0, fp16pair_stats_kernel's square sum
    // mul.rn x.x^2, then fma.rn y, z, w.
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < 4; ++j) sum = __fmaf_rn(pp.o[off + lane + 32 * j], pp.dout[off + lane + 32 * j], sum);
#pragma unroll
    for (int s = 16; s > 0; s /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, s);
    reinterpret_cast<float4*>(pp.dq + off)[lane] = make_float4(0.f, 0.f, 0.f, 0.f);
    if (lane == 0) {
      pp.d_pad[row] = sum;
      const float row_lse = pp.lse[std::int64_t(plane) * pp.seq_q + i];
      pp.lse_pad[row] = row_lse == -INFINITY ? INFINITY : row_lse * pp.lse_mult;
    }
    mq = fmaxf(mq, fmaxf(fmaxf(fabsf(xq.x), fabsf(xq.y)), fmaxf(fabsf(xq.z), fabsf(xq.w))));
    mdo = fmaxf(mdo, fmaxf(fmaxf(fabsf(xd.x), fabsf(xd.y)), fmaxf(fabsf(xd.z), fabsf(xd.w))));
    float ss = __fmaf_rn(xd.w, xd.w, __fmaf_rn(xd.z, xd.z, __fmaf_rn(xd.y, xd.y, __fmul_rn(xd.x, xd.x))));
#pragma unroll
    for (int o = 8; o > 0; o /= 2) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    ndo = fmaxf(ndo, sqrtf(ss));
  }
  unsigned mx[3];
  fp16pair_block_max3(mq, mdo, ndo, red, mx);
  if (threadIdx.x == 0) {
    const unsigned umq = mx[0], umd = mx[1], und = mx[2];
    unsigned* st = pp.stats + (plane / pp.group) * Sp::kStats;
    atomicMax(st + Sp::kStatQ, umq);
    atomicMax(st + Sp::kStatDo, umd);
    atomicMax(st + Sp::kStatDoNorm, und);
  }
}

// 2: blocks [0, qd_blocks) split Q and dO (unit idx of Q and of dO, kQdUnitsPerThread idx a thread; the last units
// first), the rest split K and V, one (64-key block, K/V plane) each (block qd_blocks + plane k_blocks + key block).
__global__ void __launch_bounds__(Fp16Pair128PrepassParams::kThreads)
    fp16pair128_prepass_split_kernel(const Fp16Pair128PrepassParams pp) {
  using Sp = Fp16PairBwdTraits;
  using Pp = Fp16Pair128PrepassParams;
  __shared__ unsigned red[3][8];
  if (std::int64_t(blockIdx.x) < pp.qd_blocks) {
    // Every load first (2 x kQdUnitsPerThread units of 32 B and their scales' stats a thread in flight), then the
    // splits and stores.
    constexpr int kRowUnits = 16, kUnits = Pp::kQdUnitsPerThread;
    const std::int64_t rows_pad = std::int64_t(pp.q_tiles) * pp.tile_rows;
    const std::int64_t b = pp.qd_blocks - 1 - std::int64_t(blockIdx.x);
    float xq[kUnits][8], xd[kUnits][8];
    unsigned eq[kUnits], ed[kUnits];
    int plane[kUnits], row[kUnits], unit[kUnits];
#pragma unroll
    for (int m = 0; m < kUnits; ++m) {
      const std::int64_t idx = b * Pp::kQdUnitsPerBlock + m * Pp::kThreads + threadIdx.x;
      plane[m] = -1;
      if (idx >= pp.qd_units) continue;
      unit[m] = int(idx % kRowUnits);
      const std::int64_t prow = idx / kRowUnits;
      plane[m] = int(prow / rows_pad);
      row[m] = int(prow % rows_pad);
      const unsigned* st = pp.stats + (plane[m] / pp.group) * Sp::kStats;
      eq[m] = st[Sp::kStatQ];
      ed[m] = st[Sp::kStatDo];
#pragma unroll
      for (int e = 0; e < 8; ++e) xq[m][e] = xd[m][e] = 0.f;
      fp16pair128_load_unit(pp.q, pp.seq_q, plane[m], row[m], unit[m], xq[m]);
      fp16pair128_load_unit(pp.dout, pp.seq_q, plane[m], row[m], unit[m], xd[m]);
    }
#pragma unroll
    for (int m = 0; m < kUnits; ++m) {
      if (plane[m] < 0) continue;
      const float sq = ldexpf(1.f, fp16pair_exponent(__uint_as_float(eq[m])));
      const float sd = ldexpf(1.f, fp16pair_exponent(__uint_as_float(ed[m])));
      const float(&q)[8] = xq[m];
      const float(&d)[8] = xd[m];
      fp16pair128_store_unit(q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7], pp.q_tiles, pp.tile_rows, 0, sq,
                             plane[m], row[m], unit[m], pp.qd);
      fp16pair128_store_unit(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], pp.q_tiles, pp.tile_rows, 2, sd,
                             plane[m], row[m], unit[m], pp.qd);
    }
    return;
  }
  const std::int64_t b = std::int64_t(blockIdx.x) - pp.qd_blocks;
  fp16pair128_kvsplit_block(pp.k, pp.v, pp.seq_k, pp.k_blocks, pp.kvstats, pp.kv, int(b % pp.k_blocks),
                            int(b / pp.k_blocks), red);
}

// The w2 kernels' parameters: fp16pair128's, and the per-block K / V stats of fp16pair128_kvsplit_kernel.
struct Fp16Pair128W2Params {
  Fp16PairBwdParams p;
  const unsigned* kvstats;  // [batch * kv_heads][k_blocks][Fp16Pair128KvStats::kWords]
};

// fp16pair128's split, scales, pre-pass and workspace (Fp16Pair128BwdTraits' tiles: 64 keys a block, 32-query
// tiles), but two consumer warpgroups of one block share the block's 64 keys by role (docs/perf-notes.md, "Session
// 21: fp16pair128w2"): warpgroup 0 computes S^T = K Q^T, P^T and dV += P^T dO; warpgroup 1 dP^T = V dO^T, dS^T =
// P^T o (dP^T - D) (P^T handed over through shared memory, thread to thread: both accumulators have the same
// layout) and dK += dS^T Q; dQ^T = K^T dS^T is split by d's panels (warpgroup w: panel w). So dV and dK are each
// one m64n128 accumulator pair in one warpgroup's registers (128 a thread), chained in the tensor core over
// kDkvChunkTiles tiles (8 k16 MMAs, the d = 64 kernel's chunk) before the fp32 totals in shared memory: no per-job
// totals traffic, and the SM has two warpgroups (8 warps) where fp16pair128 has one. The wgmma code is the same
// instruction stream in both warpgroups (operands chosen by the warpgroup); only the elementwise steps branch.
// kAhead (FB_SM90_FP32_BWD_PROBE=fp16pair128w2a): each warpgroup issues the next tile's S^T / dP^T right after this
// tile's dQ^T and waits for dQ^T alone (wgmma.wait_group 1), so that the totals, the dQ staging, its barrier and the
// reduction run under the next tile's first GEMMs instead of in series with them.
// kPlaneMajorT (with kAhead: the default since session 22's call A, fp16pair128w2m): the blocks in plane-major order,
// blockIdx.x = plane * k_blocks + key block, so that a plane's key blocks run in one wave and read its Q / dO tiles
// through L2, from DRAM once instead of once a key block (docs/perf-notes.md, "Session 22: fp16pair128w2m").
template <bool kAheadT, bool kPlaneMajorT = false>
struct Fp16Pair128W2BwdTraits {
  static constexpr bool kAhead = kAheadT;
  static constexpr bool kPlaneMajor = kPlaneMajorT;
  using Tiles = Fp16Pair128BwdTraits;  // tiles, workspace pieces and wgmma steps (the pre-pass writes its layout)
  static constexpr int kHeadDim = Tiles::kHeadDim;
  static constexpr int kBlockN = Tiles::kBlockN;  // 64 keys a block, both warpgroups'
  static constexpr int kBlockM = Tiles::kBlockM;  // 32 queries a tile
  static constexpr int kWgThreads = 128;
  static constexpr int kThreads = 2 * kWgThreads;  // warpgroup 0: S^T / P / dV; 1: dP^T / dS / dK
  static constexpr int kStages = 2;
  static constexpr int kAtomBytes = Tiles::kAtomBytes;
  static constexpr int kUnitBytes = Tiles::kUnitBytes;
  static constexpr int kRowBytes = Tiles::kRowBytes;
  static constexpr int kMmaN = Tiles::kMmaN;
  static constexpr int kMmaKBytes = Tiles::kMmaKBytes;
  static constexpr int kMmaKRowsBytes = Tiles::kMmaKRowsBytes;
  static constexpr int kKVPanelBytes = Tiles::kKVPanelBytes;
  static constexpr int kKVPartBytes = Tiles::kKVPartBytes;
  static constexpr int kKVBytes = Tiles::kKVBytes;          // 64 KB
  static constexpr int kQPanelBytes = Tiles::kQPanelBytes;
  static constexpr int kQPartBytes = Tiles::kQPartBytes;
  static constexpr int kStageBytes = Tiles::kStageBytes;    // 32 KB
  static constexpr int kDsPartBytes = Tiles::kDsPartBytes;
  static constexpr int kDsBytes = Tiles::kDsBytes;          // 8 KB
  static constexpr int kDqBytes = Tiles::kDqBytes;          // 16 KB: 32 rows of 128 floats, a panel a warpgroup
  static constexpr int kSRegs = Tiles::kSRegs;              // S^T or dP^T: 16
  static constexpr int kPRegs = Tiles::kPRegs;              // P^T or dS^T, packed: 8
  static constexpr int kDqRegs = Tiles::kDqRegs;            // dQ^T's panel: 16
  static constexpr int kQKSteps = Tiles::kQKSteps;
  static constexpr int kPanelSteps = Tiles::kPanelSteps;
  static constexpr int kKVSteps = Tiles::kKVSteps;
  static constexpr int kDqSteps = Tiles::kDqSteps;
  static constexpr int kAccRegs = kHeadDim / 2;             // dV or dK (m64n128): 64
  static constexpr int kDkvChunkTiles = Fp16PairBwdTraits::kDkvChunkTiles;  // 4 tiles: 8 k16 MMAs a chain
  static constexpr int kPxBytes = kSRegs * kWgThreads * 4;  // P^T handed over: 8 KB (word i x 128 + thread)
  static constexpr int kTotWgBytes = kAccRegs * kWgThreads * 4;  // a warpgroup's totals: 32 KB
  static constexpr int kOffKV = 0;
  static constexpr int kOffStage = kOffKV + kKVBytes;
  static constexpr int kOffDs = kOffStage + kStages * kStageBytes;
  static constexpr int kOffDq = kOffDs + kDsBytes;
  static constexpr int kOffPx = kOffDq + kDqBytes;
  static constexpr int kOffTot = kOffPx + kPxBytes;
  static constexpr int kOffBar = kOffTot + 2 * kTotWgBytes;
  static constexpr int kNumBars = 1 + kStages;  // kv_full, full[s]
  static constexpr std::size_t kSmemBytes = std::size_t(kOffBar + 8 * kNumBars + kAtomBytes);  // + align slack
  // Named barriers (0 is __syncthreads), all over the block's 256 threads, each once a tile: P^T handed over
  // (warpgroup 0 arrives, 1 waits), dS stored and the dQ staging free, the dQ staging written.
  static constexpr int kBarP = 1, kBarDs = 2, kBarDq = 3;
  static_assert(kOffStage % kAtomBytes == 0 && kOffDs % kAtomBytes == 0 && kOffDq % kAtomBytes == 0,
                "wgmma operands start on 1024-byte swizzle atoms");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory");
  static_assert(kStages == 2 && kBlockN == 64 && kHeadDim == 2 * 64, "the roles and panels below assume these");
};

// One block per (64 keys, K/V plane); blockIdx.x = key block * kv_planes + plane (as fp16pair128), or plane * k_blocks
// + key block under kPlaneMajor.
template <typename Tr>
__global__ void __launch_bounds__(Tr::kThreads, 1)
    flash_sm90_fp16pair128w2_bwd_kernel(const __grid_constant__ Fp16Pair128W2Params w2prm) {
#if FB_PTX_SM90A
  using Sp = Fp16PairBwdTraits;  // the split's constants and the stats' layout
  const Fp16PairBwdParams& prm = w2prm.p;
  extern __shared__ __align__(16) unsigned char fb_sm90_fp16pair128w2_bwd_smem[];
  const Fp16PairBlock<Tr> blk(fb_sm90_fp16pair128w2_bwd_smem, prm, Tr::kStages);

  // The scales: Q's and dO's per plane group from the stats pass (as fp16pair128), K's and V's per 64-key block from
  // the K / V split, and dS's per block from the bound 2 max ||dO_i|| max ||V_j|| <= 2 sqrt(2) (dO's largest half-row
  // norm) (the block's largest row norm of V) <= 4 x the product (a binade of headroom at most).
  const unsigned* st = prm.stats + blk.kv_bh * Sp::kStats;
  const unsigned* kvst =
      w2prm.kvstats + (std::int64_t(blk.kv_bh) * prm.k_blocks + blk.kblk) * Fp16Pair128KvStats::kWords;
  const int e_q = fp16pair_exponent(__uint_as_float(st[Sp::kStatQ]));
  const int e_do = fp16pair_exponent(__uint_as_float(st[Sp::kStatDo]));
  const int e_k = fp16pair_exponent(__uint_as_float(kvst[Fp16Pair128KvStats::kMaxK]));
  const int e_v = fp16pair_exponent(__uint_as_float(kvst[Fp16Pair128KvStats::kMaxV]));
  const int e_ds = fp16pair_exponent(4.f * __uint_as_float(st[Sp::kStatDoNorm]) *
                                     __uint_as_float(kvst[Fp16Pair128KvStats::kVNorm]));
  const float f_s = prm.scale_log2 * ldexpf(1.f, -(e_k + e_q));  // S^T's accumulators -> S log2(e) scale
  const float f_dp = ldexpf(1.f, -(e_v + e_do));                 // dP^T's -> dP
  const float s_p = ldexpf(1.f, Sp::kPExp);                      // P -> P s
  const float s_ds = ldexpf(1.f, e_ds);                          // dS -> dS s
  // This warpgroup's output: dV (P^T dO's unscaling) or dK (dS^T Q's, times the softmax scale).
  const float f_out = blk.wg == 0 ? ldexpf(1.f, -(Sp::kPExp + e_do)) : prm.scale * ldexpf(1.f, -(e_ds + e_q));
  const float f_dq = prm.scale * ldexpf(1.f, -(e_ds + e_k));

  const std::uint32_t kv_s = blk.base + Tr::kOffKV;
  const std::uint32_t k_hi = kv_s, k_lo = kv_s + Tr::kKVPartBytes;
  const std::uint32_t v_hi = kv_s + 2 * Tr::kKVPartBytes, v_lo = kv_s + 3 * Tr::kKVPartBytes;
  const std::uint32_t ds_s = blk.base + Tr::kOffDs;  // hi, then lo
  const std::uint32_t dq_s = blk.base + Tr::kOffDq;
  const std::uint32_t px_s = blk.base + Tr::kOffPx + std::uint32_t(blk.ctid * 4);  // P^T's register i at word i x 128
  const std::uint32_t tot_s = blk.base + Tr::kOffTot + std::uint32_t(blk.wg * Tr::kTotWgBytes + blk.ctid * 4);
  auto px_word = [&](int i) { return px_s + std::uint32_t(i * Tr::kWgThreads * 4); };
  auto tot_word = [&](int i) { return tot_s + std::uint32_t(i * Tr::kWgThreads * 4); };
  // S^T = K Q^T (warpgroup 0) or dP^T = V dO^T (1): A = K or V (hi, lo), K-major; B = the stage's Q or dO.
  const std::uint64_t d_ahi = blk.kmajor(blk.wg == 0 ? k_hi : v_hi), d_alo = blk.kmajor(blk.wg == 0 ? k_lo : v_lo);
  const std::uint32_t b_part = std::uint32_t(blk.wg == 0 ? 0 : 2 * Tr::kQPartBytes);
  // dV += P^T dO (0) or dK += dS^T Q (1): B = the stage's dO or Q, MN-major, N = d's two panels LBO apart.
  const std::uint32_t j_part = std::uint32_t(blk.wg == 0 ? 2 * Tr::kQPartBytes : 0);
  // dQ^T's panel wg: A = panel wg of K (MN-major), B = dS (K-major).
  const std::uint64_t d_kthi = blk.mnmajor(k_hi + std::uint32_t(blk.wg * Tr::kKVPanelBytes), Tr::kKVPanelBytes);
  const std::uint64_t d_ktlo = blk.mnmajor(k_lo + std::uint32_t(blk.wg * Tr::kKVPanelBytes), Tr::kKVPanelBytes);
  const std::uint64_t d_dshi = blk.kmajor(ds_s), d_dslo = blk.kmajor(ds_s + Tr::kDsPartBytes);

  // stmatrix (trans) of dS^T's packed registers into dS, as fp16pair128 (warpgroup 1's warps).
  const std::uint32_t st_off = blk.stmatrix_off();

  const int key_row = blk.warp * 16 + blk.g;  // this thread's first key among the block's 64
  const bool need_mask = blk.n0 + Tr::kBlockN > prm.seq_k;

#pragma unroll
  for (int i = 0; i < Tr::kAccRegs; ++i) ptx::st_shared_u32(tot_word(i), 0u);
  float acc_hh[Tr::kAccRegs], acc_x[Tr::kAccRegs];  // dV or dK of the current chunk: hi * hi, cross terms

  // Tile it's stage landed, this thread's LSE (warpgroup 0) or D (1) at queries 8 j + 2 t, + 1 loaded, and S^T (0) or
  // dP^T (1) over d's 8 k16 steps (4 a panel) issued as one commit group: hi * hi and the cross terms apart.
  float2 rowv[Tr::kBlockM / Tr::kMmaN];
  float x_hh[Tr::kSRegs], x_x[Tr::kSRegs];
  auto start_tile = [&](int it) {
    const int stg = it % Tr::kStages;
    ptx::mbar_wait(blk.bar_full(stg), (it / Tr::kStages) & 1);
    const float* src = (blk.wg == 0 ? prm.lse : prm.dsum) + std::int64_t(blk.q_bh0 + it / prm.q_tiles) * prm.seq_pad +
                       (it % prm.q_tiles) * Tr::kBlockM + 2 * blk.t4;
#pragma unroll
    for (int j = 0; j < Tr::kBlockM / Tr::kMmaN; ++j) rowv[j] = *reinterpret_cast<const float2*>(src + j * Tr::kMmaN);
    const std::uint32_t sq = blk.stage(stg);
    const std::uint64_t bhi = blk.kmajor(sq + b_part), blo = blk.kmajor(sq + b_part + Tr::kQPartBytes);
    ptx::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Tr::kQKSteps; ++kk) {
      const int pn = kk / Tr::kPanelSteps, ks = kk % Tr::kPanelSteps;
      const std::uint64_t ua = blk.units(pn * Tr::kKVPanelBytes + ks * Tr::kMmaKBytes);
      const std::uint64_t ub = blk.units(pn * Tr::kQPanelBytes + ks * Tr::kMmaKBytes);
      ptx::wgmma_ss<__half, Tr::kBlockM>(x_hh, d_ahi + ua, bhi + ub, kk > 0);
      ptx::wgmma_ss<__half, Tr::kBlockM>(x_x, d_ahi + ua, blo + ub, kk > 0);
      ptx::wgmma_ss<__half, Tr::kBlockM>(x_x, d_alo + ua, bhi + ub, 1);
    }
    ptx::wgmma_commit();
  };

  ptx::mbar_wait(blk.bar_kv, 0);
  if constexpr (Tr::kAhead) start_tile(0);  // steps >= 1 (seq_q >= 1)
  for (int it = 0; it < blk.steps; ++it) {
    const int stg = it % Tr::kStages;
    const int bh = blk.q_bh0 + it / prm.q_tiles;
    const int m0 = (it % prm.q_tiles) * Tr::kBlockM;
    const std::uint32_t sq = blk.stage(stg);
    if constexpr (!Tr::kAhead) start_tile(it);
    ptx::wgmma_wait<0>();  // S^T / dP^T of tile it (kAhead: issued during tile it - 1, the only group in flight)
    ptx::fence_operands(x_hh);
    ptx::fence_operands(x_x);

    // Warpgroup 0: P^T (0 for keys past seq_k), handed over, scaled and split. Warpgroup 1: dP^T - D, then (P^T
    // received) dS^T = P^T o (dP^T - D), scaled, split and stored for dQ^T. Register i: key key_row + 8 ((i / 2) %
    // 2), query 8 (i / 4) + 2 t + i % 2; the packed pair k = registers 2k, 2k + 1. The arithmetic is fp16pair128's.
    std::uint32_t a_hi[Tr::kPRegs], a_lo[Tr::kPRegs];  // P^T (0) or dS^T (1): A of dV / dK
    if (blk.wg == 0) {
#pragma unroll
      for (int j = 0; j < Tr::kBlockM / Tr::kMmaN; ++j) {
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
          float pv[2];
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int i = 4 * j + 2 * hf + e;
            const float sv = fmaf(x_x[i], Sp::kLoWeight, x_hh[i]);
            float p = ptx::exp2_approx(fmaf(sv, f_s, e == 0 ? -rowv[j].x : -rowv[j].y));
            if (need_mask && blk.n0 + key_row + 8 * hf >= prm.seq_k) p = 0.f;
            ptx::st_shared_u32(px_word(i), __float_as_uint(p));
            pv[e] = p * s_p;
          }
          fp16pair_split2(pv[0], pv[1], a_hi[2 * j + hf], a_lo[2 * j + hf]);
        }
      }
      ptx::named_bar_arrive(Tr::kBarP, Tr::kThreads);  // P^T (bar.arrive orders the stores before 1's reads)
    } else {
      float dpd[Tr::kSRegs];
#pragma unroll
      for (int i = 0; i < Tr::kSRegs; ++i)
        dpd[i] = fmaf(x_x[i], Sp::kLoWeight, x_hh[i]) * f_dp - ((i % 2) == 0 ? rowv[i / 4].x : rowv[i / 4].y);
      ptx::named_bar_sync(Tr::kBarP, Tr::kThreads);
#pragma unroll
      for (int k = 0; k < Tr::kPRegs; ++k) {
        const float d0 = fp16pair_ld_shared_f32(px_word(2 * k)) * dpd[2 * k] * s_ds;
        const float d1 = fp16pair_ld_shared_f32(px_word(2 * k + 1)) * dpd[2 * k + 1] * s_ds;
        fp16pair_split2(d0, d1, a_hi[k], a_lo[k]);
      }
      // dS (queries x the block's 64 keys, K-major) for dQ^T's B.
      blk.store_ds(ds_s, st_off, a_hi, a_lo);
    }

    // dV += P^T dO (0) or dK += dS^T Q (1), m64n128k16 RS, chained over kDkvChunkTiles tiles (the first of a
    // chunk starts from zero); in the tensor core while warpgroup 1 computes dS (0) and under dQ^T.
    const bool fresh = it % Tr::kDkvChunkTiles == 0;
    {
      const std::uint64_t bhi = blk.mnmajor(sq + j_part, Tr::kQPanelBytes);
      const std::uint64_t blo = blk.mnmajor(sq + j_part + Tr::kQPartBytes, Tr::kQPanelBytes);
      ptx::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < Tr::kKVSteps; ++kk) {
        const std::uint64_t u = blk.units(kk * Tr::kMmaKRowsBytes);
        const std::uint32_t ah[4] = {a_hi[4 * kk], a_hi[4 * kk + 1], a_hi[4 * kk + 2], a_hi[4 * kk + 3]};
        const std::uint32_t al[4] = {a_lo[4 * kk], a_lo[4 * kk + 1], a_lo[4 * kk + 2], a_lo[4 * kk + 3]};
        const std::uint32_t acc = (kk > 0 || !fresh) ? 1u : 0u;
        ptx::wgmma_rs<__half, Tr::kHeadDim>(acc_hh, ah, bhi + u, acc);
        ptx::wgmma_rs<__half, Tr::kHeadDim>(acc_x, ah, blo + u, acc);
        ptx::wgmma_rs<__half, Tr::kHeadDim>(acc_x, al, bhi + u, 1u);
      }
      ptx::wgmma_commit();
    }

    // Every thread of warpgroup 1 has stored (and fenced) its dS, and thread 0's previous reduction has read the dQ
    // staging (a no-op wait for the other threads, none of which has bulk groups).
    ptx::bulk_wait_group_read_all();
    ptx::named_bar_sync(Tr::kBarDs, Tr::kThreads);

    // dQ^T's panel wg = K^T dS^T over the block's 64 keys.
    float dq_hh[Tr::kDqRegs], dq_x[Tr::kDqRegs];
    blk.dq_mma(dq_hh, dq_x, d_kthi, d_ktlo, d_dshi, d_dslo);
    // dV / dK and dQ^T complete: this tile's stage, dS and a_hi / a_lo are free. kAhead: tile it + 1's S^T / dP^T
    // issued first (its stage waited for; a third commit group, reading stage (it + 1) % 2, K / V and writing x_hh /
    // x_x only, all of them dead until the next iteration's wait), and only the two older groups waited for.
    if constexpr (Tr::kAhead) {
      if (it + 1 < blk.steps) {
        start_tile(it + 1);
        ptx::wgmma_wait<1>();
      } else {
        ptx::wgmma_wait<0>();
      }
    } else {
      ptx::wgmma_wait<0>();
    }
    ptx::fence_operands(acc_hh);
    ptx::fence_operands(acc_x);
    ptx::fence_operands(dq_hh);
    ptx::fence_operands(dq_x);
    ptx::fence_operands(a_hi);
    ptx::fence_operands(a_lo);
    // A chunk done (or the last tile): hi * hi + 2^-11 cross terms into this thread's fp32 totals.
    if ((it + 1) % Tr::kDkvChunkTiles == 0 || it + 1 == blk.steps) {
#pragma unroll
      for (int i = 0; i < Tr::kAccRegs; ++i)
        ptx::st_shared_u32(tot_word(i), __float_as_uint(fp16pair_ld_shared_f32(tot_word(i)) +
                                                        fmaf(acc_x[i], Sp::kLoWeight, acc_hh[i])));
    }

    // dQ's panel (register i: column 64 wg + 16 warp + g + 8 ((i / 2) % 2) of d, query 8 (i / 4) + 2 t + i % 2)
    // scaled into the staging rows (row-major, 128 floats a query), then one bulk reduction of the valid rows.
#pragma unroll
    for (int i = 0; i < Tr::kDqRegs; ++i) {
      const int col = 64 * blk.wg + blk.warp * 16 + blk.g + 8 * ((i / 2) % 2);
      const int q = (i / 4) * Tr::kMmaN + 2 * blk.t4 + i % 2;
      ptx::st_shared_u32(dq_s + std::uint32_t((q * Tr::kHeadDim + col) * 4),
                         __float_as_uint(fmaf(dq_x[i], Sp::kLoWeight, dq_hh[i]) * f_dq));
    }
    ptx::fence_proxy_async_smem();  // the bulk reduction (async proxy) reads what the stores wrote
    // Every thread has written its staging and completed every wgmma of this tile (its stage, dS and P^T's words
    // were last read before here; kAhead: the one group still in flight reads stage (it + 1) % 2, not stage it % 2).
    ptx::named_bar_sync(Tr::kBarDq, Tr::kThreads);
    if (blk.tid == 0) {
      blk.reduce_dq(dq_s, bh, m0);
      if (it + Tr::kStages < blk.steps) blk.issue(it + Tr::kStages);  // stage it % 2: every read of it done (above)
    }
  }
  // The last reduction must have read its staging rows before the block's shared memory goes.
  ptx::bulk_wait_group_all();

  // dV (warpgroup 0) or dK (1) of this thread's keys from its totals: register i is key key_row + 8 ((i / 2) % 2),
  // column 8 (i / 4) + 2 t + i % 2.
  float* const out = blk.wg == 0 ? prm.dv : prm.dk;
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const int key = blk.n0 + key_row + 8 * hf;
    if (key >= prm.seq_k) continue;
    const std::int64_t row = (std::int64_t(blk.kv_bh) * prm.seq_k + key) * Tr::kHeadDim;
#pragma unroll
    for (int j = 0; j < Tr::kAccRegs / 4; ++j) {
      const int i = 4 * j + 2 * hf;
      *reinterpret_cast<float2*>(out + row + j * Tr::kMmaN + 2 * blk.t4) =
          make_float2(fp16pair_ld_shared_f32(tot_word(i)) * f_out, fp16pair_ld_shared_f32(tot_word(i + 1)) * f_out);
    }
  }
#else
  __trap();
#endif
}

}  // namespace fb::cuda::flash_sm90
