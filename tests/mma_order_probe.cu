// Device side of the known-order MMA chain probe (tests/mma_order_probe.h): one warp per tile runs a chain of
// mma.sync MMAs (fp16 m16n8k16 or TF32 m16n8k8), or one warpgroup per 4 tiles a chain of wgmma m64n8k16 / m64n8k8,
// with an fp32 accumulator, in an order fixed by the program (k steps ascending; within a step the terms in order),
// so that the host can replay the same order under rounding models. Speed is not the point: A comes straight from
// global memory into registers, every wgmma is waited for before the next.
// Test-only code: nothing here is registered as a kernel. mma.sync: sm_80+; wgmma: sm_90a (empty elsewhere).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "common/check.h"
#include "common/ptx.cuh"
#include "common/ptx_sm90.cuh"
#include "mma_order_probe.h"

namespace fb::test {
namespace {

namespace ptx = fb::cuda::ptx;

// Fragments (PTX ISA "Matrix Fragments for mma.m16n8k16 / m16n8k8"), g = lane / 4, q = lane % 4; a row of A and
// a row of B^T both run along k, so A(r, k) = a[r * k_total + k], B(k, n) = bt[n * k_total + k].
//   fp16 A: a0 (g, 2q..2q+1), a1 (g+8, 2q..), a2 (g, 2q+8..), a3 (g+8, 2q+8..); B: b0 (2q.., g), b1 (2q+8.., g)
//   TF32 A: a0 (g, q), a1 (g+8, q), a2 (g, q+4), a3 (g+8, q+4); B: b0 (q, g), b1 (q+4, g)
//   C (both): c0, c1 (g, 2q, 2q+1), c2, c3 (g+8, 2q, 2q+1).
// A's fragment of one k step (also wgmma's A from registers: the same layout per warp of the warpgroup).
template <MmaFormat F>
__device__ __forceinline__ void load_a(std::uint32_t (&af)[4], const float* a, int k_total, int k0, int g, int q) {
  if constexpr (F == MmaFormat::fp16) {
    auto pair = [&](int r, int k) { return ptx::pack_half2(a[r * k_total + k], a[r * k_total + k + 1]); };
    af[0] = pair(g, k0 + 2 * q);
    af[1] = pair(g + 8, k0 + 2 * q);
    af[2] = pair(g, k0 + 2 * q + 8);
    af[3] = pair(g + 8, k0 + 2 * q + 8);
  } else {
    // The values are TF32 already (low 13 bits zero): their fp32 bits are the operand, no cvt.
    auto bits = [&](int r, int k) { return __float_as_uint(a[r * k_total + k]); };
    af[0] = bits(g, k0 + q);
    af[1] = bits(g + 8, k0 + q);
    af[2] = bits(g, k0 + q + 4);
    af[3] = bits(g + 8, k0 + q + 4);
  }
}

template <MmaFormat F>
__device__ __forceinline__ void mma_step(float (&acc)[4], const float* a, const float* bt, int k_total, int k0,
                                         int g, int q) {
  std::uint32_t af[4], bf[2];
  load_a<F>(af, a, k_total, k0, g, q);
  if constexpr (F == MmaFormat::fp16) {
    auto pair = [&](int r, int k) { return ptx::pack_half2(bt[r * k_total + k], bt[r * k_total + k + 1]); };
    bf[0] = pair(g, k0 + 2 * q);
    bf[1] = pair(g, k0 + 2 * q + 8);
    ptx::mma_m16n8k16_f16(acc, af, bf);
  } else {
    auto bits = [&](int r, int k) { return __float_as_uint(bt[r * k_total + k]); };
    bf[0] = bits(g, k0 + q);
    bf[1] = bits(g, k0 + q + 4);
    ptx::mma_m16n8k8_tf32(acc, af, bf);
  }
}

// Tile t's finished chunk of k values, ending at k_end: its m16n8 sums (the fragment of mma.sync's C, which wgmma's
// m64n8 accumulator repeats per warp) stored in the chunk's slot of out, and the accumulator zeroed for the next.
__device__ __forceinline__ void store_chunk(float* out, float (&acc)[4], int t, int k_total, int chunk, int k_end,
                                            int g, int q) {
  float* o = out + (std::size_t(t) * (k_total / chunk) + k_end / chunk - 1) * kMmaRows * kMmaCols;
  o[g * kMmaCols + 2 * q] = acc[0];
  o[g * kMmaCols + 2 * q + 1] = acc[1];
  o[(g + 8) * kMmaCols + 2 * q] = acc[2];
  o[(g + 8) * kMmaCols + 2 * q + 1] = acc[3];
  acc[0] = acc[1] = acc[2] = acc[3] = 0.f;
}

template <MmaFormat F>
__global__ void __launch_bounds__(32) mma_chain_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                                       float* __restrict__ out, int terms, int tiles, int k_total,
                                                       int chunk) {
  constexpr int kStep = F == MmaFormat::fp16 ? 16 : 8;  // mma_k_step(F), which is host-only
  const int t = blockIdx.x, lane = threadIdx.x, g = lane / 4, q = lane % 4;
  const std::size_t a_tile = std::size_t(kMmaRows) * k_total, b_tile = std::size_t(kMmaCols) * k_total;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int k0 = 0; k0 < k_total; k0 += kStep) {
    for (int term = 0; term < terms; ++term)
      mma_step<F>(acc, a + (std::size_t(term) * tiles + t) * a_tile, b + (std::size_t(term) * tiles + t) * b_tile,
                  k_total, k0, g, q);
    if ((k0 + kStep) % chunk == 0)  // the chunk's sum is done: store it, start the next from zero
      store_chunk(out, acc, t, k_total, chunk, k0 + kStep, g, q);
  }
}

