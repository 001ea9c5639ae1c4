// Naive attention in fp8 (e4m3 Q, K, V; attention.h, naive.h): two cuBLASLt FP8 GEMMs around the row
// kernel, the materialised-S baseline the tiled FP8 kernels are judged against.
//
// cuBLASLt runs FP8 only in the "TN" form on Hopper: op(A) = A^T and op(B) = B, i.e. both operands
// K-major (the reduced dimension contiguous), column-major throughout. A row-major (r x c) matrix with
// row stride ld is, to cuBLAS, a column-major (c x r) one with leading dimension ld. Per batch entry
// (b, kv head), with G = (heads / kv_heads) * seq_q query rows sharing the K/V head (BHSD keeps them
// contiguous, so GQA is one strided batch as in naive.cu):
//   S^T (seq_k x G) = K8 (col-major d x seq_k, op T) * Q8^T (col-major d x G, op N)     k = d
//   O^T (d x G)     = V8^T (col-major seq_k x d, op T) * P8^T (col-major seq_k x G, op N)  k = seq_k
// The first is TN as the tensors lie. The second needs V's rows K-major along keys: V^T, written by a
// small transpose kernel into the workspace.
#include <cublasLt.h>
#include <cublas_v2.h>  // cublasGetStatusString (FB_CUBLAS_CHECK)

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "common/check.h"
#include "common/device_caps.h"
#include "naive/naive.h"

namespace fb::cuda::naive {
namespace {

// cuBLASLt's FP8 requirement: dimensions and leading dimensions 16-byte aligned, i.e. 16 e4m3 codes.
constexpr int kFp8Align = 16;
// FP8 tensor cores: Ada (8.9) and Hopper (9.0) onwards.
constexpr int kFp8MinMajor = 8, kFp8MinMinor = 9;

// ---- V^T: [batch * kv_heads][seq_k][d] -> [batch * kv_heads][d][seq_k], bytes ----
constexpr int kTransposeTile = 32;
constexpr int kTransposeRowsPerPass = 8;  // block (32, 8): each thread moves 4 codes of a tile
constexpr unsigned kMaxGridZ = 65535;

__global__ void transpose_kv_kernel(const std::uint8_t* __restrict__ v, std::uint8_t* __restrict__ vt, int n,
                                    int d, int heads) {
  __shared__ std::uint8_t tile[kTransposeTile][kTransposeTile + 1];  // +1: no bank conflicts on the turn
  const int d0 = blockIdx.x * kTransposeTile, j0 = blockIdx.y * kTransposeTile;
  for (int h = blockIdx.z; h < heads; h += gridDim.z) {
    const std::uint8_t* src = v + std::int64_t(h) * n * d;
    std::uint8_t* dst = vt + std::int64_t(h) * n * d;
    for (int r = threadIdx.y; r < kTransposeTile; r += kTransposeRowsPerPass) {
      const int j = j0 + r, c = d0 + threadIdx.x;
      if (j < n && c < d) tile[r][threadIdx.x] = src[std::int64_t(j) * d + c];
    }
    __syncthreads();
    for (int r = threadIdx.y; r < kTransposeTile; r += kTransposeRowsPerPass) {
      const int c = d0 + r, j = j0 + threadIdx.x;
      if (j < n && c < d) dst[std::int64_t(c) * n + j] = tile[threadIdx.x][r];
    }
    __syncthreads();  // the tile is reused for the next head
  }
}

void transpose_kv(const void* v, void* vt, int n, int d, int heads, cudaStream_t stream) {
  const dim3 block(kTransposeTile, kTransposeRowsPerPass);
  const dim3 grid(unsigned((d + kTransposeTile - 1) / kTransposeTile),
                  unsigned((n + kTransposeTile - 1) / kTransposeTile),
                  unsigned(heads) < kMaxGridZ ? unsigned(heads) : kMaxGridZ);
  transpose_kv_kernel<<<grid, block, 0, stream>>>(static_cast<const std::uint8_t*>(v),
                                                  static_cast<std::uint8_t*>(vt), n, d, heads);
  FB_CUDA_CHECK_LAUNCH();
}

// ---- cuBLASLt ----

// One handle per device, made on first use and kept for the process (cuBLASLt handles are not tied to
// a stream; destroying one at static destruction could run after the CUDA context is gone).
cublasLtHandle_t lt_handle() {
  static std::mutex mutex;
  static std::map<int, cublasLtHandle_t> handles;
  int device = 0;
  FB_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  cublasLtHandle_t h = nullptr;
  FB_CUBLAS_CHECK(cublasLtCreate(&h));
  handles.emplace(device, h);
  return h;
}

// RAII for the descriptors of one call (destroy calls cannot usefully fail; their status is ignored).
struct MatmulDesc {
  cublasLtMatmulDesc_t h = nullptr;
  MatmulDesc() { FB_CUBLAS_CHECK(cublasLtMatmulDescCreate(&h, CUBLAS_COMPUTE_32F, CUDA_R_32F)); }
  ~MatmulDesc() { (void)cublasLtMatmulDescDestroy(h); }
  MatmulDesc(const MatmulDesc&) = delete;
  MatmulDesc& operator=(const MatmulDesc&) = delete;
};
struct MatrixLayout {
  cublasLtMatrixLayout_t h = nullptr;
  MatrixLayout(cudaDataType_t type, std::uint64_t rows, std::uint64_t cols, std::int64_t ld, int batch,
               std::int64_t stride) {
    FB_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&h, type, rows, cols, ld));
    FB_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(h, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
    FB_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(h, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                     sizeof stride));
  }
  ~MatrixLayout() { (void)cublasLtMatrixLayoutDestroy(h); }
  MatrixLayout(const MatrixLayout&) = delete;
  MatrixLayout& operator=(const MatrixLayout&) = delete;
};
// Alignments are in bytes, of every batch entry's start (pointer and stride): the heuristic assumes
// 256 unless told, and would otherwise pick kernels that a 16-byte stride breaks.
struct Alignments {
  std::uint32_t a, b, d;
};
struct Preference {
  cublasLtMatmulPreference_t h = nullptr;
  Preference(std::uint64_t workspace_bytes, Alignments al) {
    FB_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&h));
    FB_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                         &workspace_bytes, sizeof workspace_bytes));
    FB_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(h, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al.a,
                                                         sizeof al.a));
    FB_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(h, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al.b,
                                                         sizeof al.b));
    FB_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(h, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al.d,
                                                         sizeof al.d));
    FB_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(h, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al.d,
                                                         sizeof al.d));
  }
  ~Preference() { (void)cublasLtMatmulPreferenceDestroy(h); }
  Preference(const Preference&) = delete;
  Preference& operator=(const Preference&) = delete;
};

