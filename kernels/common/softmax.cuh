// Small pieces of the online softmax shared by the tiled kernels (flash, flash-sm90, flash-decode).
//
// A row of a score tile is spread over a quad: the 4 consecutive lanes that hold one row of an
// m16n8 accumulator (tensor-core path), or the 4 lanes that split one query row (CUDA-core path).
// Row statistics are therefore reduced over lane ^ 1 and lane ^ 2.
#pragma once

#include <cmath>

#include "common/ptx.cuh"

namespace fb::cuda {

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

// One online-softmax step for one row of a warp's m16n8-accumulator score tile (mma.sync kernels):
// the thread's row half hf (row g + 8 hf of a 16-row block) holds 2 scores of each of the kNTiles n8
// blocks, its quad the rest. Updates the running max m (exp2 domain: scores times scale_log2) and the
// running sum l, turns the scores into p = exp2(s * scale_log2 - m) in place, and returns the factor
// the row's O accumulator must be scaled by (0 on the first tile with a visible key).
template <int kNTiles>
__device__ __forceinline__ float online_softmax_row(float (&s)[kNTiles][4], int hf, float& m, float& l,
                                                    float scale_log2) {
  float tile_max = -INFINITY;
#pragma unroll
  for (int nt = 0; nt < kNTiles; ++nt) tile_max = fmaxf(tile_max, fmaxf(s[nt][2 * hf], s[nt][2 * hf + 1]));
  tile_max = quad_max(tile_max);
  const float new_max = fmaxf(m, tile_max * scale_log2);
  const float sub = safe_max(new_max);
  const float alpha = ptx::exp2_approx(m - sub);
  m = new_max;
  float tile_sum = 0.f;
#pragma unroll
  for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
    for (int e = 2 * hf; e < 2 * hf + 2; ++e) {
      const float p = ptx::exp2_approx(fmaf(s[nt][e], scale_log2, -sub));
      s[nt][e] = p;
      tile_sum += p;
    }
  l = l * alpha + tile_sum;
  return alpha;
}

}  // namespace fb::cuda