// ---- wgmma m64n8 (sm_90a) ----
__device__ int g_mma_probe_has_wgmma = FB_PTX_SM90A;

// B (k values x 8 columns) stages through shared memory K-major without swizzle (descriptor layout type 0): per k
// step two 8 x 16-byte core matrices (rows = the 8 columns n, 16 bytes of consecutive k: 8 fp16 or 4 TF32), the
// second 128 bytes after the first, a step every 256 bytes. The core matrices' distance along K is given as both
// the leading and the stride byte offset (128): with N = 8 there is one core matrix along N, so the layout reads
// the same whichever of the two fields the hardware takes for K (the PTX ISA's wording differs between layouts).
constexpr int kWgStageK = 512;  // k values a stage: TF32 64 steps x 2 terms x 256 B = 32 KB of shared memory
constexpr int kWgMaxTerms = 2;

#if FB_PTX_SM90A
constexpr int kWgStepBytes = 256;
constexpr int kWgCoreBytes = 128;

__device__ __forceinline__ std::uint64_t make_desc_noswizzle(std::uint32_t smem_addr, std::uint32_t lbo_bytes,
                                                             std::uint32_t sbo_bytes) {
  return std::uint64_t((smem_addr >> 4) & 0x3FFFu) | (std::uint64_t((lbo_bytes >> 4) & 0x3FFFu) << 16) |
         (std::uint64_t((sbo_bytes >> 4) & 0x3FFFu) << 32);  // base offset 0, layout type 0 (no swizzle)
}

// d (the m64n8 accumulator: warp w rows 16w + g, + 8; columns 2q, 2q + 1, as mma.sync's C) += A B.
template <MmaFormat F>
__device__ __forceinline__ void wgmma_m64n8(float (&d)[4], const std::uint32_t (&a)[4], std::uint64_t desc_b) {
  // scale-d is a predicate (true: D += A B), as in ptx_sm90.cuh's wrappers.
  if constexpr (F == MmaFormat::fp16)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, "
                 "1, 1, 0;\n}\n"  // scale-a 1, scale-b 1, B not transposed (K-major)
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
  else
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, "
                 "1, 1;\n}\n"  // scale-a 1, scale-b 1 (TF32: K-major only, no transpose bits)
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}
#endif

template <MmaFormat F>
__global__ void __launch_bounds__(128) wgmma_chain_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                                          float* __restrict__ out, int terms, int tiles,
                                                          int k_total, int chunk) {
#if FB_PTX_SM90A
  constexpr int kStep = F == MmaFormat::fp16 ? 16 : 8;
  constexpr int kElemBytes = F == MmaFormat::fp16 ? 2 : 4;
  constexpr int kPerCore = 16 / kElemBytes;  // k values in a core matrix's 16-byte row
  constexpr int kStageBytes = kWgStageK / kStep * kWgStepBytes;
  __shared__ __align__(128) unsigned char b_smem[kWgMaxTerms][kStageBytes];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, q = lane % 4;
  const int t = 4 * blockIdx.x + warp;  // this warp's tile; B is the group's first tile's (equal for all four)
  const int stage_k = k_total < kWgStageK ? k_total : kWgStageK;
  const std::size_t a_tile = std::size_t(kMmaRows) * k_total, b_tile = std::size_t(kMmaCols) * k_total;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int s0 = 0; s0 < k_total; s0 += stage_k) {
    // Stage B's k in [s0, s0 + stage_k) for every term (the previous stage's wgmmas are all complete).
    __syncthreads();
    for (int term = 0; term < terms; ++term) {
      const float* bt = b + (std::size_t(term) * tiles + 4 * blockIdx.x) * b_tile;
      for (int i = tid; i < kMmaCols * stage_k; i += 128) {
        const int n = i / stage_k, k = i % stage_k;  // consecutive threads read consecutive k
        const int off = (k / kStep) * kWgStepBytes + ((k % kStep) / kPerCore) * kWgCoreBytes + n * 16 +
                        (k % kPerCore) * kElemBytes;
        const float x = bt[std::size_t(n) * k_total + s0 + k];
        if constexpr (F == MmaFormat::fp16)
          *reinterpret_cast<__half*>(&b_smem[term][off]) = __float2half_rn(x);
        else
          *reinterpret_cast<float*>(&b_smem[term][off]) = x;
      }
    }
    ptx::fence_proxy_async_smem();  // the generic-proxy stores, visible to wgmma's async proxy
    __syncthreads();
    for (int k0 = s0; k0 < s0 + stage_k; k0 += kStep) {
      for (int term = 0; term < terms; ++term) {
        std::uint32_t af[4];
        load_a<F>(af, a + (std::size_t(term) * tiles + t) * a_tile, k_total, k0, g, q);
        const std::uint64_t desc = make_desc_noswizzle(
            ptx::smem_addr(&b_smem[term][((k0 - s0) / kStep) * kWgStepBytes]), kWgCoreBytes, kWgCoreBytes);
        ptx::wgmma_fence();  // A and the accumulators were written by ordinary instructions
        wgmma_m64n8<F>(acc, af, desc);
        ptx::wgmma_commit();
        ptx::wgmma_wait<0>();
        ptx::fence_operands(acc);
      }
      if ((k0 + kStep) % chunk == 0) store_chunk(out, acc, t, k_total, chunk, k0 + kStep, g, q);
    }
  }
