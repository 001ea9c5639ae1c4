// Device side of the TF32 wgmma unit probe (tests/test_gpu_sm90_tf32.cpp): one warpgroup runs the
// fp32 forward kernel's own pieces on one tile: the K split, the V transpose + key permutation +
// split, S = Q K^T from register Q fragments, and O = P V with P taken from the accumulator layout.
// Test-only code: nothing here is registered as a kernel.
#include <cuda_runtime.h>

#include "common/check.h"
#include "flash_sm90/flash_sm90_tf32_kernel.cuh"
#include "sm90_tf32_probe.h"

namespace fb::test {
namespace {

using namespace fb::cuda::flash_sm90;
namespace ptx = fb::cuda::ptx;

__device__ int g_probe_has_code = FB_PTX_SM90A;

template <typename Tr>
__global__ void __launch_bounds__(128, 1)
    probe_kernel(const float* q, const float* k, const float* v, const float* p, float* s_out,
                 float* o_out) {
#if FB_PTX_SM90A
  constexpr int D = Tr::kHeadDim, Bc = Tr::kBc, Rows = Tr::kWgRows;
  extern __shared__ __align__(16) unsigned char probe_smem[];
  const std::uint32_t base =
      (ptx::smem_addr(probe_smem) + Tr::kAtomBytes - 1) & ~std::uint32_t(Tr::kAtomBytes - 1);
  const Tf32Smem<Tr> sm{base};
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  auto put = [](std::uint32_t tile, int chunk_bytes, int r, int c, float x) {
    ptx::st_shared_u32(tile + std::uint32_t((c / Tr::kChunkElems) * chunk_bytes) +
                           sw128_offset(r, c % Tr::kChunkElems),
                       __float_as_uint(x));
  };
  // Tiles into shared memory in the layout TMA writes (128-byte swizzle, 32-float column chunks).
  for (int i = tid; i < Rows * D; i += 128) put(sm.q(), Tr::kQChunkBytes, i / D, i % D, q[i]);
  for (int i = tid; i < Bc * D; i += 128) {
    put(sm.k_hi(0), Tr::kKVChunkBytes, i / D, i % D, k[i]);
    put(sm.v_raw(0), Tr::kKVChunkBytes, i / D, i % D, v[i]);
  }
  __syncthreads();
  for (int c = 0; c < Tr::kChunks; ++c)
    split_k_chunk<Tr>(sm.k_hi(0) + c * Tr::kKVChunkBytes, sm.k_lo(0) + c * Tr::kKVChunkBytes, tid);
  transpose_split_v_tile<Tr>(sm.v_raw(0), sm.vt_hi(0), sm.vt_lo(0), tid);
  ptx::fence_proxy_async_smem();
  __syncthreads();

  const int row = warp * 16 + lane / 4, col = 2 * (lane % 4);
  float sa[Tr::kSRegs], sb[Tr::kSRegs];
  gemm_qk<Tr>(sa, sb, sm.q(), sm.k_hi(0), sm.k_lo(0), warp, lane, [](int) {}, [] {});
  // Accumulator layout: register i = row + 8 ((i / 2) % 2), column 8 (i / 4) + col + i % 2.
  for (int i = 0; i < Tr::kSRegs; ++i)
    s_out[(row + 8 * ((i / 2) % 2)) * Bc + 8 * (i / 4) + col + i % 2] = tf32_s_value<Tr>(sa, sb, i);
  float pr[Tr::kSRegs];
  for (int i = 0; i < Tr::kSRegs; ++i) pr[i] = p[(row + 8 * ((i / 2) % 2)) * Bc + 8 * (i / 4) + col + i % 2];
  std::uint32_t ph[Tr::kSRegs], pl[Tr::kSRegs];
  for (int i = 0; i < Tr::kSRegs; ++i) ptx::split_tf32_as<Tr::kRn>(pr[i], ph[i], pl[i]);
  float ot[Tr::kORegs];
  gemm_pv<Tr>(ot, ph, pl, sm.vt_hi(0), sm.vt_lo(0));
  for (int i = 0; i < Tr::kORegs; ++i)
    o_out[(row + 8 * ((i / 2) % 2)) * D + 8 * (i / 4) + col + i % 2] = ot[i];
#endif
}

template <typename Tr> void launch(const float* q, const float* k, const float* v, const float* p,
                                   float* s, float* o) {
  static_assert(Tr::kHeadDim == kProbeDim && Tr::kBc == kProbeKeys && Tr::kWgRows == kProbeRows);
  FB_CUDA_CHECK(cudaFuncSetAttribute(probe_kernel<Tr>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     int(Tr::kSmemBytes)));
  probe_kernel<Tr><<<1, 128, Tr::kSmemBytes>>>(q, k, v, p, s, o);
  FB_CUDA_CHECK_LAUNCH();
  FB_CUDA_CHECK(cudaDeviceSynchronize());
}

// The splits of ptx::split_tf32_as<true> (cvt.rn) of n values, one per thread.
__global__ void rn_split_kernel(const float* x, std::uint32_t* hi, std::uint32_t* lo, int n) {
#if FB_PTX_SM90A
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) ptx::split_tf32_as<true>(x[i], hi[i], lo[i]);
#endif
}

bool has_sm90a_code() {
  int has = 0;
  if (cudaMemcpyFromSymbol(&has, g_probe_has_code, sizeof(has)) != cudaSuccess || has != 1) {
    (void)cudaGetLastError();
    return false;
  }
  return true;
}

}  // namespace

bool run_sm90_tf32_probe(const float* q, const float* k, const float* v, const float* p, float* s,
                         float* o, bool split, bool session7) {
  if (!has_sm90a_code()) return false;
  using X3 = Tf32FwdTraits<kProbeDim, kProbeKeys, 1, 1, true>;
  using X1 = Tf32FwdTraits<kProbeDim, kProbeKeys, 1, 1, false>;
  if (session7) {
    if (split) launch<Tf32DescBase<Tf32OnePassS<Tf32Rn<X3>>>>(q, k, v, p, s, o);
    else launch<Tf32DescBase<Tf32OnePassS<Tf32Rn<X1>>>>(q, k, v, p, s, o);
  } else if (split) {
    launch<X3>(q, k, v, p, s, o);
  } else {
    launch<X1>(q, k, v, p, s, o);
  }
  return true;
}

bool run_sm90_tf32_rn_split(const float* x, std::uint32_t* hi, std::uint32_t* lo, int n) {
  if (!has_sm90a_code()) return false;
  rn_split_kernel<<<(n + 255) / 256, 256>>>(x, hi, lo, n);
  FB_CUDA_CHECK_LAUNCH();
  FB_CUDA_CHECK(cudaDeviceSynchronize());
  return true;
}

}  // namespace fb::test
