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
// A head_dim or seq_k off cuBLASLt's 16-code grid runs on padded copies (fp8_pad.h): d becomes dp and
// seq_k np in both GEMMs, the padding is zeros, the row kernel masks keys >= seq_k, and O is computed dp
// wide and cropped. At aligned shapes (dp = d, np = seq_k) no copy runs and the GEMMs are the same calls.
#include <cublasLt.h>
#include <cublas_v2.h>  // cublasGetStatusString (FB_CUBLAS_CHECK)

#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>

#include "common/check.h"
#include "common/device_caps.h"
#include "naive/fp8_pad.h"
#include "naive/naive.h"

namespace fb::cuda::naive {
namespace {

// FP8 tensor cores: Ada (8.9) and Hopper (9.0) onwards.
constexpr int kFp8MinMajor = 8, kFp8MinMinor = 9;

// ---- V^T: [batch * kv_heads][n][d] -> [batch * kv_heads][dp][np], bytes; zeros past d and n ----
constexpr int kTransposeTile = 32;
constexpr int kTransposeRowsPerPass = 8;  // block (32, 8): each thread moves 4 codes of a tile
constexpr unsigned kMaxGridZ = 65535;

struct TransposeShape {
  int n, d;    // V's keys and head dim
  int np, dp;  // V^T's: n and d rounded up (fp8_pad.h), or equal to them at aligned shapes
  int heads;   // batch * kv_heads planes
};

__global__ void transpose_kv_kernel(const std::uint8_t* __restrict__ v, std::uint8_t* __restrict__ vt,
                                    TransposeShape sh) {
  __shared__ std::uint8_t tile[kTransposeTile][kTransposeTile + 1];  // +1: no bank conflicts on the turn
  const int d0 = blockIdx.x * kTransposeTile, j0 = blockIdx.y * kTransposeTile;
  for (int h = blockIdx.z; h < sh.heads; h += gridDim.z) {
    const std::uint8_t* src = v + std::int64_t(h) * sh.n * sh.d;
    std::uint8_t* dst = vt + std::int64_t(h) * sh.np * sh.dp;
    for (int r = threadIdx.y; r < kTransposeTile; r += kTransposeRowsPerPass) {
      const int j = j0 + r, c = d0 + threadIdx.x;
      // Padding keys and columns read as code 0 (+0): P = 0 there, and 0 x 0 must not be 0 x NaN.
      tile[r][threadIdx.x] = j < sh.n && c < sh.d ? src[std::int64_t(j) * sh.d + c] : std::uint8_t(0);
    }
    __syncthreads();
    for (int r = threadIdx.y; r < kTransposeTile; r += kTransposeRowsPerPass) {
      const int c = d0 + r, j = j0 + threadIdx.x;
      if (j < sh.np && c < sh.dp) dst[std::int64_t(c) * sh.np + j] = tile[threadIdx.x][r];
    }
    __syncthreads();  // the tile is reused for the next head
  }
}

void transpose_kv(const void* v, void* vt, TransposeShape sh, cudaStream_t stream) {
  const dim3 block(kTransposeTile, kTransposeRowsPerPass);
  const dim3 grid(unsigned((sh.dp + kTransposeTile - 1) / kTransposeTile),
                  unsigned((sh.np + kTransposeTile - 1) / kTransposeTile),
                  unsigned(sh.heads) < kMaxGridZ ? unsigned(sh.heads) : kMaxGridZ);
  transpose_kv_kernel<<<grid, block, 0, stream>>>(static_cast<const std::uint8_t*>(v),
                                                  static_cast<std::uint8_t*>(vt), sh);
  FB_CUDA_CHECK_LAUNCH();
}

// ---- padding and cropping copies (fp8_pad.h's Resize: Q and K into the workspace, O out of it) ----
constexpr int kResizeThreads = 256;
constexpr std::int64_t kResizeMaxBlocks = 1 << 16;  // a grid-stride loop covers the rest

template <typename T>
__global__ void __launch_bounds__(kResizeThreads)
resize_kernel(const T* __restrict__ src, T* __restrict__ dst, Resize g) {
  const std::int64_t total = g.out_elems();
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t s = g.source(i);
    dst[i] = s < 0 ? T(0) : src[s];
  }
}

template <typename T> void resize(const void* src, void* dst, const Resize& g, cudaStream_t stream) {
  std::int64_t blocks = (g.out_elems() + kResizeThreads - 1) / kResizeThreads;
  if (blocks > kResizeMaxBlocks) blocks = kResizeMaxBlocks;
  if (blocks < 1) return;
  resize_kernel<T><<<unsigned(blocks), kResizeThreads, 0, stream>>>(static_cast<const T*>(src),
                                                                     static_cast<T*>(dst), g);
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
  const auto caps = current_device_caps();
  if (!caps) return "naive: fp8: no CUDA device answers";
  if (caps->major < kFp8MinMajor || (caps->major == kFp8MinMajor && caps->minor < kFp8MinMinor))
    return "naive: fp8 needs FP8 tensor cores (compute capability 8.9 or later)";
  return nullptr;
}

void forward_fp8(const AttentionParams& p, const Context& ctx) {
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  const Layout lay = layout(p);
  const Fp8Padding pad = fp8_padding(p);
  char* ws = static_cast<char*>(p.workspace);
  auto* prob = reinterpret_cast<std::uint8_t*>(ws + lay.p_offset);
  auto* s = reinterpret_cast<float*>(ws + lay.s_offset);
  void* vt = ws + lay.vt_offset;
  void* lt_ws = ws + lay.lt_offset;
  // dp, np: head_dim and seq_k as the GEMMs see them (padded, or equal at aligned shapes).
  const int n = p.seq_k, d = p.head_dim, dp = pad.dim_pad, np = pad.keys_pad;
  const int rows_g = p.group() * p.seq_q, batch = p.batch * p.kv_heads;
  const std::int64_t ld = lay.ld;  // S's and P's row stride: seq_k rounded up to 16 codes, i.e. np
  if (ld != np) throw std::logic_error("naive fp8: S's row stride is not seq_k padded to 16 (naive.cu layout)");

  const void* q8 = p.q;
  const void* k8 = p.k;
  void* o = p.o;
  if (pad.pads_dim()) {
    q8 = ws + lay.q_pad_offset;
    resize<std::uint8_t>(p.q, ws + lay.q_pad_offset, fp8_q_resize(p), stream);
    o = ws + lay.o_pad_offset;  // dp wide; cropped into p.o below
  }
  if (pad.any()) {
    k8 = ws + lay.k_pad_offset;
    resize<std::uint8_t>(p.k, ws + lay.k_pad_offset, fp8_k_resize(p), stream);
  }
  transpose_kv(p.v, vt, TransposeShape{n, d, np, dp, batch}, stream);
  // S = (scale dq dk) Q8 K8^T, fp32 (the CPU emulation's product of the same three factors, in float).
  // Padding keys give S = 0 in columns [seq_k, np), which the row kernel masks.
  const float score_alpha = float(p.scale) * p.descale_q * p.descale_k;
  const TnGemm qk{np, rows_g, dp, batch, dp, dp, ld, std::int64_t(np) * dp, std::int64_t(rows_g) * dp,
                  std::int64_t(rows_g) * ld, CUDA_R_32F};
  tn_gemm(qk, score_alpha, k8, q8, s, lt_ws, stream);
  softmax_rows_fp8(p, s, prob, ld, stream);
  // O = (dv / p_scale) P8 V8, bf16 out; P's padding keys [seq_k, ld) are written 0 by the row kernel,
  // and V^T's are 0.
  const float out_alpha = p.descale_v / p.p_scale;
  const TnGemm pv{dp, rows_g, np, batch, np, ld, dp, std::int64_t(np) * dp, std::int64_t(rows_g) * ld,
                  std::int64_t(rows_g) * dp, CUDA_R_16BF};
  tn_gemm(pv, out_alpha, vt, prob, o, lt_ws, stream);
  if (pad.pads_dim()) resize<std::uint16_t>(o, p.o, fp8_o_crop(p), stream);
}

}  // namespace fb::cuda::naive
