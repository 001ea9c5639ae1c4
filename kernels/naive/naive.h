// Standard attention as frameworks run it, the strongest unfused baseline (host-only declarations).
//
// Forward, per (batch, kv head), with the g = heads/kv_heads query heads that share the K/V head viewed
// as one (g*N) x d matrix (BHSD keeps them contiguous, so one strided-batched GEMM covers GQA):
//   S = scale * Q K^T    cuBLAS -> S, a real N x N array per head (input dtype)
//   P = softmax(S), LSE  row kernel (fp32 statistics; fp64 for fp64), causal mask applied here
//   O = P V              cuBLAS
// Backward, keeping P from the forward:
//   dV = P^T dO          (the (g*N)-row view sums the group's contributions to the shared head)
//   dP = dO V^T          into the S buffer (S is dead after the forward's softmax)
//   dS = P o (dP - D)    in place, D = rowsum(dO o O) computed by the same row kernel
//   dQ = scale * dS K,  dK = scale * dS^T Q   (again summed over the group by the GEMM)
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "attention.h"

namespace fb::cuda::naive {

// Where S and P live in the workspace. Rows are padded to a multiple of 16 bytes so that every row
// starts 16-byte aligned (vector loads in the row kernels, aligned leading dimensions for cuBLAS).
struct Layout {
  std::int64_t ld = 0;         // row stride of S and P in elements (>= seq_k)
  std::size_t p_offset = 0;    // P: [batch, heads, seq_q, ld], kept from the forward for the backward
  std::size_t s_offset = 0;    // S, then dP and dS in the backward: [batch, heads, seq_q, ld]
  std::size_t bytes = 0;       // total workspace
};
Layout layout(const AttentionParams& p);

const char* unsupported(Pass pass, const AttentionParams& p);
// The same for every pass: the forward needs S and P; the backward keeps P and reuses S for dP/dS.
std::size_t workspace_bytes(Pass pass, const AttentionParams& p);
void forward(const AttentionParams& p, const Context& ctx);
void backward(const AttentionParams& p, const Context& ctx);

// The TF32 peer, fp32 only: the same computation with the GEMMs on TF32 tensor cores
// (CUBLAS_COMPUTE_32F_FAST_TF32: inputs rounded to TF32, fp32 accumulation), which is what a framework
// user gets with TF32 allowed (PyTorch's allow_tf32). The softmax stays fp32. Same workspace as above.
const char* unsupported_tf32(Pass pass, const AttentionParams& p);
void forward_tf32(const AttentionParams& p, const Context& ctx);
void backward_tf32(const AttentionParams& p, const Context& ctx);

// ---- row kernels (softmax.cu) ----
// P = softmax(S) over each row's visible keys (CausalMask: the first seq_k columns, or when causal
// j <= i + seq_k - seq_q; the rest 0), and LSE = max + log(sum exp(s - max)); a row with no visible
// key gets P = 0 and LSE = -inf. S and P are [rows, ld] of the input dtype; LSE is the accumulator type.
void softmax_rows(const AttentionParams& p, const void* s, void* prob, std::int64_t ld, cudaStream_t stream);
// ds[r, j] = prob[r, j] * (ds[r, j] - D[r]) in place, D[r] = sum_k dO[r, k] * O[r, k].
void softmax_backward_rows(const AttentionParams& p, const void* prob, void* ds, std::int64_t ld,
                           cudaStream_t stream);

}  // namespace fb::cuda::naive
