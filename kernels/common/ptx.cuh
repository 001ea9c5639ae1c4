// Thin inline-PTX wrappers for the sm_80+ tiled kernels (flash forward and backward).
//
// Each wrapper is one instruction; the fragment layouts are those of the PTX ISA
// ("Matrix Fragments for mma.m16n8k16"). They compile on sm_80 and newer, sm_90/sm_90a included.
//
// Conventions used by every wrapper here:
//  - shared-memory addresses are generic pointers; the wrappers convert them to the .shared window;
//  - 16-bit pairs travel packed in one std::uint32_t, the low half holding the lower column index;
//  - accumulators are float[4] in the m16n8 C layout: thread t (lane) holds rows (t/4) and (t/4 + 8),
//    columns 2*(t%4) and 2*(t%4)+1, as {c0,c1} (row t/4) and {c2,c3} (row t/4+8).
//
// API stability: other kernels include this header; add wrappers, do not change existing ones.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace fb::cuda::ptx {

// Shared-window address of a generic pointer into shared memory.
__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// ---- tensor-core matrix multiply-accumulate: D(16x8,f32) += A(16x16) * B(16x8) ----
// a: 4 registers (A row-major fragment), b: 2 registers (B "col" fragment, i.e. K-major), d: in/out.
__device__ __forceinline__ void mma_m16n8k16_f16(float (&d)[4], const std::uint32_t (&a)[4],
                                                 const std::uint32_t (&b)[2]) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const std::uint32_t (&a)[4],
                                                  const std::uint32_t (&b)[2]) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Element-type-generic form: Elem is __half or __nv_bfloat16.
template <typename Elem> struct Mma;
template <> struct Mma<__half> {
  __device__ __forceinline__ static void run(float (&d)[4], const std::uint32_t (&a)[4],
                                             const std::uint32_t (&b)[2]) {
    mma_m16n8k16_f16(d, a, b);
  }
};
template <> struct Mma<__nv_bfloat16> {
  __device__ __forceinline__ static void run(float (&d)[4], const std::uint32_t (&a)[4],
                                             const std::uint32_t (&b)[2]) {
    mma_m16n8k16_bf16(d, a, b);
  }
};
template <typename Elem>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4],
                                             const std::uint32_t (&b)[2]) {
  Mma<Elem>::run(d, a, b);
}

// ---- TF32 tensor cores: D(16x8,f32) += A(16x8) * B(8x8), mma.sync m16n8k8 (sm_80+) ----
// Fragments (PTX ISA "Matrix Fragments for mma.m16n8k8", .tf32), g = lane / 4, t = lane % 4:
//   A: a0 (row g, col t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4)
//   B: b0 (row/k t, col/n g), b1 (t + 4, g)
//   C: the m16n8 layout above (rows g, g + 8; columns 2t, 2t + 1).
// ldmatrix of fp32 data viewed as b16 pairs hands lane l the fp32 element (row l / 4, col l % 4) of
// an 8x4 block: exactly the A layout (and the B layout of a row-major [n][k] tile), so A and B load
// as in the 16-bit kernels, with 4-column instead of 8-column blocks.
__device__ __forceinline__ void mma_m16n8k8_tf32(float (&d)[4], const std::uint32_t (&a)[4],
                                                 const std::uint32_t (&b)[2]) {
  asm(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// x rounded to TF32 (10 mantissa bits, round to nearest, ties away), as the 32-bit pattern the
// mma takes (low 13 bits zero). Without it the tensor core would truncate.
__device__ __forceinline__ std::uint32_t to_tf32(float x) {
  std::uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

// The 3xTF32 split: hi = tf32(x), lo = tf32(x - hi). x - hi is exact in fp32, so hi + lo carries 22
// of x's 24 significant bits (the rest is below what the products' fp32 accumulation keeps).
__device__ __forceinline__ void split_tf32(float x, std::uint32_t& hi, std::uint32_t& lo) {
  hi = to_tf32(x);
  lo = to_tf32(x - __uint_as_float(hi));
}

// ---- ldmatrix: 8x8 16-bit tiles from shared memory into fragments ----
// Lanes 8*i .. 8*i+7 give the 8 row addresses (16 bytes each) of tile i; tile i lands in r[i].
// .trans transposes each 8x8 tile on the way (for the B operand from a row-major [k][n] tile).
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem_row)));
}
__device__ __forceinline__ void ldmatrix_x2(std::uint32_t (&r)[2], const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr(smem_row)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem_row)));
}
__device__ __forceinline__ void ldmatrix_x2_trans(std::uint32_t (&r)[2], const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr(smem_row)));
}

// Same, from a shared-window address (smem_addr): lets the compiler fold constant tile offsets
// into the instruction's immediate instead of keeping one register per address.
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t saddr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(saddr));
}
__device__ __forceinline__ void ldmatrix_x2(std::uint32_t (&r)[2], std::uint32_t saddr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(saddr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t saddr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(saddr));
}
__device__ __forceinline__ void ldmatrix_x2_trans(std::uint32_t (&r)[2], std::uint32_t saddr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(saddr));
}

// ---- cp.async: 16-byte global -> shared copies that bypass registers (L1 bypassed: .cg) ----
__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(smem_dst)),
               "l"(gmem_src));
}
// Copies 16 bytes when `valid`, else writes 16 zero bytes (src-size 0: nothing is read, so
// gmem_src may point anywhere mapped-or-not; pass a valid base pointer anyway).
__device__ __forceinline__ void cp_async_16_zfill(void* smem_dst, const void* gmem_src, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem_dst)),
               "l"(gmem_src), "r"(src_bytes));
}
// Closes the group of cp.async issued since the last commit.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most `Pending` committed groups are still in flight (this thread's copies only:
// follow with __syncthreads() before other threads read the data).
template <int Pending> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
}

// ---- fast math ----
// 2^x with the hardware approximation (ex2.approx.ftz: ~2 ulp, -inf -> +0, flushes denormals).
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// 1 / x and log2(x) on the MUFU, for the forward epilogues' row sums (flash's kFwdLeanEpi, flash-sm90's kOptFastLse):
// rcp.approx (1 ulp) without the IEEE divide's refinement and its slow-path call, lg2.approx (absolute error about
// 2^-22 for x in [0.5, 2], a few ulps of the result elsewhere) instead of log2f's polynomial. ftz: the epilogues pass
// row sums, 0 or >= 1, never denormal.
__device__ __forceinline__ float rcp_approx(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float lg2_approx(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// ---- packing two floats into a 16-bit pair (lo = first argument) ----
__device__ __forceinline__ std::uint32_t pack_half2(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<std::uint32_t*>(&h);
}
__device__ __forceinline__ std::uint32_t pack_bf162(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<std::uint32_t*>(&h);
}
template <typename Elem> __device__ __forceinline__ std::uint32_t pack2(float lo, float hi);
template <> __device__ __forceinline__ std::uint32_t pack2<__half>(float lo, float hi) {
  return pack_half2(lo, hi);
}
template <> __device__ __forceinline__ std::uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  return pack_bf162(lo, hi);
}

}  // namespace fb::cuda::ptx
