// Thin inline-PTX wrappers for the Hopper (sm_90a) kernels: mbarriers, TMA (cp.async.bulk.tensor),
// wgmma with its shared-memory matrix descriptors, setmaxnreg and named barriers.
//
// Everything here needs sm_90a: the wrappers exist only in device passes for that target
// (FB_PTX_SM90A == 1), and the kernels that use them guard their bodies with the same macro, so
// builds for other targets (the sm_80 pass of CMAKE_CUDA_ARCHITECTURES "80;90a") compile empty
// kernels instead of failing in ptxas. Shared-memory operands are shared-window addresses
// (ptx::smem_addr), barriers 8-byte mbarrier objects in shared memory.
//
// API stability: the Hopper kernels include this header; add wrappers, do not change existing ones.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/ptx.cuh"

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FB_PTX_SM90A 1
#else
#define FB_PTX_SM90A 0
#endif

namespace fb::cuda::ptx {

#if FB_PTX_SM90A

// ---- mbarrier (shared::cta) ----
// A phase completes when `count` arrivals have happened and every byte announced with expect_tx
// has landed; waiters name the phase by its parity (0, 1, 0, ...).
__device__ __forceinline__ void mbar_init(std::uint32_t bar, std::uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Makes initialised barriers visible to the async proxy (TMA) and the other threads; follow with a
// block barrier.
__device__ __forceinline__ void fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// One arrival that also announces `bytes` of transactions (TMA copies completing on this barrier).
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// True once the phase with this parity has completed.
__device__ __forceinline__ bool mbar_try_wait(std::uint32_t bar, std::uint32_t parity) {
  std::uint32_t done;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}
__device__ __forceinline__ void mbar_wait(std::uint32_t bar, std::uint32_t parity) {
  while (!mbar_try_wait(bar, parity)) {
  }
}

// ---- TMA: tiled bulk tensor copies described by a CUtensorMap (kernel parameter) ----
__device__ __forceinline__ void prefetch_tensormap(const void* tmap) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(tmap) : "memory");
}
// Global -> shared box at coordinates (c0 innermost, c1, c2); completes `bar`'s transactions.
// Out-of-bounds elements of the box are written as zeros (and still count as transferred bytes).
__device__ __forceinline__ void tma_load_3d(std::uint32_t dst, const void* tmap, std::uint32_t bar,
                                            int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(dst),
      "l"(tmap), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
// Shared -> global box; elements outside the tensor are not written.
__device__ __forceinline__ void tma_store_3d(const void* tmap, std::uint32_t src, int c0, int c1,
                                             int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(
          tmap),
      "r"(src), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
__device__ __forceinline__ void bulk_commit_group() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// Waits until the committed bulk stores have finished reading shared memory.
__device__ __forceinline__ void bulk_wait_group_read_all() {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
// Waits until the committed bulk operations have completed (their global writes included).
__device__ __forceinline__ void bulk_wait_group_all() {
  asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}
// Global -> shared copy of `bytes` contiguous bytes (16-byte aligned, a multiple of 16); completes
// `bar`'s transactions.
__device__ __forceinline__ void bulk_load(std::uint32_t dst, const void* src, std::uint32_t bytes,
                                          std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
          dst),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
}
// global[i] += shared[i] for `bytes` / 4 floats (16-byte aligned, a multiple of 16), done by the
// memory system as one bulk operation; part of the thread's bulk group (bulk_commit_group).
__device__ __forceinline__ void bulk_reduce_add_f32(void* dst, std::uint32_t src,
                                                    std::uint32_t bytes) {
  asm volatile(
      "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(dst),
      "r"(src), "r"(bytes)
      : "memory");
}
// Orders this thread's ordinary shared-memory writes before later async-proxy (TMA, wgmma) reads.
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

__device__ __forceinline__ void st_shared_u32(std::uint32_t addr, std::uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void st_shared_f32x4(std::uint32_t addr, float a, float b, float c,
                                                float d) {
  asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "f"(a), "f"(b), "f"(c),
               "f"(d)
               : "memory");
}
__device__ __forceinline__ std::uint32_t ld_shared_u32(std::uint32_t addr) {
  std::uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ float2 ld_shared_f32x2(std::uint32_t addr) {
  float2 v;
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(addr) : "memory");
  return v;
}

// ---- registers per thread of a warpgroup (needs __launch_bounds__(threads, 1)) ----
// Four 8 x 8 16-bit tiles stored transposed: register i of a lane is tile i's (row lane / 4, columns
// 2 (lane % 4), +1) pair (the mma accumulator layout, packed); lanes 8i .. 8i + 7 give the addresses of
// the 8 stored rows of tile i (16 bytes each), stored row n holding the tile's column n.
__device__ __forceinline__ void stmatrix_x4_trans(std::uint32_t addr, std::uint32_t r0, std::uint32_t r1,
                                                  std::uint32_t r2, std::uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
               "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

template <int kRegs> __device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs> __device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

// ---- named barriers (ids 1..15; 0 is __syncthreads) among `threads` threads ----
__device__ __forceinline__ void named_bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// ---- wgmma: warpgroup matrix multiply-accumulate, D(64 x N, f32) (+)= A(64 x 16) * B(16 x N) ----
// Ordering: wgmma_fence() before the first wgmma of a batch (after ordinary instructions touched
// its accumulators or A registers), wgmma_commit() closes a group, wgmma_wait<n>() waits until at
// most n groups are in flight. Until then the accumulators and A registers belong to the tensor
// cores: fence_operand() after the wait keeps the compiler from moving their uses above it.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int kInFlight> __device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kInFlight) : "memory");
}
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void fence_operand(std::uint32_t& r) {
  asm volatile("" : "+r"(r)::"memory");
}
template <typename T, int n> __device__ __forceinline__ void fence_operands(T (&r)[n]) {
#pragma unroll
  for (int i = 0; i < n; ++i) fence_operand(r[i]);
}

#endif  // FB_PTX_SM90A

// Shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format") for a 128-byte-swizzled
// operand: start address, leading and stride byte offsets (all in 16-byte units, 14 bits each),
// base offset 0 (tiles start 1024-byte aligned), layout type 1 = 128B swizzle (bits 62-63).
//   K-major (rows of 64 16-bit elements along K, 128 B each; 8-row atoms of 1024 B): SBO = the
//     distance between 8-row groups along M/N (1024 B); LBO unused (one k16 step stays inside a
//     128-byte row; stepping K = adding 32 B to the start address).
//   MN-major (rows of 64 elements along M/N; 8 K-rows per atom): LBO = the distance between
//     64-element blocks along M/N, SBO = the distance between 8-row groups along K.
inline constexpr std::uint32_t kSwizzle128Layout = 1;
__host__ __device__ constexpr std::uint64_t make_desc_sw128(std::uint32_t smem_addr,
                                                          std::uint32_t lbo_bytes,
                                                          std::uint32_t sbo_bytes) {
  return std::uint64_t((smem_addr >> 4) & 0x3FFFu) | (std::uint64_t((lbo_bytes >> 4) & 0x3FFFu) << 16) |
         (std::uint64_t((sbo_bytes >> 4) & 0x3FFFu) << 32) |
         (std::uint64_t(kSwizzle128Layout) << 62);
}

#if FB_PTX_SM90A
// One wgmma with A and B from shared memory, both K-major (Q K^T). accumulate == 0 ignores d's
// old contents. d holds the m64nN accumulator: warp w of the warpgroup owns rows 16w..16w+15;
// for n8 block j, d[4j], d[4j+1] are row 16w + lane/4, columns 8j + 2(lane%4) + {0,1}, and
// d[4j+2], d[4j+3] the same columns 8 rows lower (the mma.m16n8 C layout, repeated along N).
template <typename Elem, int N> struct WgmmaSS;
// One wgmma with A from registers (the m16n8k16 A fragment layout per warp: a[0] row r cols
// 2t..2t+1, a[1] row r+8, a[2] row r cols 2t+8.., a[3] row r+8 cols 2t+8..) and B from shared
// memory, MN-major (P V: V is stored [key][d], N = d contiguous; transpose-B = 1).
template <typename Elem, int N> struct WgmmaRS;

// One wgmma with A and B from shared memory, both MN-major (see FB_WGMMA_SS below).
template <typename Elem, int N> struct WgmmaSSTT;
// One wgmma with A K-major and B MN-major from shared memory.
template <typename Elem, int N> struct WgmmaSSBT;
// One wgmma with A MN-major and B K-major from shared memory.
template <typename Elem, int N> struct WgmmaSSAT;

// The specialisations are mechanical: one asm statement per (element type, N, operand form), the
// m64nN accumulator as N/2 "+f" operands. The macros below spell the operand lists once: FB_WG_D<n>
// the accumulator operands d[0..n), FB_WG_S<n> their "%0, ..., %n-1" in the asm string. The scalar
// operands follow the accumulators, so their numbers (n, n + 1, ...) are written at each use.
// ptx_sm90_tf32.cuh and ptx_sm90_fp8.cuh build their wrappers from the same FB_WGMMA_*_BODY.
#define FB_WG_DBLK(i)                                                                            \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]),      \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define FB_WG_D8 FB_WG_DBLK(0)
#define FB_WG_D16 FB_WG_D8, FB_WG_DBLK(8)
#define FB_WG_D32 FB_WG_D16, FB_WG_DBLK(16), FB_WG_DBLK(24)
#define FB_WG_D36 FB_WG_D32, "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35])
#define FB_WG_D40 FB_WG_D32, FB_WG_DBLK(32)
#define FB_WG_D64 FB_WG_D32, FB_WG_DBLK(32), FB_WG_DBLK(40), FB_WG_DBLK(48), FB_WG_DBLK(56)
#define FB_WG_D128                                                                               \
  FB_WG_D64, FB_WG_DBLK(64), FB_WG_DBLK(72), FB_WG_DBLK(80), FB_WG_DBLK(88), FB_WG_DBLK(96),       \
      FB_WG_DBLK(104), FB_WG_DBLK(112), FB_WG_DBLK(120)
#define FB_WG_SBLK_0 "%0, %1, %2, %3, %4, %5, %6, %7"
#define FB_WG_SBLK_1 "%8, %9, %10, %11, %12, %13, %14, %15"
#define FB_WG_SBLK_2 "%16, %17, %18, %19, %20, %21, %22, %23"
#define FB_WG_SBLK_3 "%24, %25, %26, %27, %28, %29, %30, %31"
#define FB_WG_SBLK_4 "%32, %33, %34, %35, %36, %37, %38, %39"
#define FB_WG_SBLK_5 "%40, %41, %42, %43, %44, %45, %46, %47"
#define FB_WG_SBLK_6 "%48, %49, %50, %51, %52, %53, %54, %55"
#define FB_WG_SBLK_7 "%56, %57, %58, %59, %60, %61, %62, %63"
#define FB_WG_SBLK_8 "%64, %65, %66, %67, %68, %69, %70, %71"
#define FB_WG_SBLK_9 "%72, %73, %74, %75, %76, %77, %78, %79"
#define FB_WG_SBLK_10 "%80, %81, %82, %83, %84, %85, %86, %87"
#define FB_WG_SBLK_11 "%88, %89, %90, %91, %92, %93, %94, %95"
#define FB_WG_SBLK_12 "%96, %97, %98, %99, %100, %101, %102, %103"
#define FB_WG_SBLK_13 "%104, %105, %106, %107, %108, %109, %110, %111"
#define FB_WG_SBLK_14 "%112, %113, %114, %115, %116, %117, %118, %119"
#define FB_WG_SBLK_15 "%120, %121, %122, %123, %124, %125, %126, %127"
#define FB_WG_S8 FB_WG_SBLK_0
#define FB_WG_S16 FB_WG_S8 ", " FB_WG_SBLK_1
#define FB_WG_S32 FB_WG_S16 ", " FB_WG_SBLK_2 ", " FB_WG_SBLK_3
#define FB_WG_S36 FB_WG_S32 ", %32, %33, %34, %35"
#define FB_WG_S40 FB_WG_S32 ", " FB_WG_SBLK_4
#define FB_WG_S64 FB_WG_S32 ", " FB_WG_SBLK_4 ", " FB_WG_SBLK_5 ", " FB_WG_SBLK_6 ", " FB_WG_SBLK_7
#define FB_WG_S128                                                                               \
  FB_WG_S64 ", " FB_WG_SBLK_8 ", " FB_WG_SBLK_9 ", " FB_WG_SBLK_10 ", " FB_WG_SBLK_11 ", "           \
      FB_WG_SBLK_12 ", " FB_WG_SBLK_13 ", " FB_WG_SBLK_14 ", " FB_WG_SBLK_15

// The body of a wrapper: run() with NREG accumulators. SHAPE is the instruction's shape and types
// ("m64n128k16.f32.bf16.bf16"), A and B the operand numbers of the A and B operands as written in the
// asm ("%64" or "{%64, %65, %66, %67}"), P the number of `accumulate`, IMM the immediates after the
// predicate (scale-a, scale-b and, for 16-bit types, the transpose bits).
// A and B from shared memory (descriptors).
#define FB_WGMMA_SS_BODY(NREG, SHAPE, A, B, P, IMM)                                                  \
  __device__ __forceinline__ static void run(float (&d)[NREG], std::uint64_t desc_a,               \
                                             std::uint64_t desc_b, std::uint32_t accumulate) {      \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " P ", 0;\n"                                    \
                 "wgmma.mma_async.sync.aligned." SHAPE " {" FB_WG_S##NREG "}, " A ", " B ", p, " IMM \
                 ";\n}\n"                                                                           \
                 : FB_WG_D##NREG                                                                    \
                 : "l"(desc_a), "l"(desc_b), "r"(accumulate));                                      \
  }
// A from registers (four 32-bit fragments), B from shared memory.
#define FB_WGMMA_RS_BODY(NREG, SHAPE, A, B, P, IMM)                                                  \
  __device__ __forceinline__ static void run(float (&d)[NREG], const std::uint32_t (&a)[4],        \
                                             std::uint64_t desc_b, std::uint32_t accumulate) {      \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " P ", 0;\n"                                    \
                 "wgmma.mma_async.sync.aligned." SHAPE " {" FB_WG_S##NREG "}, " A ", " B ", p, " IMM \
                 ";\n}\n"                                                                           \
                 : FB_WG_D##NREG                                                                    \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));       \
  }

// 16-bit types (k16): TA, TB are the transpose (MN-major) bits of A and B; A from registers is
// never transposed, B is (V stored [key][d]).
#define FB_WGMMA_SS(NAME, ELEM, T, N, NREG, A, B, P, TA, TB)                                        \
  template <> struct NAME<ELEM, N> {                                                               \
    FB_WGMMA_SS_BODY(NREG, "m64n" #N "k16.f32." T "." T, A, B, P, "1, 1, " #TA ", " #TB)          \
  };
#define FB_WGMMA_RS(ELEM, T, N, NREG, A, B, P)                                                       \
  template <> struct WgmmaRS<ELEM, N> {                                                            \
    FB_WGMMA_RS_BODY(NREG, "m64n" #N "k16.f32." T "." T, A, B, P, "1, 1, 1")                      \
  };

// Q K^T: N = kBc (flash_sm90_config.h: 128 at d = 64/128, 80 at d = 256); the backward's S^T, dP^T
// (N = kBlockM = 64) and, at d = 256, over half of a 64-query tile (N = 32).
FB_WGMMA_SS(WgmmaSS, __half, "f16", 32, 16, "%16", "%17", "%18", 0, 0)
FB_WGMMA_SS(WgmmaSS, __nv_bfloat16, "bf16", 32, 16, "%16", "%17", "%18", 0, 0)
FB_WGMMA_SS(WgmmaSS, __half, "f16", 64, 32, "%32", "%33", "%34", 0, 0)
FB_WGMMA_SS(WgmmaSS, __nv_bfloat16, "bf16", 64, 32, "%32", "%33", "%34", 0, 0)
FB_WGMMA_SS(WgmmaSS, __half, "f16", 80, 40, "%40", "%41", "%42", 0, 0)
FB_WGMMA_SS(WgmmaSS, __nv_bfloat16, "bf16", 80, 40, "%40", "%41", "%42", 0, 0)
FB_WGMMA_SS(WgmmaSS, __half, "f16", 128, 64, "%64", "%65", "%66", 0, 0)
FB_WGMMA_SS(WgmmaSS, __nv_bfloat16, "bf16", 128, 64, "%64", "%65", "%66", 0, 0)
// Both operands MN-major (transpose-A and transpose-B): A stored [k][m] with M contiguous, B [k][n]
// with N contiguous (the backward's dQ = dS K reads dS^T and K as they lie in shared memory).
FB_WGMMA_SS(WgmmaSSTT, __half, "f16", 64, 32, "%32", "%33", "%34", 1, 1)
FB_WGMMA_SS(WgmmaSSTT, __nv_bfloat16, "bf16", 64, 32, "%32", "%33", "%34", 1, 1)
// A K-major from shared memory, B MN-major (transpose-B): the d = 256 backward's dV += P^T dO and
// dK += dS^T Q with P^T, dS^T in shared memory, over half of d (N = 128; flash_sm90_bwd_traits.h).
FB_WGMMA_SS(WgmmaSSBT, __half, "f16", 128, 64, "%64", "%65", "%66", 0, 1)
FB_WGMMA_SS(WgmmaSSBT, __nv_bfloat16, "bf16", 128, 64, "%64", "%65", "%66", 0, 1)
// A MN-major (transpose-A), B K-major: the backward's dQ^T = K^T dS^T at 80 queries a step (A = K as it
// lies, B = dS query-major; flash_sm90_bwd_traits.h, kBwd128Q80).
// N = 32: the short last step of a head's queries (kBwd128Short).
FB_WGMMA_SS(WgmmaSSAT, __half, "f16", 80, 40, "%40", "%41", "%42", 1, 0)
FB_WGMMA_SS(WgmmaSSAT, __nv_bfloat16, "bf16", 80, 40, "%40", "%41", "%42", 1, 0)
FB_WGMMA_SS(WgmmaSSAT, __half, "f16", 32, 16, "%16", "%17", "%18", 1, 0)
FB_WGMMA_SS(WgmmaSSAT, __nv_bfloat16, "bf16", 32, 16, "%16", "%17", "%18", 1, 0)
// P V (and the backward's dV/dK from registers): N = d, up to 256 (the largest wgmma N).
FB_WGMMA_RS(__half, "f16", 64, 32, "{%32, %33, %34, %35}", "%36", "%37")
FB_WGMMA_RS(__nv_bfloat16, "bf16", 64, 32, "{%32, %33, %34, %35}", "%36", "%37")
// N = 72: d = 64's P V with a column block of ones after V, its last 8 columns P's row sums (the forward's
// kOnesSum, flash_sm90_traits.h).
FB_WGMMA_RS(__half, "f16", 72, 36, "{%36, %37, %38, %39}", "%40", "%41")
FB_WGMMA_RS(__nv_bfloat16, "bf16", 72, 36, "{%36, %37, %38, %39}", "%40", "%41")
FB_WGMMA_RS(__half, "f16", 128, 64, "{%64, %65, %66, %67}", "%68", "%69")
FB_WGMMA_RS(__nv_bfloat16, "bf16", 128, 64, "{%64, %65, %66, %67}", "%68", "%69")
FB_WGMMA_RS(__half, "f16", 256, 128, "{%128, %129, %130, %131}", "%132", "%133")
FB_WGMMA_RS(__nv_bfloat16, "bf16", 256, 128, "{%128, %129, %130, %131}", "%132", "%133")

#undef FB_WGMMA_SS
#undef FB_WGMMA_RS


template <typename Elem, int N>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], std::uint64_t desc_a,
                                         std::uint64_t desc_b, std::uint32_t accumulate) {
  WgmmaSS<Elem, N>::run(d, desc_a, desc_b, accumulate);
}
template <typename Elem, int N>
__device__ __forceinline__ void wgmma_ss_tt(float (&d)[N / 2], std::uint64_t desc_a,
                                            std::uint64_t desc_b, std::uint32_t accumulate) {
  WgmmaSSTT<Elem, N>::run(d, desc_a, desc_b, accumulate);
}
template <typename Elem, int N>
__device__ __forceinline__ void wgmma_ss_bt(float (&d)[N / 2], std::uint64_t desc_a,
                                            std::uint64_t desc_b, std::uint32_t accumulate) {
  WgmmaSSBT<Elem, N>::run(d, desc_a, desc_b, accumulate);
}
template <typename Elem, int N>
__device__ __forceinline__ void wgmma_ss_at(float (&d)[N / 2], std::uint64_t desc_a,
                                            std::uint64_t desc_b, std::uint32_t accumulate) {
  WgmmaSSAT<Elem, N>::run(d, desc_a, desc_b, accumulate);
}
template <typename Elem, int N>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const std::uint32_t (&a)[4],
                                         std::uint64_t desc_b, std::uint32_t accumulate) {
  WgmmaRS<Elem, N>::run(d, a, desc_b, accumulate);
}

#endif  // FB_PTX_SM90A

}  // namespace fb::cuda::ptx
