// Exact fp64 attention, forward and backward (see reference.h). Plain CUDA-core fp64; tiles of 16 query
// rows x 16 keys with one thread per (row, key) pair of a tile, K/V (or Q/dO) tiles in shared memory
// padded by one double per row so that the 16 threads reading 16 different rows hit different banks.
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "common/check.h"
#include "reference/reference.h"

namespace fb::cuda::reference {
namespace {

constexpr int kBr = 16;  // query rows per tile
constexpr int kBc = 16;  // keys per tile
constexpr int kThreads = kBr * kBc;  // thread (tr, tc) = (tid / kBc, tid % kBc)
static_assert(kBc == 16, "row reductions below shuffle within 16-lane groups");
constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kRowsPerBlockD = 8;  // D kernel: one warp per row

// Shared-memory doubles of each kernel, for head_dim d (tile rows padded to d + 1).
constexpr std::size_t fwd_smem_doubles(int d) {
  return std::size_t(kBr + 2 * kBc) * (d + 1) + kBr * kBc + std::size_t(kBr) * d + kBr;
}
constexpr std::size_t dq_smem_doubles(int d) {
  return std::size_t(2 * kBr + 2 * kBc) * (d + 1) + kBr * kBc + std::size_t(kBr) * d + 2 * kBr;
}
constexpr std::size_t dkv_smem_doubles(int d) {
  return std::size_t(2 * kBr + 2 * kBc) * (d + 1) + 2 * kBr * kBc + 2 * std::size_t(kBc) * d + 2 * kBr;
}

// Rows [row0, row0 + count) of a (seq x d) row-major matrix into a tile with row stride d + 1; rows past
// seq are zero.
__device__ void load_tile(double* dst, const double* __restrict__ src, int row0, int count, int seq, int d) {
  for (int idx = threadIdx.x; idx < count * d; idx += blockDim.x) {
    const int r = idx / d, k = idx - r * d;
    dst[r * (d + 1) + k] = row0 + r < seq ? src[std::int64_t(row0 + r) * d + k] : 0.0;
  }
}

__device__ double dot(const double* a, const double* b, int d) {
  double acc = 0.0;
  for (int k = 0; k < d; ++k) acc = fma(a[k], b[k], acc);
  return acc;
}

// Over the 16 lanes that share a query row (consecutive thread ids).
__device__ double row_max16(double v) {
  for (int off = kBc / 2; off > 0; off >>= 1) {
    const double o = __shfl_xor_sync(kFullMask, v, off, kBc);
    v = o > v ? o : v;
  }
  return v;
}
__device__ double row_sum16(double v) {
  for (int off = kBc / 2; off > 0; off >>= 1) v += __shfl_xor_sync(kFullMask, v, off, kBc);
  return v;
}

// Where one (batch, head) starts in Q-like and K-like tensors.
struct HeadPtrs {
  std::int64_t q;   // offset of query head (b, h) in [B, H, seq_q, d]
  std::int64_t kv;  // offset of its kv head in [B, Hkv, seq_k, d]
  std::int64_t row; // first row of (b, h) in [B, H, seq_q]
};
__device__ HeadPtrs head_ptrs(const AttentionParams& p, int b, int h) {
  const int kvh = h / (p.heads / p.kv_heads);
  const std::int64_t nq = p.seq_q, nk = p.seq_k, d = p.head_dim;
  return {(std::int64_t(b) * p.heads + h) * nq * d, (std::int64_t(b) * p.kv_heads + kvh) * nk * d,
          (std::int64_t(b) * p.heads + h) * nq};
}

// The shared causal rule (kernels/common/mask.h), bottom-right aligned when seq_q != seq_k.
__device__ bool visible(const AttentionParams& p, int qi, int kj) {
  return qi < p.seq_q && p.mask().visible(qi, kj);
}

// ---- forward: grid (query tiles, heads, batch) ----
__global__ void __launch_bounds__(kThreads) forward_kernel(AttentionParams p) {
  extern __shared__ double smem[];
  const int d = p.head_dim, ldt = d + 1;
  double* qs = smem;                   // (kBr, d+1)
  double* ks = qs + kBr * ldt;         // (kBc, d+1)
  double* vs = ks + kBc * ldt;         // (kBc, d+1)
  double* ps = vs + kBc * ldt;         // (kBr, kBc)
  double* oacc = ps + kBr * kBc;       // (kBr, d)
  double* row_l = oacc + kBr * d;      // (kBr)

  const int q0 = blockIdx.x * kBr;
  const HeadPtrs hp = head_ptrs(p, blockIdx.z, blockIdx.y);
  const double* q = static_cast<const double*>(p.q) + hp.q;
  const double* k = static_cast<const double*>(p.k) + hp.kv;
  const double* v = static_cast<const double*>(p.v) + hp.kv;
  const int tr = threadIdx.x / kBc, tc = threadIdx.x % kBc, qi = q0 + tr;
  // Causal: keys past the tile's last row's last key are masked for every row of the tile.
  const int key_end = p.mask().key_end(q0, kBr);

  load_tile(qs, q, q0, kBr, p.seq_q, d);
  for (int o = threadIdx.x; o < kBr * d; o += kThreads) oacc[o] = 0.0;

  // Pass 1: row max of the scaled scores.
  double m = -INFINITY;
  for (int kt = 0; kt < key_end; kt += kBc) {
    __syncthreads();  // the previous tile's readers are done
    load_tile(ks, k, kt, kBc, p.seq_k, d);
    __syncthreads();
    if (visible(p, qi, kt + tc)) {
      const double s = p.scale * dot(qs + tr * ldt, ks + tc * ldt, d);
      m = s > m ? s : m;
    }
  }
  m = row_max16(m);

  // Pass 2: l = sum exp(s - m), O += exp(s - m) V. The scores are recomputed bit for bit.
  double l = 0.0;
  for (int kt = 0; kt < key_end; kt += kBc) {
    __syncthreads();
    load_tile(ks, k, kt, kBc, p.seq_k, d);
    load_tile(vs, v, kt, kBc, p.seq_k, d);
    __syncthreads();
    double pr = 0.0;
    if (visible(p, qi, kt + tc)) pr = exp(p.scale * dot(qs + tr * ldt, ks + tc * ldt, d) - m);
    ps[tr * kBc + tc] = pr;
    l += pr;
    __syncthreads();
    for (int o = threadIdx.x; o < kBr * d; o += kThreads) {  // each thread owns the same outputs throughout
      const int r = o / d, kk = o - r * d;
      double acc = 0.0;
      for (int c = 0; c < kBc; ++c) acc = fma(ps[r * kBc + c], vs[c * ldt + kk], acc);
      oacc[o] += acc;
    }
  }
  l = row_sum16(l);
  // A row with no visible key has l = 0: O = 0 and LSE = -inf (attention.h).
  if (tc == 0) {
    row_l[tr] = l;
    if (qi < p.seq_q) static_cast<double*>(p.lse)[hp.row + qi] = l > 0.0 ? m + log(l) : -INFINITY;
  }
  __syncthreads();
  double* out = static_cast<double*>(p.o) + hp.q;
  for (int o = threadIdx.x; o < kBr * d; o += kThreads) {
    const int r = o / d, kk = o - r * d;
    if (q0 + r < p.seq_q) out[std::int64_t(q0 + r) * d + kk] = row_l[r] > 0.0 ? oacc[o] / row_l[r] : 0.0;
  }
}

// ---- backward ----

// D[row] = sum_k dO[row, k] * O[row, k]; one warp per row.
__global__ void d_kernel(const double* __restrict__ dout, const double* __restrict__ o, double* __restrict__ dd,
                         std::int64_t rows, int d) {
  const std::int64_t row = std::int64_t(blockIdx.x) * kRowsPerBlockD + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;  // the whole warp leaves together
  double acc = 0.0;
  for (int k = lane; k < d; k += kWarp) acc = fma(dout[row * d + k], o[row * d + k], acc);
  for (int off = kWarp / 2; off > 0; off >>= 1) acc += __shfl_xor_sync(kFullMask, acc, off);
  if (lane == 0) dd[row] = acc;
}

// P_ij = exp(scale * q_i.k_j - LSE_i), dS_ij = P_ij (dO_i.v_j - D_i); 0 where the pair is masked.
struct PdS {
  double p, ds;
};
__device__ PdS p_ds(const AttentionParams& p, bool vis, const double* qrow, const double* dorow,
                    const double* krow, const double* vrow, double lse, double dd) {
  if (!vis) return {0.0, 0.0};
  const int d = p.head_dim;
  const double pr = exp(p.scale * dot(qrow, krow, d) - lse);
  return {pr, pr * (dot(dorow, vrow, d) - dd)};
}

// Loads LSE and D of rows [row0, row0 + kBr) of one head (0 past seq_q).
__device__ void load_row_stats(double* lse_s, double* d_s, const AttentionParams& p, const double* dd,
                               std::int64_t head_row, int row0) {
  if (threadIdx.x < kBr) {
    const int r = row0 + threadIdx.x;
    lse_s[threadIdx.x] = r < p.seq_q ? static_cast<const double*>(p.lse)[head_row + r] : 0.0;
    d_s[threadIdx.x] = r < p.seq_q ? dd[head_row + r] : 0.0;
  }
}

// dQ: grid (query tiles, heads, batch).
__global__ void __launch_bounds__(kThreads) dq_kernel(AttentionParams p, const double* __restrict__ dd) {
  extern __shared__ double smem[];
  const int d = p.head_dim, ldt = d + 1;
  double* qs = smem;                 // (kBr, d+1)
  double* dos = qs + kBr * ldt;      // (kBr, d+1)
  double* ks = dos + kBr * ldt;      // (kBc, d+1)
  double* vs = ks + kBc * ldt;       // (kBc, d+1)
  double* dss = vs + kBc * ldt;      // (kBr, kBc)
  double* dqacc = dss + kBr * kBc;   // (kBr, d)
  double* lse_s = dqacc + kBr * d;   // (kBr)
  double* d_s = lse_s + kBr;         // (kBr)

  const int q0 = blockIdx.x * kBr;
  const HeadPtrs hp = head_ptrs(p, blockIdx.z, blockIdx.y);
  const int tr = threadIdx.x / kBc, tc = threadIdx.x % kBc, qi = q0 + tr;
  const int key_end = p.mask().key_end(q0, kBr);  // 0: every row empty, dQ = 0

  load_tile(qs, static_cast<const double*>(p.q) + hp.q, q0, kBr, p.seq_q, d);
  load_tile(dos, static_cast<const double*>(p.dout) + hp.q, q0, kBr, p.seq_q, d);
  load_row_stats(lse_s, d_s, p, dd, hp.row, q0);
  for (int o = threadIdx.x; o < kBr * d; o += kThreads) dqacc[o] = 0.0;

  for (int kt = 0; kt < key_end; kt += kBc) {
    __syncthreads();
    load_tile(ks, static_cast<const double*>(p.k) + hp.kv, kt, kBc, p.seq_k, d);
    load_tile(vs, static_cast<const double*>(p.v) + hp.kv, kt, kBc, p.seq_k, d);
    __syncthreads();
    const PdS r = p_ds(p, visible(p, qi, kt + tc), qs + tr * ldt, dos + tr * ldt, ks + tc * ldt,
                       vs + tc * ldt, lse_s[tr], d_s[tr]);
    dss[tr * kBc + tc] = r.ds;
    __syncthreads();
    for (int o = threadIdx.x; o < kBr * d; o += kThreads) {
      const int row = o / d, kk = o - row * d;
      double acc = 0.0;
      for (int c = 0; c < kBc; ++c) acc = fma(dss[row * kBc + c], ks[c * ldt + kk], acc);
      dqacc[o] += acc;
    }
  }
  double* dq = static_cast<double*>(p.dq) + hp.q;
  for (int o = threadIdx.x; o < kBr * d; o += kThreads) {
    const int row = o / d, kk = o - row * d;
    if (q0 + row < p.seq_q) dq[std::int64_t(q0 + row) * d + kk] = p.scale * dqacc[o];
  }
}

// dK, dV: grid (key tiles, kv heads, batch); loops over the group's query heads and query tiles.
__global__ void __launch_bounds__(kThreads) dkv_kernel(AttentionParams p, const double* __restrict__ dd) {
  extern __shared__ double smem[];
  const int d = p.head_dim, ldt = d + 1;
  double* ks = smem;                 // (kBc, d+1)
  double* vs = ks + kBc * ldt;       // (kBc, d+1)
  double* qs = vs + kBc * ldt;       // (kBr, d+1)
  double* dos = qs + kBr * ldt;      // (kBr, d+1)
  double* ps = dos + kBr * ldt;      // (kBr, kBc)
  double* dss = ps + kBr * kBc;      // (kBr, kBc)
  double* dkacc = dss + kBr * kBc;   // (kBc, d)
  double* dvacc = dkacc + kBc * d;   // (kBc, d)
  double* lse_s = dvacc + kBc * d;   // (kBr)
  double* d_s = lse_s + kBr;         // (kBr)

  const int k0 = blockIdx.x * kBc, kvh = blockIdx.y, b = blockIdx.z;
  const int group = p.heads / p.kv_heads;
  const int tr = threadIdx.x / kBc, tc = threadIdx.x % kBc, kj = k0 + tc;
  const std::int64_t kv_off = (std::int64_t(b) * p.kv_heads + kvh) * p.seq_k * d;

  load_tile(ks, static_cast<const double*>(p.k) + kv_off, k0, kBc, p.seq_k, d);
  load_tile(vs, static_cast<const double*>(p.v) + kv_off, k0, kBc, p.seq_k, d);
  for (int o = threadIdx.x; o < kBc * d; o += kThreads) dkacc[o] = dvacc[o] = 0.0;
  // Causal: query rows before mask.first_row(k0) see none of these keys.
  const int q_first = p.mask().first_q_tile(k0, kBr) * kBr;

  for (int hh = 0; hh < group; ++hh) {
    const HeadPtrs hp = head_ptrs(p, b, kvh * group + hh);
    for (int qt = q_first; qt < p.seq_q; qt += kBr) {
      __syncthreads();
      load_tile(qs, static_cast<const double*>(p.q) + hp.q, qt, kBr, p.seq_q, d);
      load_tile(dos, static_cast<const double*>(p.dout) + hp.q, qt, kBr, p.seq_q, d);
      load_row_stats(lse_s, d_s, p, dd, hp.row, qt);
      __syncthreads();
      const PdS r = p_ds(p, visible(p, qt + tr, kj), qs + tr * ldt, dos + tr * ldt, ks + tc * ldt,
                         vs + tc * ldt, lse_s[tr], d_s[tr]);
      ps[tr * kBc + tc] = r.p;
      dss[tr * kBc + tc] = r.ds;
      __syncthreads();
      for (int o = threadIdx.x; o < kBc * d; o += kThreads) {
        const int c = o / d, kk = o - c * d;
        double acc_v = 0.0, acc_k = 0.0;
        for (int row = 0; row < kBr; ++row) {
          acc_v = fma(ps[row * kBc + c], dos[row * ldt + kk], acc_v);
          acc_k = fma(dss[row * kBc + c], qs[row * ldt + kk], acc_k);
        }
        dvacc[o] += acc_v;
        dkacc[o] += acc_k;
      }
    }
  }
  double* dk = static_cast<double*>(p.dk) + kv_off;
  double* dv = static_cast<double*>(p.dv) + kv_off;
  for (int o = threadIdx.x; o < kBc * d; o += kThreads) {
    const int c = o / d, kk = o - c * d;
    if (k0 + c < p.seq_k) {
      dk[std::int64_t(k0 + c) * d + kk] = p.scale * dkacc[o];
      dv[std::int64_t(k0 + c) * d + kk] = dvacc[o];
    }
  }
}

std::size_t smem_bytes(Pass pass, int d) {
  std::size_t doubles = fwd_smem_doubles(d);
  if (pass != Pass::fwd) {
    doubles = doubles > dq_smem_doubles(d) ? doubles : dq_smem_doubles(d);
    doubles = doubles > dkv_smem_doubles(d) ? doubles : dkv_smem_doubles(d);
  }
  return doubles * sizeof(double);
}

std::size_t device_smem_limit() {
  int dev = 0, limit = 0;
  FB_CUDA_CHECK(cudaGetDevice(&dev));
  FB_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  return std::size_t(limit);
}

template <typename Kernel, typename... Args>
void launch(Kernel kernel, dim3 grid, std::size_t smem, cudaStream_t stream, Args... args) {
  FB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  kernel<<<grid, kThreads, smem, stream>>>(args...);
  FB_CUDA_CHECK_LAUNCH();
}

constexpr int kMaxGridYZ = 65535;

}  // namespace

const char* unsupported(Pass pass, const AttentionParams& p) {
  if (p.dtype != Dtype::fp64) return "reference: takes fp64 inputs only";
  if (p.batch < 1 || p.heads < 1 || p.kv_heads < 1 || p.seq_q < 1 || p.seq_k < 1 || p.head_dim < 1)
    return "reference: batch, heads, kv_heads, seq_q, seq_k and head_dim must be >= 1";
  if (p.heads % p.kv_heads != 0) return "reference: heads must be a multiple of kv_heads";
  if (p.heads > kMaxGridYZ || p.batch > kMaxGridYZ) return "reference: heads and batch must be <= 65535";
  if (smem_bytes(pass, p.head_dim) > device_smem_limit())
    return "reference: head_dim too large for this device's shared memory";
  return nullptr;
}

std::size_t workspace_bytes(Pass pass, const AttentionParams& p) {
  return pass == Pass::fwd ? 0 : std::size_t(p.rows()) * sizeof(double);
}

void forward(const AttentionParams& p, const Context& ctx) {
  const dim3 grid((p.seq_q + kBr - 1) / kBr, p.heads, p.batch);
  launch(forward_kernel, grid, fwd_smem_doubles(p.head_dim) * sizeof(double),
         static_cast<cudaStream_t>(ctx.stream), p);
}

void backward(const AttentionParams& p, const Context& ctx) {
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  auto* dd = static_cast<double*>(p.workspace);
  if (!dd) throw std::invalid_argument("reference backward: no workspace for D");
  const std::int64_t rows = p.rows();
  d_kernel<<<unsigned((rows + kRowsPerBlockD - 1) / kRowsPerBlockD), kRowsPerBlockD * kWarp, 0, stream>>>(
      static_cast<const double*>(p.dout), static_cast<const double*>(p.o), dd, rows, p.head_dim);
  FB_CUDA_CHECK_LAUNCH();
  launch(dq_kernel, dim3((p.seq_q + kBr - 1) / kBr, p.heads, p.batch),
         dq_smem_doubles(p.head_dim) * sizeof(double), stream, p, static_cast<const double*>(dd));
  launch(dkv_kernel, dim3((p.seq_k + kBc - 1) / kBc, p.kv_heads, p.batch),
         dkv_smem_doubles(p.head_dim) * sizeof(double), stream, p, static_cast<const double*>(dd));
}

}  // namespace fb::cuda::reference