constexpr std::uint32_t kMaxAlignment = 256;  // what cuBLASLt assumes by default; cudaMalloc's
std::uint32_t alignment(const void* ptr, std::int64_t stride_bytes) {
  const std::uint64_t x = std::uint64_t(reinterpret_cast<std::uintptr_t>(ptr)) | std::uint64_t(stride_bytes) |
                          kMaxAlignment;
  return std::uint32_t(x & (~x + 1));  // lowest set bit
}

// D (m x n, column-major, type d_type) = alpha * A^T B, batched with strides; A stored (k x m) and B
// (k x n), both e4m3 and K-major. Elements: lda, ldb, ldd and the strides.
struct TnGemm {
  int m, n, k, batch;
  std::int64_t lda, ldb, ldd;
  std::int64_t stride_a, stride_b, stride_d;
  cudaDataType_t d_type;
  auto key(int device, Alignments al) const {
    return std::make_tuple(device, m, n, k, batch, lda, ldb, ldd, stride_a, stride_b, stride_d, int(d_type),
                           al.a, al.b, al.d);
  }
};

// The heuristic's pick per shape, asked once: the query costs host time that would otherwise sit inside
// every timed forward (the GPU idles while the first GEMM waits for it).
cublasLtMatmulAlgo_t pick_algo(cublasLtHandle_t lt, const TnGemm& g, Alignments al, cublasLtMatmulDesc_t desc,
                               cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t d) {
  using Key = decltype(g.key(0, al));
  static std::mutex mutex;
  static std::map<Key, cublasLtMatmulAlgo_t> cache;
  int device = 0;
  FB_CUDA_CHECK(cudaGetDevice(&device));
  const Key key = g.key(device, al);
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const Preference pref(kFp8LtWorkspaceBytes, al);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  FB_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(lt, desc, a, b, d, d, pref.h, 1, &result, &found));
  if (found < 1)
    throw CudaError("naive fp8: cublasLtMatmulAlgoGetHeuristic found no FP8 algorithm for m=" +
                    std::to_string(g.m) + " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k));
  cache.emplace(key, result.algo);
  return result.algo;
}

