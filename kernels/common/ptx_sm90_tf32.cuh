// wgmma with TF32 operands (m64nNk8, fp32 accumulators) for the Hopper kernels' fp32 paths.
//
// PTX ISA facts these wrappers rely on (wgmma.mma_async, .tf32):
//   - the shape is m64nNk8: one instruction covers 8 values of K (32 bytes of a 128-byte row);
//   - A and B in shared memory must both be K-major (the transpose immediates exist only for 16-bit
//     types, so they are absent from the instruction);
//   - A may come from registers: 4 x 32-bit per thread; warp w of the warpgroup, g = lane / 4,
//     t = lane % 4: a[0] = (row 16w + g, k t), a[1] = (row + 8, k t), a[2] = (row, k t + 4),
//     a[3] = (row + 8, k t + 4) (the mma.m16n8k8 TF32 A layout per warp; tests/sm90_tf32_probe.cu
//     checks it on the device);
//   - the tensor core reads the top 19 bits of each 32-bit element (sign, exponent, 10 mantissa
//     bits): feed it values already rounded to TF32 (cvt.rna.tf32.f32), or it truncates.
// The accumulator layout is the one of ptx_sm90.cuh (per n8 block j: d[4j], d[4j+1] = row 16w + g,
// columns 8j + 2t, 8j + 2t + 1; d[4j+2], d[4j+3] the same columns at row + 8).
// The specialisations are one line each: FB_WGMMA_SS_BODY / FB_WGMMA_RS_BODY (ptx_sm90.cuh).
#pragma once

#include <cstdint>

#include "common/ptx.cuh"
#include "common/ptx_sm90.cuh"

namespace fb::cuda::ptx {

#if FB_PTX_SM90A

// Shared-memory accesses of the tile preparation (shared-window addresses).
__device__ __forceinline__ float ld_shared_f32(std::uint32_t addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ float4 ld_shared_f32x4(std::uint32_t addr) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}
__device__ __forceinline__ void st_shared_u32x4(std::uint32_t addr, std::uint32_t a, std::uint32_t b,
                                                std::uint32_t c, std::uint32_t d) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(a), "r"(b), "r"(c),
               "r"(d)
               : "memory");
}

// x rounded to TF32 with cvt.rn (nearest, ties to even; sm_90+): one F2FP.TF32 in SASS, where
// cvt.rna (ptx::to_tf32, the sm_80 form) has no SASS instruction and expands to three (FSETP for
// Inf/NaN, IADD of 0x1000, LOP3 mask). The result is an fp32 bit pattern with the low 13 bits zero
// (CUTLASS's tfloat32_t conversion reads it so on sm_90). Ties to even differ from ties away only on
// exact ties and are unbiased, so the 3xTF32 error model (perf-notes, "flash fp32") is unchanged.
__device__ __forceinline__ std::uint32_t to_tf32_rn(float x) {
  std::uint32_t r;
  asm("cvt.rn.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

// The 3xTF32 split, rounding chosen at compile time: kRn = true cvt.rn (3 SASS instructions per
// element: F2FP, FADD, F2FP), false cvt.rna (ptx::split_tf32: 7).
template <bool kRn>
__device__ __forceinline__ void split_tf32_as(float x, std::uint32_t& hi, std::uint32_t& lo) {
  if constexpr (kRn) {
    hi = to_tf32_rn(x);
    lo = to_tf32_rn(x - __uint_as_float(hi));
  } else {
    split_tf32(x, hi, lo);
  }
}

// A from registers (the layout above), B from shared memory (K-major descriptor).
template <int N> struct WgmmaRSTf32;

template <> struct WgmmaRSTf32<16> {
  FB_WGMMA_RS_BODY(8, "m64n16k8.f32.tf32.tf32", "{%8, %9, %10, %11}", "%12", "%13", "1, 1")
};
template <> struct WgmmaRSTf32<32> {
  FB_WGMMA_RS_BODY(16, "m64n32k8.f32.tf32.tf32", "{%16, %17, %18, %19}", "%20", "%21", "1, 1")
};
template <> struct WgmmaRSTf32<64> {
  FB_WGMMA_RS_BODY(32, "m64n64k8.f32.tf32.tf32", "{%32, %33, %34, %35}", "%36", "%37", "1, 1")
};
template <> struct WgmmaRSTf32<128> {
  FB_WGMMA_RS_BODY(64, "m64n128k8.f32.tf32.tf32", "{%64, %65, %66, %67}", "%68", "%69", "1, 1")
};

template <int N>
__device__ __forceinline__ void wgmma_rs_tf32(float (&d)[N / 2], const std::uint32_t (&a)[4],
                                              std::uint64_t desc_b, std::uint32_t accumulate) {
  WgmmaRSTf32<N>::run(d, a, desc_b, accumulate);
}

#endif  // FB_PTX_SM90A

}  // namespace fb::cuda::ptx
