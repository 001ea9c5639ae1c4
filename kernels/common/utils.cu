// Utilities the CUDA backend uses around the kernels: seeded inputs, fp64 conversion, error reductions.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "attention.h"
#include "common/check.h"
#include "common/fp8.h"
#include "common/types.cuh"

namespace fb::cuda {
namespace {

constexpr int kThreads = 256;
// Grid-stride loops: enough blocks to fill any current GPU several times over, few enough that the
// per-block reduction results stay cheap to combine.
constexpr int kMaxBlocks = 4096;

cudaStream_t stream_of(const Context& ctx) { return static_cast<cudaStream_t>(ctx.stream); }

int blocks_for(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return int(b < 1 ? 1 : b > kMaxBlocks ? kMaxBlocks : b);
}

// ---- counter-based RNG: value i of stream (seed, stream_id) depends on nothing else ----

// SplitMix64's finaliser: a bijective 64-bit mix with full avalanche.
__host__ __device__ inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// SplitMix64's increment (2^64 / golden ratio, odd): consecutive counters land far apart.
constexpr std::uint64_t kGamma = 0x9E3779B97F4A7C15ull;
constexpr int kMantissaBits = 53;                                   // of a double
constexpr double kTwoPow53Inv = 1.0 / 9007199254740992.0;           // 2^-53
constexpr double kTwoPi = 6.283185307179586476925286766559;

__host__ __device__ inline std::uint64_t stream_key(std::uint64_t seed, std::uint64_t stream_id) {
  return mix64(mix64(seed + kGamma) ^ (stream_id * kGamma + 1));
}

// Standard normal for counter i: two 53-bit uniforms, Box-Muller (cosine branch). u1 is in (0, 1], so
// the log is finite; the value is computed in double and rounded once to the element type.
__device__ inline double normal_at(std::uint64_t key, std::uint64_t i) {
  const std::uint64_t h1 = mix64(key + (2 * i + 1) * kGamma);
  const std::uint64_t h2 = mix64(key + (2 * i + 2) * kGamma);
  const double u1 = double((h1 >> (64 - kMantissaBits)) + 1) * kTwoPow53Inv;
  const double u2 = double(h2 >> (64 - kMantissaBits)) * kTwoPow53Inv;
  return sqrt(-2.0 * log(u1)) * cos(kTwoPi * u2);
}

template <typename T> __device__ inline T from_double(double x);
template <> __device__ inline double from_double<double>(double x) { return x; }
template <> __device__ inline float from_double<float>(double x) { return float(x); }
template <> __device__ inline __half from_double<__half>(double x) { return __double2half(x); }
template <> __device__ inline __nv_bfloat16 from_double<__nv_bfloat16>(double x) {
  return __double2bfloat16(x);
}

template <typename T>
__global__ void fill_normal_kernel(T* dst, std::int64_t n, std::uint64_t key, double scale) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    dst[i] = from_double<T>(scale * normal_at(key, std::uint64_t(i)));
}

// ---- fp8 inputs: values drawn as fill_normal draws fp32 ones, quantised per tensor ----
// Non-negative floats order like their bits read as unsigned integers: atomicMax on the bits.
__global__ void amax_normal_kernel(std::int64_t n, std::uint64_t key, double scale, unsigned* amax_bits) {
  unsigned local = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const unsigned bits = __float_as_uint(fabsf(float(scale * normal_at(key, std::uint64_t(i)))));
    local = bits > local ? bits : local;
  }
  for (int off = 16; off > 0; off >>= 1) {
    const unsigned o = __shfl_down_sync(0xffffffffu, local, off);
    local = o > local ? o : local;
  }
  if ((threadIdx.x & 31) == 0) atomicMax(amax_bits, local);
}

// The counter-based RNG gives the same x again, so nothing is kept between the amax and this pass.
__global__ void quantise_normal_kernel(std::uint8_t* dst, std::int64_t n, std::uint64_t key, double scale,
                                       float s) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    dst[i] = fp8_e4m3_from_float(__fdiv_rn(float(scale * normal_at(key, std::uint64_t(i))), s));
}

__global__ void fp8_to_fp64_kernel(const std::uint8_t* src, double* dst, std::int64_t n, double factor) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    dst[i] = double(fp8_e4m3_to_float(src[i])) * factor;  // exact: 4 x 24 significant bits
}

