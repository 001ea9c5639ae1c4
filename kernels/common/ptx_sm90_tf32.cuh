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
// The specialisations are mechanical (generated operand lists: N/2 accumulator registers).
#pragma once

#include <cstdint>

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

// A from registers (the layout above), B from shared memory (K-major descriptor).
template <int N> struct WgmmaRSTf32;
// A and B from shared memory (both K-major descriptors).
template <int N> struct WgmmaSSTf32;

template <> struct WgmmaRSTf32<16> {
  __device__ __forceinline__ static void run(float (&d)[8], const std::uint32_t (&a)[4],
                                             std::uint64_t desc_b, std::uint32_t accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 {"
        "%0, %1, %2, %3, %4, %5, %6, %7"
        "}, {%8, %9, %10, %11}, %12, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
  }
};
template <> struct WgmmaRSTf32<32> {
  __device__ __forceinline__ static void run(float (&d)[16], const std::uint32_t (&a)[4],
                                             std::uint64_t desc_b, std::uint32_t accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
        "}, {%16, %17, %18, %19}, %20, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
  }
};
template <> struct WgmmaRSTf32<64> {
  __device__ __forceinline__ static void run(float (&d)[32], const std::uint32_t (&a)[4],
                                             std::uint64_t desc_b, std::uint32_t accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
  }
};
template <> struct WgmmaRSTf32<128> {
  __device__ __forceinline__ static void run(float (&d)[64], const std::uint32_t (&a)[4],
                                             std::uint64_t desc_b, std::uint32_t accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
  }
};
template <> struct WgmmaSSTf32<64> {
  __device__ __forceinline__ static void run(float (&d)[32], std::uint64_t desc_a,
                                             std::uint64_t desc_b, std::uint32_t accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, %32, %33, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(desc_a), "l"(desc_b), "r"(accumulate));
  }
};

template <int N>
__device__ __forceinline__ void wgmma_rs_tf32(float (&d)[N / 2], const std::uint32_t (&a)[4],
                                              std::uint64_t desc_b, std::uint32_t accumulate) {
  WgmmaRSTf32<N>::run(d, a, desc_b, accumulate);
}
template <int N>
__device__ __forceinline__ void wgmma_ss_tf32(float (&d)[N / 2], std::uint64_t desc_a,
                                              std::uint64_t desc_b, std::uint32_t accumulate) {
  WgmmaSSTf32<N>::run(d, desc_a, desc_b, accumulate);
}

#endif  // FB_PTX_SM90A

}  // namespace fb::cuda::ptx
