// Naive attention: cuBLAS strided-batched GEMMs around the row kernels of softmax.cu.
//
// cuBLAS is column-major; a row-major (r x c) matrix with row stride ld is, to cuBLAS, its (c x r)
// transpose with leading dimension ld. Every product below is written as C^T = op(A) op(B) on those
// transposed views. Per batch entry (b, kv head), with g = heads / kv_heads and G = g*N rows:
//   Q, O, dO, dQ   (G x d)  the group's query heads, contiguous in BHSD
//   K, V, dK, dV   (N x d)
//   S, P, dP, dS   (G x N)  row stride ld
#include <cublas_v2.h>

#include <stdexcept>

#include "common/check.h"
#include "naive/fp8_pad.h"
#include "naive/naive.h"

namespace fb::cuda::naive {
namespace {

constexpr std::size_t kVecBytes = 16;        // the row kernels' vector width
constexpr std::size_t kBufferAlign = 256;    // each workspace buffer starts where cudaMalloc would

std::size_t align_up(std::size_t x, std::size_t a) { return (x + a - 1) / a * a; }

struct GemmTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
};

GemmTypes gemm_types(Dtype t, bool tf32) {
  // TF32 peer: fp32 data, tensor cores with inputs rounded to TF32 and fp32 accumulation.
  if (tf32 && t == Dtype::fp32) return {CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
  switch (t) {
    // fp16/bf16: tensor cores, fp32 accumulation, output rounded to the input dtype (as frameworks do).
    case Dtype::bf16: return {CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    case Dtype::fp16: return {CUDA_R_16F, CUBLAS_COMPUTE_32F};
    // fp32 must be exact FP32: the pedantic compute type rules out TF32 (and BF16x9 emulation) whatever
    // the handle's math mode or NVIDIA_TF32_OVERRIDE say.
    case Dtype::fp32: return {CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC};
    // fp64 arithmetic (DMMA or FMA) is exact IEEE fp64; emulation would need a math mode we never set.
    case Dtype::fp64: return {CUDA_R_64F, CUBLAS_COMPUTE_64F};
    case Dtype::fp8: break;  // FP8 GEMMs are cuBLASLt's: fp8.cu, never through here
  }
  throw std::invalid_argument("naive: unknown dtype");
}

// C = alpha * op(A) op(B), column-major, batched over (batch, kv_heads) with the given strides.
struct Operand {
  const void* ptr;
  int ld;
  long long stride;
};

// tf32: fp32 GEMMs on TF32 tensor cores (the TF32 peer); ignored for other dtypes.
void gemm(cublasHandle_t h, Dtype t, bool tf32, cublasOperation_t op_a, cublasOperation_t op_b, int m,
          int n, int k, double alpha, Operand a, Operand b, void* c, int ldc, long long stride_c, int batch) {
  const GemmTypes ty = gemm_types(t, tf32);
  const float alpha_f = float(alpha), beta_f = 0.0f;
  const double beta_d = 0.0;
  const bool fp64_scalars = ty.compute == CUBLAS_COMPUTE_64F;
  const void* alpha_p = fp64_scalars ? static_cast<const void*>(&alpha) : &alpha_f;
  const void* beta_p = fp64_scalars ? static_cast<const void*>(&beta_d) : &beta_f;
  FB_CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, op_a, op_b, m, n, k, alpha_p, a.ptr, ty.data, a.ld,
                                             a.stride, b.ptr, ty.data, b.ld, b.stride, beta_p, c, ty.data,
                                             ldc, stride_c, batch, ty.compute, CUBLAS_GEMM_DEFAULT));
}

struct Views {
  int n, d, rows_g, batch;  // seq_k, head_dim, G = g*seq_q, batch * kv_heads
  int ld;
  long long q_stride, kv_stride, s_stride;  // elements per batch entry: G*d, seq_k*d, G*ld
  char* p;
  char* s;
};

Views views(const AttentionParams& prm) {
  const Layout lay = layout(prm);
  Views v;
  v.n = prm.seq_k;
  v.d = prm.head_dim;
  v.rows_g = prm.group() * prm.seq_q;
  v.batch = prm.batch * prm.kv_heads;
  v.ld = int(lay.ld);
  v.q_stride = (long long)v.rows_g * v.d;
  v.kv_stride = (long long)v.n * v.d;
  v.s_stride = (long long)v.rows_g * v.ld;
  v.p = static_cast<char*>(prm.workspace) + lay.p_offset;
  v.s = static_cast<char*>(prm.workspace) + lay.s_offset;
  return v;
}

cublasHandle_t bound_handle(const Context& ctx) {
  auto h = static_cast<cublasHandle_t>(ctx.cublas);
  if (!h) throw std::invalid_argument("naive: Context.cublas is null");
  FB_CUBLAS_CHECK(cublasSetStream(h, static_cast<cudaStream_t>(ctx.stream)));
  return h;
}

}  // namespace

