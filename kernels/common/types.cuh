// Dtype -> CUDA element type, its accumulator type, and conversions, shared by every kernel.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdexcept>

#include "attention.h"

namespace fb::cuda {

template <Dtype T> struct DtypeTraits;
template <> struct DtypeTraits<Dtype::fp64> { using elem = double;        using accum = double; };
template <> struct DtypeTraits<Dtype::fp32> { using elem = float;         using accum = float;  };
template <> struct DtypeTraits<Dtype::fp16> { using elem = __half;        using accum = float;  };
template <> struct DtypeTraits<Dtype::bf16> { using elem = __nv_bfloat16; using accum = float;  };

template <typename T> __host__ __device__ inline T from_float(float x);
template <> __host__ __device__ inline float from_float<float>(float x) { return x; }
template <> __host__ __device__ inline double from_float<double>(float x) { return x; }
template <> __host__ __device__ inline __half from_float<__half>(float x) { return __float2half_rn(x); }
template <> __host__ __device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

__host__ __device__ inline float to_float(float x) { return x; }
__host__ __device__ inline double to_double(double x) { return x; }
__host__ __device__ inline double to_double(float x) { return x; }
__host__ __device__ inline float to_float(__half x) { return __half2float(x); }
__host__ __device__ inline float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__host__ __device__ inline double to_double(__half x) { return __half2float(x); }
__host__ __device__ inline double to_double(__nv_bfloat16 x) { return __bfloat162float(x); }

// Runtime dtype -> compile-time: calls f(DtypeTraits<T>{}) with the matching traits.
template <typename F> void dispatch_dtype(Dtype t, F&& f) {
  switch (t) {
    case Dtype::fp64: f(DtypeTraits<Dtype::fp64>{}); return;
    case Dtype::fp32: f(DtypeTraits<Dtype::fp32>{}); return;
    case Dtype::fp16: f(DtypeTraits<Dtype::fp16>{}); return;
    case Dtype::bf16: f(DtypeTraits<Dtype::bf16>{}); return;
    case Dtype::fp8: break;
  }
  // fp8 has no element type here: the code that runs it (naive's fp8.cu, utils.cu's fp8 fill and
  // conversion) handles e4m3 codes itself, and every other kernel's unsupported() refuses it first.
  throw std::invalid_argument("cuda: fp8 reached a kernel without an fp8 path");
}

}  // namespace fb::cuda
