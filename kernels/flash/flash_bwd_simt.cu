// Flash backward main kernel on CUDA cores, for fp32 and fp64 (no TF32: every product and sum in the
// element type, exp() the accurate one).
//
// Same decomposition as the tensor-core kernel (flash_bwd_tc.cuh): one block per (batch, K/V head,
// tile of kBlockN keys), looping over the group's query heads and their query tiles; dK and dV in
// registers, dQ added into the accumulator with atomics. Per step, with a (kBlockN x kBlockM) tile
// pair in shared memory:
//   1. S^T = K Q^T, dP^T = V dO^T; P^T = exp(scale S^T - LSE); dS^T = P^T o (dP^T - D)  -> shared
//   2. dV += P^T dO, dK += dS^T Q                                                    (registers)
//   3. dQ += scale * dS K                                                            (atomics)
#include <cmath>
#include <cstdint>

#include "common/check.h"
#include "flash/flash_bwd_common.cuh"
#include "common/mask.h"

namespace fb::cuda::flash::bwd {

template <typename T, int kHeadDim_> struct SimtTraits {
  using Elem = T;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockN = 32;  // keys per block
  static constexpr int kBlockM = 32;  // queries per step
  static constexpr int kThreads = 256;
  static constexpr int kWarps = kThreads / 32;
  // Step 1: each thread computes kSPerThread entries of the (kBlockN x kBlockM) tile: one key row,
  // queries strided by kSQueryStride.
  static constexpr int kSQueryStride = kThreads / kBlockN;
  static constexpr int kSPerThread = kBlockM / kSQueryStride;
  // Steps 2-3: a warp's lanes cover 32 consecutive columns; rows strided by kWarps.
  static constexpr int kColsPerLane = kHeadDim / 32;
  static constexpr int kRowsKPerThread = kBlockN / kWarps;
  static constexpr int kRowsQPerThread = kBlockM / kWarps;
  // One element of padding per row: threads reading different rows at one column hit different banks.
  static constexpr int kRowStride = kHeadDim + 1;
  static constexpr int kTStride = kBlockM + 1;

  static constexpr int kSmemElems =
      2 * kBlockN * kRowStride + 2 * kBlockM * kRowStride + 2 * kBlockN * kTStride + 2 * kBlockM;
  static constexpr int kSmemBytes = kSmemElems * int(sizeof(T));

  static_assert(kThreads % kBlockN == 0 && kBlockM % kSQueryStride == 0, "step 1 thread map");
  static_assert(kHeadDim % 32 == 0, "head_dim: whole warps of columns");
  static_assert(kBlockN % kWarps == 0 && kBlockM % kWarps == 0, "steps 2-3 thread map");
  static_assert(kSeqPadMultiple % kBlockM == 0, "LSE/D tiles stay inside the padded rows");
};

namespace {

__device__ __forceinline__ float exp_acc(float x) { return expf(x); }
__device__ __forceinline__ double exp_acc(double x) { return exp(x); }

template <typename Tr>
__device__ __forceinline__ void load_tile(typename Tr::Elem* smem, const typename Tr::Elem* gmem,
                                          int rows, int valid_rows, int tid) {
  using T = typename Tr::Elem;
  for (int i = tid; i < rows * Tr::kHeadDim; i += Tr::kThreads) {
    const int r = i / Tr::kHeadDim;
    const int col = i % Tr::kHeadDim;
    smem[r * Tr::kRowStride + col] = r < valid_rows ? gmem[i] : T(0);
  }
}

template <typename Tr>
__global__ void __launch_bounds__(Tr::kThreads) bwd_main_simt_kernel(const MainArgs a) {
  using T = typename Tr::Elem;
  constexpr int D = Tr::kHeadDim;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sK = reinterpret_cast<T*>(smem_raw);     // (kBlockN, kRowStride)
  T* sV = sK + Tr::kBlockN * Tr::kRowStride;  // (kBlockN, kRowStride)
  T* sQ = sV + Tr::kBlockN * Tr::kRowStride;  // (kBlockM, kRowStride)
  T* sDo = sQ + Tr::kBlockM * Tr::kRowStride;  // (kBlockM, kRowStride)
  T* sP = sDo + Tr::kBlockM * Tr::kRowStride;  // (kBlockN, kTStride): P^T
  T* sDs = sP + Tr::kBlockN * Tr::kTStride;    // (kBlockN, kTStride): dS^T
  T* sLse = sDs + Tr::kBlockN * Tr::kTStride;  // (kBlockM)
  T* sD = sLse + Tr::kBlockM;                  // (kBlockM)

  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;

  // Block -> (batch, K/V head, K/V tile); see the tensor-core kernel for the order's reasons.
  const CausalMask mask = a.mask;
  const int seq_q = mask.seq_q, seq_k = mask.seq_k;
  const int n_tiles = (seq_k + Tr::kBlockN - 1) / Tr::kBlockN;
  const int n_bkv = a.batch * a.kv_heads;
  const int tile = mask.causal ? blockIdx.x / n_bkv : blockIdx.x % n_tiles;
  const int bkv = mask.causal ? blockIdx.x % n_bkv : blockIdx.x / n_tiles;
  const int b = bkv / a.kv_heads;
  const int hk = bkv % a.kv_heads;
  const int group = a.heads / a.kv_heads;
  const int n0 = tile * Tr::kBlockN;
  const int m_tiles = (seq_q + Tr::kBlockM - 1) / Tr::kBlockM;
  // Causal: from the query tile of the first row that sees key n0 (the last row sees every key, so
  // per_head >= 1).
  const int m_begin = mask.first_q_tile(n0, Tr::kBlockM);
  const int per_head = m_tiles - m_begin;
  const int m_rot = mask.causal ? 0 : (n0 / Tr::kBlockM) % per_head;

  const T scale = T(a.scale);
  const std::int64_t kv_off = (std::int64_t(bkv) * seq_k + n0) * D;
  load_tile<Tr>(sK, static_cast<const T*>(a.k) + kv_off, Tr::kBlockN, seq_k - n0, tid);
  load_tile<Tr>(sV, static_cast<const T*>(a.v) + kv_off, Tr::kBlockN, seq_k - n0, tid);

  T acc_dk[Tr::kRowsKPerThread][Tr::kColsPerLane] = {};
  T acc_dv[Tr::kRowsKPerThread][Tr::kColsPerLane] = {};

  for (int it = 0; it < group * per_head; ++it) {
    const std::int64_t bh = std::int64_t(b) * a.heads + hk * group + it / per_head;
    const int m0 = (m_begin + (m_rot + it % per_head) % per_head) * Tr::kBlockM;
    const std::int64_t q_off = (bh * seq_q + m0) * D;

    __syncthreads();  // the previous step's readers of sQ, sDo, sP, sDs are done
    load_tile<Tr>(sQ, static_cast<const T*>(a.q) + q_off, Tr::kBlockM, seq_q - m0, tid);
    load_tile<Tr>(sDo, static_cast<const T*>(a.dout) + q_off, Tr::kBlockM, seq_q - m0, tid);
    if (tid < Tr::kBlockM) {
      sLse[tid] = static_cast<const T*>(a.lse)[bh * a.seq_pad + m0 + tid];
      sD[tid] = static_cast<const T*>(a.d)[bh * a.seq_pad + m0 + tid];
    }
    __syncthreads();

    // 1. One key row per thread, kSPerThread queries. Padded query rows and rows with no visible key
    //    have LSE = +inf -> P = 0.
    {
      const bool need_mask = mask.tile_needs_mask(m0, n0, Tr::kBlockN);
      const int kr = tid / Tr::kSQueryStride;
      const int qc = tid % Tr::kSQueryStride;
      T s[Tr::kSPerThread] = {}, dp[Tr::kSPerThread] = {};
      for (int d = 0; d < D; ++d) {
        const T kd = sK[kr * Tr::kRowStride + d];
        const T vd = sV[kr * Tr::kRowStride + d];
#pragma unroll
        for (int i = 0; i < Tr::kSPerThread; ++i) {
          const int qr = qc + i * Tr::kSQueryStride;
          s[i] += kd * sQ[qr * Tr::kRowStride + d];
          dp[i] += vd * sDo[qr * Tr::kRowStride + d];
        }
      }
#pragma unroll
      for (int i = 0; i < Tr::kSPerThread; ++i) {
        const int qr = qc + i * Tr::kSQueryStride;
        const int key = n0 + kr;
        const bool masked = need_mask && !mask.visible(m0 + qr, key);
        const T p = masked ? T(0) : exp_acc(scale * s[i] - sLse[qr]);
        sP[kr * Tr::kTStride + qr] = p;
        sDs[kr * Tr::kTStride + qr] = p * (dp[i] - sD[qr]);
      }
    }
    __syncthreads();

    // 2. dV += P^T dO, dK += dS^T Q: rows warp + kWarps*i, columns lane + 32*j.
    for (int qr = 0; qr < Tr::kBlockM; ++qr) {
      T o[Tr::kColsPerLane], qv[Tr::kColsPerLane];
#pragma unroll
      for (int j = 0; j < Tr::kColsPerLane; ++j) {
        o[j] = sDo[qr * Tr::kRowStride + lane + 32 * j];
        qv[j] = sQ[qr * Tr::kRowStride + lane + 32 * j];
      }
#pragma unroll
      for (int i = 0; i < Tr::kRowsKPerThread; ++i) {
        const int kr = warp + Tr::kWarps * i;
        const T p = sP[kr * Tr::kTStride + qr];
        const T ds = sDs[kr * Tr::kTStride + qr];
#pragma unroll
        for (int j = 0; j < Tr::kColsPerLane; ++j) {
          acc_dv[i][j] += p * o[j];
          acc_dk[i][j] += ds * qv[j];
        }
      }
    }

    // 3. dQ += scale * dS K: rows warp + kWarps*i, columns lane + 32*j, coalesced atomics.
    {
      T acc_dq[Tr::kRowsQPerThread][Tr::kColsPerLane] = {};
      for (int kr = 0; kr < Tr::kBlockN; ++kr) {
        T kv[Tr::kColsPerLane];
#pragma unroll
        for (int j = 0; j < Tr::kColsPerLane; ++j) kv[j] = sK[kr * Tr::kRowStride + lane + 32 * j];
#pragma unroll
        for (int i = 0; i < Tr::kRowsQPerThread; ++i) {
          const T ds = sDs[kr * Tr::kTStride + warp + Tr::kWarps * i];
#pragma unroll
          for (int j = 0; j < Tr::kColsPerLane; ++j) acc_dq[i][j] += ds * kv[j];
        }
      }
      T* dq = static_cast<T*>(a.dq_acc) + q_off;
#pragma unroll
      for (int i = 0; i < Tr::kRowsQPerThread; ++i) {
        const int qr = warp + Tr::kWarps * i;
        if (m0 + qr < seq_q) {
#pragma unroll
          for (int j = 0; j < Tr::kColsPerLane; ++j)
            atomicAdd(dq + qr * D + lane + 32 * j, scale * acc_dq[i][j]);
        }
      }
    }
  }

  T* dk = static_cast<T*>(a.dk) + kv_off;
  T* dv = static_cast<T*>(a.dv) + kv_off;
#pragma unroll
  for (int i = 0; i < Tr::kRowsKPerThread; ++i) {
    const int kr = warp + Tr::kWarps * i;
    if (n0 + kr < seq_k) {
#pragma unroll
      for (int j = 0; j < Tr::kColsPerLane; ++j) {
        dk[kr * D + lane + 32 * j] = scale * acc_dk[i][j];
        dv[kr * D + lane + 32 * j] = acc_dv[i][j];
      }
    }
  }
}

}  // namespace

template <typename Elem, int kHeadDim> int main_simt_key_tile() {
  return SimtTraits<Elem, kHeadDim>::kBlockN;
}

template <typename Elem, int kHeadDim> int main_simt_smem_bytes() {
  return SimtTraits<Elem, kHeadDim>::kSmemBytes;
}

template <typename Elem, int kHeadDim> void run_main_simt(const MainArgs& a, cudaStream_t stream) {
  using Tr = SimtTraits<Elem, kHeadDim>;
  const void* kernel = reinterpret_cast<const void*>(&bwd_main_simt_kernel<Tr>);
  set_smem_limit(kernel, Tr::kSmemBytes);
  const std::int64_t blocks =
      std::int64_t((a.mask.seq_k + Tr::kBlockN - 1) / Tr::kBlockN) * a.batch * a.kv_heads;
  bwd_main_simt_kernel<Tr><<<dim3(unsigned(blocks)), Tr::kThreads, Tr::kSmemBytes, stream>>>(a);
  FB_CUDA_CHECK_LAUNCH();
}

template void run_main_simt<float, 32>(const MainArgs&, cudaStream_t);
template void run_main_simt<float, 64>(const MainArgs&, cudaStream_t);
template void run_main_simt<float, 128>(const MainArgs&, cudaStream_t);
template void run_main_simt<double, 32>(const MainArgs&, cudaStream_t);
template void run_main_simt<double, 64>(const MainArgs&, cudaStream_t);
template void run_main_simt<double, 128>(const MainArgs&, cudaStream_t);
template int main_simt_smem_bytes<float, 32>();
template int main_simt_smem_bytes<float, 64>();
template int main_simt_smem_bytes<float, 128>();
template int main_simt_smem_bytes<double, 32>();
template int main_simt_smem_bytes<double, 64>();
template int main_simt_smem_bytes<double, 128>();
template int main_simt_key_tile<float, 32>();
template int main_simt_key_tile<float, 64>();
template int main_simt_key_tile<float, 128>();
template int main_simt_key_tile<double, 32>();
template int main_simt_key_tile<double, 64>();
template int main_simt_key_tile<double, 128>();

}  // namespace fb::cuda::flash::bwd