#endif
}

bool has_wgmma_code() {
  int has = 0;
  if (cudaMemcpyFromSymbol(&has, g_mma_probe_has_wgmma, sizeof(has)) != cudaSuccess || has != 1) {
    (void)cudaGetLastError();
    return false;
  }
  return true;
}

struct DeviceFree {
  void operator()(void* p) const { FB_CUDA_CHECK_NOTHROW(cudaFree(p)); }
};
using DeviceFloats = std::unique_ptr<float, DeviceFree>;

DeviceFloats device_copy(const float* host, std::size_t n) {
  void* p = nullptr;
  FB_CUDA_CHECK(cudaMalloc(&p, n * sizeof(float)));
  DeviceFloats d(static_cast<float*>(p));
  if (host) FB_CUDA_CHECK(cudaMemcpy(p, host, n * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

}  // namespace

bool mma_probe_device_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

bool run_mma_chains(const MmaChainProblem& p, float* out) {
  const int step = mma_k_step(p.fmt);
  if (p.terms < 1 || p.tiles < 1 || p.k < step || p.chunk < step || p.k % p.chunk || p.chunk % step)
    throw std::invalid_argument("run_mma_chains: k and chunk must be multiples of the MMA's k step, k of chunk");
  const bool wg = p.instr == MmaInstr::wgmma;
  if (wg) {
    if (p.terms > kWgMaxTerms || p.tiles % 4 || p.k % std::min(p.k, kWgStageK))
      throw std::invalid_argument("run_mma_chains (wgmma): at most 2 terms, tiles a multiple of 4, k a multiple "
                                  "of 512 or less");
    const std::size_t bt = std::size_t(kMmaCols) * p.k;
    for (int term = 0; term < p.terms; ++term)
      for (int t = 0; t < p.tiles; ++t)
        if (std::memcmp(p.b + (std::size_t(term) * p.tiles + t) * bt, p.b + (std::size_t(term) * p.tiles + t / 4 * 4) * bt,
                        bt * sizeof(float)) != 0)
          throw std::invalid_argument("run_mma_chains (wgmma): tiles 4j..4j+3 must have equal B");
    if (!has_wgmma_code()) return false;
  }
  const std::size_t na = std::size_t(p.terms) * p.tiles * kMmaRows * p.k;
  const std::size_t nb = std::size_t(p.terms) * p.tiles * kMmaCols * p.k;
  const std::size_t no = mma_chain_out_size(p);
  DeviceFloats a = device_copy(p.a, na), b = device_copy(p.b, nb), o = device_copy(nullptr, no);
  const bool f16 = p.fmt == MmaFormat::fp16;
  if (wg)
    (f16 ? wgmma_chain_kernel<MmaFormat::fp16> : wgmma_chain_kernel<MmaFormat::tf32>)<<<p.tiles / 4, 128>>>(
        a.get(), b.get(), o.get(), p.terms, p.tiles, p.k, p.chunk);
  else
    (f16 ? mma_chain_kernel<MmaFormat::fp16> : mma_chain_kernel<MmaFormat::tf32>)<<<p.tiles, 32>>>(
        a.get(), b.get(), o.get(), p.terms, p.tiles, p.k, p.chunk);
  FB_CUDA_CHECK_LAUNCH();
  FB_CUDA_CHECK(cudaMemcpy(out, o.get(), no * sizeof(float), cudaMemcpyDeviceToHost));
  return true;
}

}  // namespace fb::test
