// CUDA-core FlashAttention forward for fp32 and fp64: exact arithmetic (no TF32, accurate exp),
// the same tiling and online softmax as the tensor-core kernel, in plain FMAs.
//
// One block per (batch * head, query tile of kBr rows); each query row belongs to a quad of 4
// lanes. Per KV tile (kBc keys, staged in shared memory; K transposed so that a lane's keys are
// adjacent vectors for one d):
//   S = scale * Q K^T   each lane kKeysPerThread keys of its row
//   online softmax       row max/sum reduced over the quad
//   O += P V             P broadcast within the quad by shuffles; each lane kColsPerThread of O
#pragma once

#include <cmath>
#include <cstdint>

#include <cuda_runtime.h>

#include "common/check.h"
#include "flash/flash_fwd_args.cuh"
#include "flash/flash_fwd_traits.h"

namespace fb::cuda::flash {

// 16-byte vector of float or double.
template <typename T> struct Vec16;
template <> struct Vec16<float> { using type = float4; };
template <> struct Vec16<double> { using type = double2; };

template <typename Tr>
__global__ void __launch_bounds__(Tr::kThreads)
    flash_fwd_simt_kernel(const FwdArgs<typename Tr::Elem, typename Tr::Elem> a) {
  using T = typename Tr::Elem;
  using V16 = typename Vec16<T>::type;
  constexpr int D = Tr::kHeadDim;
  constexpr int kVec = Tr::kVec;
  constexpr int kQuad = Tr::kLanesPerRow;
  const T kNegInf = -INFINITY;

  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int row = tid / kQuad;  // query row within the tile
  const int sub = tid % kQuad;  // position in the quad
  const int quad_lane0 = lane - sub;

  // Tile order (common/tile_order.h): plane groups sized for L2, longest causal tiles first.
  const PlaneTile tile = grouped_tile(int(blockIdx.x), a.planes, a.q_tiles, a.plane_group);
  const int q_tile = tile.q_tile;
  const int q0 = q_tile * Tr::kBr;
  const int seq_q = a.mask.seq_q, seq_k = a.mask.seq_k;
  const HeadOffsets off = head_offsets(a, tile.bh, D);
  const T* gQ = a.q + off.q + std::int64_t(q0) * D;
  const T* gK = a.k + off.kv;
  const T* gV = a.v + off.kv;

  T* sQ = reinterpret_cast<T*>(fwd_smem());  // (kBr, D), row stride kQStride
  T* sKt = sQ + Tr::kBr * Tr::kQStride;       // (D, kBc), row stride kKtStride
  T* sV = sKt + D * Tr::kKtStride;            // (kBc, D)

  for (int e = tid; e < Tr::kBr * D; e += Tr::kThreads) {
    const int r = e / D, c = e % D;
    sQ[r * Tr::kQStride + c] = q0 + r < seq_q ? gQ[std::int64_t(r) * D + c] : T(0);
  }

  T acc_o[Tr::kColsPerThread];  // columns (sub + kQuad * cc) * kVec + w of this row
#pragma unroll
  for (int i = 0; i < Tr::kColsPerThread; ++i) acc_o[i] = T(0);
  T row_max = kNegInf;  // of scale * s, shared by the quad
  T row_sum = T(0);     // this lane's partial sum, reduced over the quad at the end

  const int n_tiles = a.mask.kv_tiles(q0, Tr::kBr, Tr::kBc);
  for (int j = 0; j < n_tiles; ++j) {
    const int k0 = j * Tr::kBc;
    __syncthreads();  // everyone is done with the previous tile (and sQ is written)
    for (int e = tid; e < Tr::kBc * D; e += Tr::kThreads) {
      const int key = e / D, c = e % D;
      const bool valid = k0 + key < seq_k;
      const std::int64_t src = std::int64_t(k0 + key) * D + c;
      sKt[c * Tr::kKtStride + key] = valid ? gK[src] : T(0);
      sV[key * Tr::kVStride + c] = valid ? gV[src] : T(0);
    }
    __syncthreads();

    // ---- S = scale * Q K^T for keys (sub + kQuad * kc) * kVec + w ----
    T s[Tr::kKeysPerThread];
#pragma unroll
    for (int i = 0; i < Tr::kKeysPerThread; ++i) s[i] = T(0);
#pragma unroll 4
    for (int d = 0; d < D; ++d) {
      const T qd = sQ[row * Tr::kQStride + d];
#pragma unroll
      for (int kc = 0; kc < Tr::kKeyChunks; ++kc) {
        const V16 kv =
            *reinterpret_cast<const V16*>(sKt + d * Tr::kKtStride + (sub + kQuad * kc) * kVec);
        const T* kvs = reinterpret_cast<const T*>(&kv);
#pragma unroll
        for (int w = 0; w < kVec; ++w) s[kc * kVec + w] = fma(qd, kvs[w], s[kc * kVec + w]);
      }
    }
    const bool need_mask = a.mask.tile_needs_mask(q0, k0, Tr::kBc);
#pragma unroll
    for (int kc = 0; kc < Tr::kKeyChunks; ++kc)
#pragma unroll
      for (int w = 0; w < kVec; ++w) {
        T& x = s[kc * kVec + w];
        x *= a.scale;
        if (need_mask && !a.mask.visible(q0 + row, k0 + (sub + kQuad * kc) * kVec + w))
          x = kNegInf;
      }

    // ---- online softmax ----
    T tile_max = kNegInf;
#pragma unroll
    for (int i = 0; i < Tr::kKeysPerThread; ++i) tile_max = fmax(tile_max, s[i]);
    tile_max = quad_max(tile_max);
    const T new_max = fmax(row_max, tile_max);
    const T subtrahend = safe_max(new_max);
    const T alpha = exp(row_max - subtrahend);
    row_max = new_max;
    T tile_sum = T(0);
#pragma unroll
    for (int i = 0; i < Tr::kKeysPerThread; ++i) {
      s[i] = exp(s[i] - subtrahend);
      tile_sum += s[i];
    }
    row_sum = row_sum * alpha + tile_sum;
#pragma unroll
    for (int i = 0; i < Tr::kColsPerThread; ++i) acc_o[i] *= alpha;

    // ---- O += P V: key (owner + kQuad * kc) * kVec + w lives in lane `owner` of the quad ----
#pragma unroll
    for (int kc = 0; kc < Tr::kKeyChunks; ++kc)
#pragma unroll
      for (int owner = 0; owner < kQuad; ++owner)
#pragma unroll
        for (int w = 0; w < kVec; ++w) {
          const T p = __shfl_sync(kFullWarp, s[kc * kVec + w], quad_lane0 + owner);
          const int key = (owner + kQuad * kc) * kVec + w;
#pragma unroll
          for (int cc = 0; cc < Tr::kColChunks; ++cc) {
            const V16 vv =
                *reinterpret_cast<const V16*>(sV + key * Tr::kVStride + (sub + kQuad * cc) * kVec);
            const T* vvs = reinterpret_cast<const T*>(&vv);
#pragma unroll
            for (int x = 0; x < kVec; ++x)
              acc_o[cc * kVec + x] = fma(p, vvs[x], acc_o[cc * kVec + x]);
          }
        }
  }

  // ---- epilogue: O /= sum (a true division: exact to the last bit for the fp64 check) ----
  const T sum = quad_sum(row_sum);
  if (q0 + row < seq_q) {
    T* gO = a.o + off.q + std::int64_t(q0 + row) * D;
    // A row that sees no key (causal, seq_q > seq_k) has sum 0: O = 0 and LSE = -inf (attention.h).
    const bool empty = sum == T(0);
#pragma unroll
    for (int cc = 0; cc < Tr::kColChunks; ++cc) {
      V16 out;
      T* outs = reinterpret_cast<T*>(&out);
#pragma unroll
      for (int x = 0; x < kVec; ++x) outs[x] = empty ? T(0) : acc_o[cc * kVec + x] / sum;
      *reinterpret_cast<V16*>(gO + (sub + kQuad * cc) * kVec) = out;
    }
    if (sub == 0) a.lse[off.row + q0 + row] = empty ? kNegInf : row_max + log(sum);
  }
}

// Host side: one launch of the CUDA-core forward with traits Tr on `stream`.
template <typename Tr>
void launch_fwd_simt(const AttentionParams& p, cudaStream_t stream) {
  using T = typename Tr::Elem;
  auto args = make_fwd_args<T, T>(p);
  const auto kernel = flash_fwd_simt_kernel<Tr>;
  if (Tr::kSmemBytes > std::size_t(kDefaultDynamicSmemBytes)) {
    FB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       int(Tr::kSmemBytes)));
  }
  const unsigned blocks = set_tile_order(args, p, Tr::kBr);
  kernel<<<blocks, Tr::kThreads, Tr::kSmemBytes, stream>>>(args);
  FB_CUDA_CHECK_LAUNCH();
}

}  // namespace fb::cuda::flash
