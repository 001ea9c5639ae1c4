// Small pieces of the online softmax shared by the tiled kernels.
//
// A row of a score tile is spread over a quad: the 4 consecutive lanes that hold one row of an
// m16n8 accumulator (tensor-core path), or the 4 lanes that split one query row (CUDA-core path).
// Row statistics are therefore reduced over lane ^ 1 and lane ^ 2.
#pragma once

#include <cmath>

namespace fb::cuda::flash {

// log2(e): the tensor-core path computes exp(x) as exp2(x * log2(e)) and folds log2(e) into the
// softmax scale once, on the host.
inline constexpr double kLog2e = 1.44269504088896340736;
// ln(2): turns a base-2 log-sum-exp back into the natural-log LSE the interface promises.
inline constexpr double kLn2 = 0.69314718055994530942;

constexpr unsigned kFullWarp = 0xffffffffu;

template <typename T> __device__ __forceinline__ T quad_max(T x) {
  x = fmax(x, __shfl_xor_sync(kFullWarp, x, 1));
  x = fmax(x, __shfl_xor_sync(kFullWarp, x, 2));
  return x;
}
template <typename T> __device__ __forceinline__ T quad_sum(T x) {
  x += __shfl_xor_sync(kFullWarp, x, 1);
  x += __shfl_xor_sync(kFullWarp, x, 2);
  return x;
}

// The subtrahend of a row's exponent once its running maximum is `m`: m itself, or 0 while every
// score so far was masked (m == -inf), so that exp(-inf - (-inf)) never makes a NaN.
template <typename T> __device__ __forceinline__ T safe_max(T m) {
  return m == -INFINITY ? T(0) : m;
}

}  // namespace fb::cuda::flash