Layout layout(const AttentionParams& p) {
  Layout lay;
  const std::size_t e = dtype_bytes(p.dtype);
  const std::int64_t per_vec = std::int64_t(kVecBytes / e);  // fp8: 16 codes, cuBLASLt's ld rule too
  lay.ld = (std::int64_t(p.seq_k) + per_vec - 1) / per_vec * per_vec;
  const std::size_t pairs = std::size_t(p.batch) * p.heads * p.seq_q * lay.ld;
  const std::size_t nn = pairs * e;
  lay.p_offset = 0;
  lay.s_offset = align_up(nn, kBufferAlign);
  if (p.dtype != Dtype::fp8) {
    lay.bytes = lay.s_offset + nn;
    return lay;
  }
  // fp8: S in fp32, then V^T, the padded operands (none at aligned shapes: the same layout as without
  // them), then cuBLASLt's workspace.
  const Fp8PadBuffers pad = fp8_pad_buffers(p);
  lay.vt_offset = align_up(lay.s_offset + pairs * dtype_bytes(Dtype::fp32), kBufferAlign);
  lay.q_pad_offset = align_up(lay.vt_offset + pad.vt, kBufferAlign);
  lay.k_pad_offset = align_up(lay.q_pad_offset + pad.q, kBufferAlign);
  lay.o_pad_offset = align_up(lay.k_pad_offset + pad.k, kBufferAlign);
  lay.lt_offset = align_up(lay.o_pad_offset + pad.o, kBufferAlign);
  lay.bytes = lay.lt_offset + kFp8LtWorkspaceBytes;
  return lay;
}

const char* unsupported(Pass pass, const AttentionParams& p) {
  if (p.batch < 1 || p.heads < 1 || p.kv_heads < 1 || p.seq_q < 1 || p.seq_k < 1 || p.head_dim < 1)
    return "naive: batch, heads, kv_heads, seq_q, seq_k and head_dim must be >= 1";
  if (p.heads % p.kv_heads != 0) return "naive: heads must be a multiple of kv_heads";
  // cuBLAS takes row counts and leading dimensions as int.
  if (std::int64_t(p.group()) * p.seq_q > INT32_MAX || std::int64_t(p.batch) * p.kv_heads > INT32_MAX ||
      std::int64_t(p.seq_k) + 64 > INT32_MAX)
    return "naive: heads/kv_heads * seq_q or seq_k exceeds cuBLAS's int dimensions";
  if (p.dtype == Dtype::fp8) return unsupported_fp8(pass, p);
  return nullptr;
}

std::size_t workspace_bytes(Pass, const AttentionParams& p) { return layout(p).bytes; }

