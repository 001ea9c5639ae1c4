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
// fp8 (fp8.cu; e4m3 Q, K, V with per-tensor descales, attention.h), forward only, cuBLASLt FP8 GEMMs:
//   S  = (scale dq dk) Q8 K8^T       fp32 accumulate, fp32 out: S kept as exactly as the CPU emulation
//                                    keeps it, so naive stays the accuracy baseline
//   P8 = e4m3(softmax(S) p_scale)    row kernel, LSE from the fp32 S
//   O  = (dv / p_scale) P8 V8        fp32 accumulate, bf16 out; V8 transposed first (V^T in the workspace)
// head_dim and seq_k off cuBLASLt's 16-byte grid run on zero-padded copies (fp8_pad.h), so every shape runs.
// The scales are folded into the GEMMs' alpha (host scalars: one fp32 multiply of the fp32 accumulator,
// as the CPU emulation applies them); no scale pointers, so nothing else lives in device memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "attention.h"

namespace fb::cuda::naive {

// Where S and P live in the workspace. Rows are padded to a multiple of 16 bytes so that every row
// starts 16-byte aligned (vector loads in the row kernels, aligned leading dimensions for cuBLAS).
// fp8: S is fp32 and P e4m3 (same ld in elements); V^T, the padded operands (fp8_pad.h: dp and np are
// head_dim and seq_k rounded up to 16) and cuBLASLt's own workspace follow.
struct Layout {
  std::int64_t ld = 0;         // row stride of S and P in elements (>= seq_k)
  std::size_t p_offset = 0;    // P: [batch, heads, seq_q, ld], kept from the forward for the backward
  std::size_t s_offset = 0;    // S, then dP and dS in the backward: [batch, heads, seq_q, ld]
  std::size_t vt_offset = 0;   // fp8: V^T [batch, kv_heads, dp, np] (e4m3), for the TN P.V GEMM
  // fp8 at a head_dim or seq_k off cuBLASLt's 16-code grid (fp8_pad.h): Q and O dp wide, K [np][dp];
  // empty (each offset equal to the next) where nothing is padded.
  std::size_t q_pad_offset = 0;
  std::size_t k_pad_offset = 0;
  std::size_t o_pad_offset = 0;
  std::size_t lt_offset = 0;   // fp8: cuBLASLt's workspace, kFp8LtWorkspaceBytes
  std::size_t bytes = 0;       // total workspace
};
// Scratch the FP8 GEMMs may use (split-K and the like); in the tracked workspace, not cuBLAS's own.
constexpr std::size_t kFp8LtWorkspaceBytes = std::size_t(4) << 20;
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

// ---- fp8 (fp8.cu) ----
// Why fp8 cannot run (forward only; a device with FP8 tensor cores, sm_89+), nullptr when it can. Any
// head_dim and seq_k: the ones off cuBLASLt FP8's 16-byte grid are padded (fp8_pad.h).
const char* unsupported_fp8(Pass pass, const AttentionParams& p);
void forward_fp8(const AttentionParams& p, const Context& ctx);

// ---- row kernels (softmax.cu) ----
// P = softmax(S) over each row's visible keys (CausalMask: the first seq_k columns, or when causal
// j <= i + seq_k - seq_q; the rest 0), and LSE = max + log(sum exp(s - max)); a row with no visible
// key gets P = 0 and LSE = -inf. S and P are [rows, ld] of the input dtype; LSE is the accumulator type.
void softmax_rows(const AttentionParams& p, const void* s, void* prob, std::int64_t ld, cudaStream_t stream);
// fp8: the same from an fp32 S, P stored as e4m3 codes of P * p.p_scale (padding columns 0).
void softmax_rows_fp8(const AttentionParams& p, const float* s, std::uint8_t* prob, std::int64_t ld,
                      cudaStream_t stream);
// ds[r, j] = prob[r, j] * (ds[r, j] - D[r]) in place, D[r] = sum_k dO[r, k] * O[r, k].
void softmax_backward_rows(const AttentionParams& p, const void* prob, void* ds, std::int64_t ld,
                           cudaStream_t stream);

}  // namespace fb::cuda::naive
