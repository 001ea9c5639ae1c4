// The naive path's row kernels: P = softmax(S) with LSE, and dS = P o (dP - D). Both are pure streaming
// passes over N x N arrays, so they are written to run near copy bandwidth: 16-byte vector accesses,
// a row spread over one warp (short rows, several rows per block) up to a 1024-thread block, and for
// the forward the whole row held in registers so S is read once (rows too long for that fall back to
// a loop that reads S twice).
// The forward kernels take S and P types apart (TS, TP): the same for fp64/fp32/fp16/bf16; fp8 reads
// an fp32 S and writes P as e4m3 codes of P * p_scale (std::uint8_t; attention.h). The vector width
// is S's (16 bytes); P's vector holds as many elements (4 bytes for fp8).
#include <cstdint>
#include <type_traits>

#include "common/check.h"
#include "common/fp8.h"
#include "common/types.cuh"
#include "naive/naive.h"

namespace fb::cuda::naive {
namespace {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kVecBytes = 16;
constexpr int kMaxThreadsPerRow = 1024;  // one block per row at most
constexpr int kMinThreadsPerBlock = 128;  // short rows: pack several rows into a block of this size
constexpr int kMaxRowsPerBlock = kMinThreadsPerBlock / kWarp;
// 32-bit registers a thread spends holding its share of a row in the one-pass kernel: 32 keeps it
// well inside the 64 registers per thread that a 1024-thread block leaves.
constexpr int kHeldRegisters = 32;
// Vectors per thread the backward row kernel aims for (independent loads in flight).
constexpr int kBackwardVecsPerThread = 4;
constexpr int kBackwardMaxThreadsPerRow = 256;

// One 16-byte vector of T.
template <typename T> struct alignas(kVecBytes) Pack {
  static constexpr int n = kVecBytes / int(sizeof(T));
  T v[n];
};

template <typename Acc, typename T> __device__ inline Acc to_acc(T x) {
  if constexpr (std::is_same_v<Acc, double>) return to_double(x);
  else return to_float(x);
}
template <typename T, typename Acc> __device__ inline T from_acc(Acc x) {
  if constexpr (std::is_same_v<Acc, double>) return x;  // fp64 in, fp64 out
  else return from_float<T>(x);
}
// P as stored: the element type itself, or for fp8 (TP = std::uint8_t) the e4m3 code of P * p_scale
// (P <= 1 and p_scale = 2^8: never near e4m3's 448).
template <typename TP, typename Acc> __device__ inline TP store_p(Acc x, float p_scale) {
  if constexpr (std::is_same_v<TP, std::uint8_t>) return fp8_e4m3_from_float(x * p_scale);
  else return from_acc<TP>(x);
}
// N elements of T stored as one aligned access (a Pack when 16 bytes; 4 bytes for N = 4 fp8 codes).
template <typename T, int N> struct alignas(sizeof(T) * N) Vec {
  T v[N];
};
__device__ inline float exp_acc(float x) { return expf(x); }
__device__ inline double exp_acc(double x) { return exp(x); }
__device__ inline float log_acc(float x) { return logf(x); }
__device__ inline double log_acc(double x) { return log(x); }

// MaxOp may drop a NaN score, but the NaN still reaches the sum through exp() and poisons the whole
// row (P and LSE), which is what verification should see.
struct MaxOp {
  template <typename A> __device__ A operator()(A a, A b) const { return a > b ? a : b; }
};
struct AddOp {
  template <typename A> __device__ A operator()(A a, A b) const { return a + b; }
};

// Reduces v over the blockDim.x threads of this row (threadIdx.y picks the row). All threads of the
// block must call it (it may synchronise); every thread of the row gets the result.
template <typename Acc, typename Op>
__device__ Acc row_reduce(Acc v, Op op, Acc* scratch /* [kMaxRowsPerBlock][kWarp] */) {
  for (int off = kWarp / 2; off > 0; off >>= 1) v = op(v, __shfl_xor_sync(kFullMask, v, off));
  const int warps = blockDim.x / kWarp;
  if (warps == 1) return v;  // uniform over the block: the barriers below are reached by all or none
  Acc* mine = scratch + threadIdx.y * kWarp;
  if ((threadIdx.x & (kWarp - 1)) == 0) mine[threadIdx.x / kWarp] = v;
  __syncthreads();
  Acc r = mine[0];
  for (int w = 1; w < warps; ++w) r = op(r, mine[w]);
  __syncthreads();  // scratch free for the next reduction
  return r;
}

struct RowGeometry {
  std::int64_t rows;  // batch * heads * seq_q
  std::int64_t ld;    // row stride in elements (>= seq_k), a multiple of the vector width
  CausalMask mask;    // row i of a head sees keys [0, mask.key_end(i)) (none: an empty row)
  float p_scale;      // fp8 only: P is stored as e4m3(P * p_scale)
  // Keys row `row` (over batch * heads * seq_q) sees: j < valid take part, the rest get P = 0.
  __device__ int valid(std::int64_t row) const { return mask.key_end(int(row % mask.seq_q)); }
};

// One pass: the row's vectors live in registers between the max, the sum and the store.
// Block (threads per row, rows per block); each thread holds VPT vectors.
template <typename TS, typename TP, typename Acc, int VPT>
__global__ void __launch_bounds__(kMaxThreadsPerRow)
softmax_rows_kernel(const TS* __restrict__ s, TP* __restrict__ prob, Acc* __restrict__ lse, RowGeometry g) {
  constexpr int V = Pack<TS>::n;
  using PVec = Vec<TP, V>;
  __shared__ Acc scratch[kMaxRowsPerBlock * kWarp];
  const std::int64_t row = std::int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
  const bool active = row < g.rows;  // inactive threads still join the reductions' barriers
  const int valid = active ? g.valid(row) : 0;  // keys j < valid take part; the rest get P = 0
  const int nvec = int(g.ld / V);
  const auto* src = reinterpret_cast<const Pack<TS>*>(s + (active ? row : 0) * g.ld);

  Acc x[VPT][V];
  Acc m = -INFINITY;
#pragma unroll
  for (int v = 0; v < VPT; ++v) {
    const int vi = threadIdx.x + v * blockDim.x;
    const int col0 = vi * V;
    if (active && col0 < valid) {  // causal: vectors past the diagonal are never read
      const Pack<TS> pk = src[vi];
#pragma unroll
      for (int e = 0; e < V; ++e) x[v][e] = col0 + e < valid ? to_acc<Acc>(pk.v[e]) : Acc(-INFINITY);
    } else {
#pragma unroll
      for (int e = 0; e < V; ++e) x[v][e] = -INFINITY;
    }
#pragma unroll
    for (int e = 0; e < V; ++e) m = MaxOp{}(m, x[v][e]);
  }
  m = row_reduce(m, MaxOp{}, scratch);
  // A row with no visible key (valid == 0) has m = -inf: subtract 0 so that exp(-inf) gives 0, not
  // exp(-inf + inf) = NaN; it then writes P = 0 and LSE = -inf (attention.h).
  const Acc m_sub = valid == 0 ? Acc(0) : m;

  Acc sum = 0;
#pragma unroll
  for (int v = 0; v < VPT; ++v)
#pragma unroll
    for (int e = 0; e < V; ++e) {
      x[v][e] = exp_acc(x[v][e] - m_sub);  // masked: exp(-inf) = 0
      sum += x[v][e];
    }
  sum = row_reduce(sum, AddOp{}, scratch);
  if (!active) return;

  const Acc inv = valid == 0 ? Acc(0) : Acc(1) / sum;
  auto* dst = reinterpret_cast<PVec*>(prob + row * g.ld);
#pragma unroll
  for (int v = 0; v < VPT; ++v) {
    const int vi = threadIdx.x + v * blockDim.x;
    if (vi < nvec) {  // includes the row's padding columns, written as 0
      PVec out;
#pragma unroll
      for (int e = 0; e < V; ++e) out.v[e] = store_p<TP>(x[v][e] * inv, g.p_scale);
      dst[vi] = out;
    }
  }
  if (threadIdx.x == 0) lse[row] = valid == 0 ? Acc(-INFINITY) : m + log_acc(sum);
}

// Rows too long for registers: an online (max, sum) pass over S, then a second read of S to write P.
// One row per block of blockDim.x threads.
template <typename TS, typename TP, typename Acc>
__global__ void __launch_bounds__(kMaxThreadsPerRow, 1)
softmax_rows_looped_kernel(const TS* __restrict__ s, TP* __restrict__ prob, Acc* __restrict__ lse,
                           RowGeometry g) {
  constexpr int V = Pack<TS>::n;
  using PVec = Vec<TP, V>;
  __shared__ Acc scratch[kMaxRowsPerBlock * kWarp];
  const std::int64_t row = blockIdx.x;
  const int valid = g.valid(row);
  const int nvec = int(g.ld / V);
  const auto* src = reinterpret_cast<const Pack<TS>*>(s + row * g.ld);

  Acc m = -INFINITY, l = 0;  // running max and sum of exp(x - m) of this thread's columns
  for (int vi = threadIdx.x; vi * V < valid; vi += blockDim.x) {
    const Pack<TS> pk = src[vi];
#pragma unroll
    for (int e = 0; e < V; ++e) {
      if (vi * V + e >= valid) break;
      const Acc x = to_acc<Acc>(pk.v[e]);
      if (x > m) {
        l = l * exp_acc(m - x) + Acc(1);
        m = x;
      } else {
        l += exp_acc(x - m);  // a NaN score lands here and poisons the sum
      }
    }
  }
  const Acc row_max = row_reduce(m, MaxOp{}, scratch);
  // Threads that saw no column have m = -inf and l = 0: they add 0.
  const Acc sum = row_reduce(m == Acc(-INFINITY) ? Acc(0) : l * exp_acc(m - row_max), AddOp{}, scratch);
  const Acc inv = valid == 0 ? Acc(0) : Acc(1) / sum;  // an empty row: P = 0, LSE = -inf

  auto* dst = reinterpret_cast<PVec*>(prob + row * g.ld);
  for (int vi = threadIdx.x; vi < nvec; vi += blockDim.x) {
    const int col0 = vi * V;
    PVec out;
    if (col0 < valid) {
      const Pack<TS> pk = src[vi];
#pragma unroll
      for (int e = 0; e < V; ++e)
        out.v[e] = store_p<TP>(col0 + e < valid ? exp_acc(to_acc<Acc>(pk.v[e]) - row_max) * inv : Acc(0),
                               g.p_scale);
    } else {
#pragma unroll
      for (int e = 0; e < V; ++e) out.v[e] = store_p<TP>(Acc(0), g.p_scale);
    }
    dst[vi] = out;
  }
  if (threadIdx.x == 0) lse[row] = valid == 0 ? Acc(-INFINITY) : row_max + log_acc(sum);
}

// dS = P o (dP - D) in place over dP, with D = rowsum(dO o O) reduced first by the row's threads.
template <typename T, typename Acc>
__global__ void __launch_bounds__(kMaxThreadsPerRow)
softmax_backward_rows_kernel(const T* __restrict__ prob, T* __restrict__ ds, const T* __restrict__ o,
                             const T* __restrict__ dout, int head_dim, RowGeometry g) {
  constexpr int V = Pack<T>::n;
  __shared__ Acc scratch[kMaxRowsPerBlock * kWarp];
  const std::int64_t row = std::int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
  const bool active = row < g.rows;

  Acc dot = 0;
  if (active)
    for (int k = threadIdx.x; k < head_dim; k += blockDim.x)
      dot += to_acc<Acc>(dout[row * head_dim + k]) * to_acc<Acc>(o[row * head_dim + k]);
  const Acc d_row = row_reduce(dot, AddOp{}, scratch);
  if (!active) return;

  const int valid = g.valid(row);
  const int nvec = int(g.ld / V);
  const auto* p_row = reinterpret_cast<const Pack<T>*>(prob + row * g.ld);
  auto* ds_row = reinterpret_cast<Pack<T>*>(ds + row * g.ld);
  for (int vi = threadIdx.x; vi < nvec; vi += blockDim.x) {
    const int col0 = vi * V;
    Pack<T> out;
    if (col0 < valid) {
      const Pack<T> pk = p_row[vi];
      const Pack<T> dp = ds_row[vi];
#pragma unroll
      for (int e = 0; e < V; ++e)
        out.v[e] = from_acc<T>(col0 + e < valid
                                   ? to_acc<Acc>(pk.v[e]) * (to_acc<Acc>(dp.v[e]) - d_row)
                                   : Acc(0));
    } else {  // masked keys: dS = 0 without reading P or dP
#pragma unroll
      for (int e = 0; e < V; ++e) out.v[e] = from_acc<T>(Acc(0));
    }
    ds_row[vi] = out;
  }
}

int pow2_at_least(std::int64_t x) {
  int p = 1;
  while (p < x) p <<= 1;
  return p;
}

int rows_per_block(int threads_per_row) {
  return threads_per_row < kMinThreadsPerBlock ? kMinThreadsPerBlock / threads_per_row : 1;
}

unsigned grid_for(std::int64_t rows, int rpb) { return unsigned((rows + rpb - 1) / rpb); }

template <typename TS, typename TP, typename Acc>
void launch_softmax(const TS* s, TP* prob, Acc* lse, RowGeometry g, cudaStream_t stream) {
  constexpr int V = Pack<TS>::n;
  // Vectors a thread may hold: kHeldRegisters 32-bit registers of accumulators.
  constexpr int max_vpt = kHeldRegisters * 4 / (V * int(sizeof(Acc)));
  static_assert(max_vpt >= 1 && max_vpt <= 8, "held vectors per thread out of the instantiated range");
  const std::int64_t nvec = g.ld / V;

  int vpt = 0, tpr = 0;
  if (nvec <= std::int64_t(kWarp) * max_vpt) {  // one warp per row, the fewest vectors that cover it
    tpr = kWarp;
    for (vpt = 1; vpt < max_vpt && std::int64_t(kWarp) * vpt < nvec; vpt *= 2) {}
  } else if (nvec <= std::int64_t(kMaxThreadsPerRow) * max_vpt) {
    vpt = max_vpt;
    tpr = pow2_at_least((nvec + vpt - 1) / vpt);
  }

  if (vpt == 0) {  // too long for registers
    softmax_rows_looped_kernel<TS, TP, Acc><<<unsigned(g.rows), kMaxThreadsPerRow, 0, stream>>>(s, prob, lse, g);
    FB_CUDA_CHECK_LAUNCH();
    return;
  }
  const int rpb = rows_per_block(tpr);
  const dim3 block(tpr, rpb);
  const unsigned grid = grid_for(g.rows, rpb);
  switch (vpt) {
    case 1: softmax_rows_kernel<TS, TP, Acc, 1><<<grid, block, 0, stream>>>(s, prob, lse, g); break;
    case 2: softmax_rows_kernel<TS, TP, Acc, 2><<<grid, block, 0, stream>>>(s, prob, lse, g); break;
    case 4: softmax_rows_kernel<TS, TP, Acc, 4><<<grid, block, 0, stream>>>(s, prob, lse, g); break;
    case 8:
      if constexpr (max_vpt >= 8) softmax_rows_kernel<TS, TP, Acc, 8><<<grid, block, 0, stream>>>(s, prob, lse, g);
      break;
  }
  FB_CUDA_CHECK_LAUNCH();
}

RowGeometry geometry(const AttentionParams& p, std::int64_t ld) {
  return RowGeometry{p.rows(), ld, p.mask(), p.p_scale};
}

}  // namespace

void softmax_rows(const AttentionParams& p, const void* s, void* prob, std::int64_t ld, cudaStream_t stream) {
  dispatch_dtype(p.dtype, [&](auto traits) {
    using T = typename decltype(traits)::elem;
    using Acc = typename decltype(traits)::accum;
    launch_softmax<T, T, Acc>(static_cast<const T*>(s), static_cast<T*>(prob), static_cast<Acc*>(p.lse),
                              geometry(p, ld), stream);
  });
}

void softmax_rows_fp8(const AttentionParams& p, const float* s, std::uint8_t* prob, std::int64_t ld,
                      cudaStream_t stream) {
  launch_softmax<float, std::uint8_t, float>(s, prob, static_cast<float*>(p.lse), geometry(p, ld), stream);
}

void softmax_backward_rows(const AttentionParams& p, const void* prob, void* ds, std::int64_t ld,
                           cudaStream_t stream) {
  dispatch_dtype(p.dtype, [&](auto traits) {
    using T = typename decltype(traits)::elem;
    using Acc = typename decltype(traits)::accum;
    const std::int64_t nvec = ld / Pack<T>::n;
    std::int64_t want = (nvec + kBackwardVecsPerThread - 1) / kBackwardVecsPerThread;
    if (want < kWarp) want = kWarp;
    if (want > kBackwardMaxThreadsPerRow) want = kBackwardMaxThreadsPerRow;
    const int tpr = pow2_at_least(want);
    const int rpb = rows_per_block(tpr);
    softmax_backward_rows_kernel<T, Acc><<<grid_for(p.rows(), rpb), dim3(tpr, rpb), 0, stream>>>(
        static_cast<const T*>(prob), static_cast<T*>(ds), static_cast<const T*>(p.o),
        static_cast<const T*>(p.dout), p.head_dim, geometry(p, ld));
    FB_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace fb::cuda::naive