template <typename T>
__global__ void to_fp64_kernel(const T* src, double* dst, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    dst[i] = to_double(src[i]);
}

// ---- error reduction ----
// Non-negative doubles order like their bit patterns read as unsigned integers (+inf above every
// finite value), so atomicMax on the bits is a max over the values. NaN is filtered out before.
struct DiffAccum {
  unsigned long long max_bits;
  unsigned long long nonfinite;
  unsigned long long b_max_bits;
};

template <typename TA, typename TB>
__global__ void max_abs_diff_kernel(const TA* a, const TB* b, std::int64_t n, DiffAccum* out) {
  double local_max = 0.0;
  double local_b = 0.0;
  unsigned long long local_bad = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const double va = to_double(a[i]);
    const double vb = to_double(b[i]);
    if (isfinite(vb)) local_b = fabs(vb) > local_b ? fabs(vb) : local_b;
    // -inf on both sides is the LSE of a row with no visible key (attention.h): a match, error 0.
    // -inf on one side only falls through to the checks below and fails.
    if (va == -INFINITY && vb == -INFINITY) continue;
    if (!isfinite(va)) {
      ++local_bad;  // unwritten poison (NaN) or an overflow: counted, never dropped
      continue;
    }
    // A non-finite b (the yardstick) cannot vouch for a: report an unbounded error.
    const double d = isfinite(vb) ? fabs(va - vb) : INFINITY;
    local_max = d > local_max ? d : local_max;  // explicit compare: no fmax that could swallow NaN
  }
  // Warp reduction, then one atomic per warp.
  for (int off = 16; off > 0; off >>= 1) {
    const double m = __shfl_down_sync(0xffffffffu, local_max, off);
    local_max = m > local_max ? m : local_max;
    const double mb = __shfl_down_sync(0xffffffffu, local_b, off);
    local_b = mb > local_b ? mb : local_b;
    local_bad += __shfl_down_sync(0xffffffffu, local_bad, off);
  }
  if ((threadIdx.x & 31) == 0) {
    // Non-negative doubles order like their bit patterns, so an integer atomicMax is a max.
    atomicMax(&out->max_bits, static_cast<unsigned long long>(__double_as_longlong(local_max)));
    atomicMax(&out->b_max_bits, static_cast<unsigned long long>(__double_as_longlong(local_b)));
    if (local_bad) atomicAdd(&out->nonfinite, local_bad);
  }
}

struct DeviceFree {
  void operator()(void* p) const { FB_CUDA_CHECK_NOTHROW(cudaFree(p)); }
};

template <typename TA, typename TB>
Diff reduce_diff(const TA* a, const TB* b, std::int64_t n, const Context& ctx) {
  Diff result;
  if (n <= 0) return result;
  void* raw = nullptr;
  FB_CUDA_CHECK(cudaMalloc(&raw, sizeof(DiffAccum)));
  std::unique_ptr<void, DeviceFree> accum(raw);
  auto* d_accum = static_cast<DiffAccum*>(raw);
  cudaStream_t s = stream_of(ctx);
  FB_CUDA_CHECK(cudaMemsetAsync(d_accum, 0, sizeof(DiffAccum), s));
  max_abs_diff_kernel<<<blocks_for(n), kThreads, 0, s>>>(a, b, n, d_accum);
  FB_CUDA_CHECK_LAUNCH();
  DiffAccum h{};
  FB_CUDA_CHECK(cudaMemcpyAsync(&h, d_accum, sizeof(h), cudaMemcpyDeviceToHost, s));
  FB_CUDA_CHECK(cudaStreamSynchronize(s));
  double m = 0;
  static_assert(sizeof(m) == sizeof(h.max_bits), "double and its bits differ in size");
  std::memcpy(&m, &h.max_bits, sizeof(m));
  result.max_abs = m;
  result.nonfinite = std::int64_t(h.nonfinite);
  std::memcpy(&m, &h.b_max_bits, sizeof(m));
  result.b_max_abs = m;
  return result;
}

}  // namespace