namespace {

void run_forward(const AttentionParams& p, const Context& ctx, bool tf32) {
  if (p.dtype == Dtype::fp8) return forward_fp8(p, ctx);  // cuBLASLt, fp8.cu
  cublasHandle_t h = bound_handle(ctx);
  const Views v = views(p);
  // S = scale * Q K^T:  S^T (seq_k x G) = K (seq_k x d) * Q^T (d x G); K's view is (d x seq_k), hence
  // op T. One GEMM per K/V head covers the G = group * seq_q query rows that share it.
  gemm(h, p.dtype, tf32, CUBLAS_OP_T, CUBLAS_OP_N, v.n, v.rows_g, v.d, p.scale, {p.k, v.d, v.kv_stride},
       {p.q, v.d, v.q_stride}, v.s, v.ld, v.s_stride, v.batch);
  softmax_rows(p, v.s, v.p, v.ld, static_cast<cudaStream_t>(ctx.stream));
  // O = P V:  O^T (d x G) = V^T (d x N) * P^T (N x G).
  gemm(h, p.dtype, tf32, CUBLAS_OP_N, CUBLAS_OP_N, v.d, v.rows_g, v.n, 1.0, {p.v, v.d, v.kv_stride},
       {v.p, v.ld, v.s_stride}, p.o, v.d, v.q_stride, v.batch);
}

void run_backward(const AttentionParams& p, const Context& ctx, bool tf32) {
  cublasHandle_t h = bound_handle(ctx);
  const Views v = views(p);
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  // dV = P^T dO, summed over the group by the G-long inner dimension:
  //   dV^T (d x N) = dO^T (d x G) * P (G x N), P's view being (N x G) -> transposed.
  gemm(h, p.dtype, tf32, CUBLAS_OP_N, CUBLAS_OP_T, v.d, v.n, v.rows_g, 1.0, {p.dout, v.d, v.q_stride},
       {v.p, v.ld, v.s_stride}, p.dv, v.d, v.kv_stride, v.batch);
  // dP = dO V^T into the S buffer: the same shape as S = Q K^T.
  gemm(h, p.dtype, tf32, CUBLAS_OP_T, CUBLAS_OP_N, v.n, v.rows_g, v.d, 1.0, {p.v, v.d, v.kv_stride},
       {p.dout, v.d, v.q_stride}, v.s, v.ld, v.s_stride, v.batch);
  // dS = P o (dP - rowsum(dO o O)), in place.
  softmax_backward_rows(p, v.p, v.s, v.ld, stream);
  // dQ = scale * dS K: the same shape as O = P V.
  gemm(h, p.dtype, tf32, CUBLAS_OP_N, CUBLAS_OP_N, v.d, v.rows_g, v.n, p.scale, {p.k, v.d, v.kv_stride},
       {v.s, v.ld, v.s_stride}, p.dq, v.d, v.q_stride, v.batch);
  // dK = scale * dS^T Q, summed over the group: the same shape as dV = P^T dO.
  gemm(h, p.dtype, tf32, CUBLAS_OP_N, CUBLAS_OP_T, v.d, v.n, v.rows_g, p.scale, {p.q, v.d, v.q_stride},
       {v.s, v.ld, v.s_stride}, p.dk, v.d, v.kv_stride, v.batch);
}

}  // namespace

void forward(const AttentionParams& p, const Context& ctx) { run_forward(p, ctx, false); }
void backward(const AttentionParams& p, const Context& ctx) { run_backward(p, ctx, false); }

const char* unsupported_tf32(Pass pass, const AttentionParams& p) {
  if (p.dtype != Dtype::fp32) return "naive (TF32): fp32 only (TF32 GEMMs are an fp32 mode)";
  return unsupported(pass, p);
}
void forward_tf32(const AttentionParams& p, const Context& ctx) {
  if (const char* why = unsupported_tf32(Pass::fwd, p)) throw std::invalid_argument(why);
  run_forward(p, ctx, true);
}
void backward_tf32(const AttentionParams& p, const Context& ctx) {
  if (const char* why = unsupported_tf32(Pass::bwd, p)) throw std::invalid_argument(why);
  run_backward(p, ctx, true);
}

}  // namespace fb::cuda::naive