void tn_gemm(const TnGemm& g, float alpha, const void* a_ptr, const void* b_ptr, void* d_ptr, void* workspace,
             cudaStream_t stream) {
  const cublasLtHandle_t lt = lt_handle();
  const MatmulDesc desc;
  const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
  FB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t));
  FB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof op_n));
  // No fast accumulation: Hopper's FP8 MMA keeps a reduced-precision accumulator, and cuBLASLt
  // promotes it to fp32 at intervals unless told otherwise. The baseline keeps the promotion.
  const std::int8_t fast_accum = 0;
  FB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accum,
                                                 sizeof fast_accum));
  const MatrixLayout a(CUDA_R_8F_E4M3, std::uint64_t(g.k), std::uint64_t(g.m), g.lda, g.batch, g.stride_a);
  const MatrixLayout b(CUDA_R_8F_E4M3, std::uint64_t(g.k), std::uint64_t(g.n), g.ldb, g.batch, g.stride_b);
  // C has D's type and layout (beta = 0: never read, but cuBLASLt checks its type).
  const MatrixLayout d(g.d_type, std::uint64_t(g.m), std::uint64_t(g.n), g.ldd, g.batch, g.stride_d);
  const std::int64_t d_bytes = g.d_type == CUDA_R_32F ? 4 : 2;
  const Alignments al{alignment(a_ptr, g.stride_a), alignment(b_ptr, g.stride_b),
                      alignment(d_ptr, g.stride_d * d_bytes)};
  const cublasLtMatmulAlgo_t algo = pick_algo(lt, g, al, desc.h, a.h, b.h, d.h);
  const float beta = 0.0f;
  FB_CUBLAS_CHECK(cublasLtMatmul(lt, desc.h, &alpha, a_ptr, a.h, b_ptr, b.h, &beta, d_ptr, d.h, d_ptr, d.h,
                                 &algo, workspace, kFp8LtWorkspaceBytes, stream));
}

}  // namespace

const char* unsupported_fp8(Pass pass, const AttentionParams& p) {
  if (pass != Pass::fwd) return "naive: fp8 runs the forward only (no fp8 backward is built)";
  if (p.head_dim % kFp8Align != 0 || p.seq_k % kFp8Align != 0)
    return "naive: fp8 needs head_dim and seq_k to be multiples of 16 (cuBLASLt FP8 GEMMs take 16-byte "
           "aligned dimensions)";
  const auto caps = current_device_caps();
  if (!caps) return "naive: fp8: no CUDA device answers";
  if (caps->major < kFp8MinMajor || (caps->major == kFp8MinMajor && caps->minor < kFp8MinMinor))
    return "naive: fp8 needs FP8 tensor cores (compute capability 8.9 or later)";
  return nullptr;
}

void forward_fp8(const AttentionParams& p, const Context& ctx) {
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  const Layout lay = layout(p);
  char* ws = static_cast<char*>(p.workspace);
  auto* prob = reinterpret_cast<std::uint8_t*>(ws + lay.p_offset);
  auto* s = reinterpret_cast<float*>(ws + lay.s_offset);
  void* vt = ws + lay.vt_offset;
  void* lt_ws = ws + lay.lt_offset;
  const int n = p.seq_k, d = p.head_dim, rows_g = p.group() * p.seq_q, batch = p.batch * p.kv_heads;
  const std::int64_t ld = lay.ld;

  transpose_kv(p.v, vt, n, d, batch, stream);
  // S = (scale dq dk) Q8 K8^T, fp32 (the CPU emulation's product of the same three factors, in float).
  const float score_alpha = float(p.scale) * p.descale_q * p.descale_k;
  const TnGemm qk{n, rows_g, d, batch, d, d, ld, std::int64_t(n) * d, std::int64_t(rows_g) * d,
                  std::int64_t(rows_g) * ld, CUDA_R_32F};
  tn_gemm(qk, score_alpha, p.k, p.q, s, lt_ws, stream);
  softmax_rows_fp8(p, s, prob, ld, stream);
  // O = (dv / p_scale) P8 V8, bf16 out; padding keys of P (none: seq_k % 16 == 0, ld == seq_k) are 0.
  const float out_alpha = p.descale_v / p.p_scale;
  const TnGemm pv{d, rows_g, n, batch, n, ld, d, std::int64_t(n) * d, std::int64_t(rows_g) * ld,
                  std::int64_t(rows_g) * d, CUDA_R_16BF};
  tn_gemm(pv, out_alpha, vt, prob, p.o, lt_ws, stream);
}

}  // namespace fb::cuda::naive