void fill_normal(void* dst, Dtype t, std::int64_t n, std::uint64_t seed, std::uint64_t stream_id,
                 const Context& ctx, double scale) {
  if (n <= 0) return;
  const std::uint64_t key = stream_key(seed, stream_id);
  dispatch_dtype(t, [&](auto traits) {
    using T = typename decltype(traits)::elem;
    fill_normal_kernel<<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(static_cast<T*>(dst), n, key, scale);
    FB_CUDA_CHECK_LAUNCH();
  });
}

float fill_normal_fp8(void* dst, std::int64_t n, std::uint64_t seed, std::uint64_t stream_id,
                      const Context& ctx, double scale) {
  if (n <= 0) return 1.0f;
  const std::uint64_t key = stream_key(seed, stream_id);
  const cudaStream_t s = stream_of(ctx);
  void* raw = nullptr;
  FB_CUDA_CHECK(cudaMalloc(&raw, sizeof(unsigned)));
  std::unique_ptr<void, DeviceFree> amax_dev(raw);
  FB_CUDA_CHECK(cudaMemsetAsync(raw, 0, sizeof(unsigned), s));
  amax_normal_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, key, scale, static_cast<unsigned*>(raw));
  FB_CUDA_CHECK_LAUNCH();
  unsigned bits = 0;
  FB_CUDA_CHECK(cudaMemcpyAsync(&bits, raw, sizeof bits, cudaMemcpyDeviceToHost, s));
  FB_CUDA_CHECK(cudaStreamSynchronize(s));
  float amax = 0;
  std::memcpy(&amax, &bits, sizeof amax);
  // The same rule as the CPU backend (attention.h): s = amax / 448, 1 for an all-zero tensor.
  const float descale = amax > 0 ? amax / kFp8E4m3Max : 1.0f;
  quantise_normal_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<std::uint8_t*>(dst), n, key, scale,
                                                             descale);
  FB_CUDA_CHECK_LAUNCH();
  return descale;
}

namespace {
constexpr unsigned kReadAllMagic = 0x9E3779B9u;
__global__ void read_all_kernel(const uint4* p, std::int64_t n, unsigned* sink) {
  unsigned acc = 0;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == kReadAllMagic) *sink = acc;
}
}  // namespace

void read_all(const void* buf, std::size_t bytes, unsigned* sink, void* stream) {
  if (bytes % sizeof(uint4) != 0) throw std::invalid_argument("read_all: bytes must be a multiple of 16");
  const auto n = std::int64_t(bytes / sizeof(uint4));
  if (n == 0) return;
  read_all_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<const uint4*>(buf),
                                                                                      n, sink);
  FB_CUDA_CHECK(cudaGetLastError());
}

void to_fp64(const void* src, Dtype t, double* dst, std::int64_t n, const Context& ctx, double factor) {
  if (n <= 0) return;
  if (t == Dtype::fp8) {
    fp8_to_fp64_kernel<<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(static_cast<const std::uint8_t*>(src),
                                                                        dst, n, factor);
    FB_CUDA_CHECK_LAUNCH();
    return;
  }
  if (factor != 1.0) throw std::invalid_argument("to_fp64: a factor applies to fp8 codes only");
  dispatch_dtype(t, [&](auto traits) {
    using T = typename decltype(traits)::elem;
    to_fp64_kernel<<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(static_cast<const T*>(src), dst, n);
    FB_CUDA_CHECK_LAUNCH();
  });
}

Diff max_abs_diff(const void* a, Dtype ta, const double* b, std::int64_t n, const Context& ctx) {
  Diff d;
  dispatch_dtype(ta, [&](auto traits) {
    using TA = typename decltype(traits)::elem;
    d = reduce_diff(static_cast<const TA*>(a), b, n, ctx);
  });
  return d;
}

Diff max_abs_diff_typed(const void* a, Dtype ta, const void* b, Dtype tb, std::int64_t n,
                        const Context& ctx) {
  Diff d;
  dispatch_dtype(ta, [&](auto ta_traits) {
    using TA = typename decltype(ta_traits)::elem;
    dispatch_dtype(tb, [&](auto tb_traits) {
      using TB = typename decltype(tb_traits)::elem;
      d = reduce_diff(static_cast<const TA*>(a), static_cast<const TB*>(b), n, ctx);
    });
  });
  return d;
}

}  // namespace fb::cuda
