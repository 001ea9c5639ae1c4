// wgmma with FP8 e4m3 operands (m64nNk32, fp32 accumulators) for flash-sm90's fp8 forward.
//
// PTX ISA facts these wrappers rely on (wgmma.mma_async, .e4m3):
//   - the shape is m64nNk32: one instruction covers 32 values of K (32 bytes of a shared-memory row);
//   - A and B in shared memory must both be K-major: the transpose immediates exist only for 16-bit
//     types, so they are absent from the instruction (P V therefore reads V transposed: see
//     flash_sm90_fp8_kernel.cuh);
//   - A may come from registers: 4 x 32-bit per thread, 4 e4m3 values each, the lowest byte first.
//     Warp w of the warpgroup, g = lane / 4, t = lane % 4 (CUTLASS names this ALayout_64x32):
//       a[0] = row 16w + g,     k 4t .. 4t + 3        a[2] = row 16w + g,     k 16 + 4t .. 16 + 4t + 3
//       a[1] = row 16w + g + 8, k 4t .. 4t + 3        a[3] = row 16w + g + 8, k 16 + 4t .. 16 + 4t + 3
//     (tests/sm90_fp8_probe.cu checks it on the device).
// The accumulator layout is the one of ptx_sm90.cuh (per n8 block j: d[4j], d[4j+1] = row 16w + g,
// columns 8j + 2t, 8j + 2t + 1; d[4j+2], d[4j+3] the same columns at row + 8).
// The specialisations are one line each: FB_WGMMA_SS_BODY / FB_WGMMA_RS_BODY (ptx_sm90.cuh).
#pragma once

#include <cstdint>

#include "common/ptx_sm90.cuh"

namespace fb::cuda::ptx {

// Shared-memory matrix descriptor with an explicit swizzle (layout type, bits 62-63: 1 = 128-byte,
// 2 = 64-byte): K-major rows of `row_bytes` (128 or 64), 8-row atoms, SBO = 8 rows. LBO is unused
// for swizzled K-major operands whose K step stays inside one row (16, as make_desc_sw128 is given).
inline constexpr std::uint32_t kSwizzle64Layout = 2;
__host__ __device__ constexpr std::uint32_t swizzle_layout_of(int row_bytes) {
  return row_bytes == 128 ? kSwizzle128Layout : kSwizzle64Layout;
}
__host__ __device__ constexpr std::uint64_t make_desc_kmajor(std::uint32_t smem_addr, int row_bytes) {
  return std::uint64_t((smem_addr >> 4) & 0x3FFFu) | (std::uint64_t(16 >> 4) << 16) |
         (std::uint64_t(((8u * std::uint32_t(row_bytes)) >> 4) & 0x3FFFu) << 32) |
         (std::uint64_t(swizzle_layout_of(row_bytes)) << 62);
}

#if FB_PTX_SM90A

// Four floats -> four e4m3 codes in one register (x0 in the lowest byte), rounded to nearest even
// and saturated at +-448 (fp8.h's fp8_e4m3_from_float does the same on the host). cvt packs its
// first source into the upper byte of each pair.
__device__ __forceinline__ std::uint32_t pack_e4m3x4(float x0, float x1, float x2, float x3) {
  std::uint32_t r;
  asm("{\n.reg .b16 lo, hi;\n"
      "cvt.rn.satfinite.e4m3x2.f32 lo, %2, %1;\n"
      "cvt.rn.satfinite.e4m3x2.f32 hi, %4, %3;\n"
      "mov.b32 %0, {lo, hi};\n}\n"
      : "=r"(r)
      : "f"(x0), "f"(x1), "f"(x2), "f"(x3));
  return r;
}

// A and B from shared memory (both K-major descriptors): S = Q K^T.
template <int N> struct WgmmaSSFp8;
// A from registers (the layout above), B from shared memory (K-major descriptor): O += P V with V
// stored transposed.
template <int N> struct WgmmaRSFp8;

template <> struct WgmmaSSFp8<64> {
  FB_WGMMA_SS_BODY(32, "m64n64k32.f32.e4m3.e4m3", "%32", "%33", "%34", "1, 1")
};
template <> struct WgmmaSSFp8<128> {
  FB_WGMMA_SS_BODY(64, "m64n128k32.f32.e4m3.e4m3", "%64", "%65", "%66", "1, 1")
};
// N = 96 (96-key tiles with three consumer warpgroups at d = 128): 48 accumulators.
#define FB_WG_D48 FB_WG_D40, FB_WG_DBLK(40)
#define FB_WG_S48 FB_WG_S40 ", " FB_WG_SBLK_5
template <> struct WgmmaSSFp8<96> {
  FB_WGMMA_SS_BODY(48, "m64n96k32.f32.e4m3.e4m3", "%48", "%49", "%50", "1, 1")
};
// N = 192 (a K/V tile of 192 keys, Fp8FwdTraits): 96 accumulators; the operand lists extend
// ptx_sm90.cuh's (which stop at 64 and 128).
#define FB_WG_D96 FB_WG_D64, FB_WG_DBLK(64), FB_WG_DBLK(72), FB_WG_DBLK(80), FB_WG_DBLK(88)
#define FB_WG_S96 FB_WG_S64 ", " FB_WG_SBLK_8 ", " FB_WG_SBLK_9 ", " FB_WG_SBLK_10 ", " FB_WG_SBLK_11
template <> struct WgmmaSSFp8<192> {
  FB_WGMMA_SS_BODY(96, "m64n192k32.f32.e4m3.e4m3", "%96", "%97", "%98", "1, 1")
};
#define FB_WG_D112 FB_WG_D96, FB_WG_DBLK(96), FB_WG_DBLK(104)
#define FB_WG_S112 FB_WG_S96 ", " FB_WG_SBLK_12 ", " FB_WG_SBLK_13
template <> struct WgmmaSSFp8<224> {
  FB_WGMMA_SS_BODY(112, "m64n224k32.f32.e4m3.e4m3", "%112", "%113", "%114", "1, 1")
};
template <> struct WgmmaRSFp8<64> {
  FB_WGMMA_RS_BODY(32, "m64n64k32.f32.e4m3.e4m3", "{%32, %33, %34, %35}", "%36", "%37", "1, 1")
};
template <> struct WgmmaRSFp8<128> {
  FB_WGMMA_RS_BODY(64, "m64n128k32.f32.e4m3.e4m3", "{%64, %65, %66, %67}", "%68", "%69", "1, 1")
};

template <int N>
__device__ __forceinline__ void wgmma_ss_fp8(float (&d)[N / 2], std::uint64_t desc_a,
                                             std::uint64_t desc_b, std::uint32_t accumulate) {
  WgmmaSSFp8<N>::run(d, desc_a, desc_b, accumulate);
}
template <int N>
__device__ __forceinline__ void wgmma_rs_fp8(float (&d)[N / 2], const std::uint32_t (&a)[4],
                                             std::uint64_t desc_b, std::uint32_t accumulate) {
  WgmmaRSFp8<N>::run(d, a, desc_b, accumulate);
}

#endif  // FB_PTX_SM90A

}  // namespace fb::cuda::ptx
