// The flash backward pass: dQ, dK, dV from Q, K, V, O, LSE and dO, nothing N x N.
//
// Host-side interface for kernels/dispatch.cu. Every pointer in the params is a device pointer; the
// forward's O and LSE (natural log, accumulator type) are inputs.
//
// What runs (flash_bwd.cu):
//   1. pre-pass: D = rowsum(dO * O), a padded copy of LSE (see flash_bwd_common.cuh), dQ accumulator
//      zeroed;
//   2. main kernel, one block per (batch, K/V head, K/V tile): recomputes P from Q, K and LSE, keeps
//      dK and dV in registers over the whole query range of the g = heads/kv_heads query heads that
//      share the K/V head (so dK/dV need no atomics), and adds its dQ share into the accumulator with
//      atomics (fp32 for fp16/bf16/fp32, fp64 for fp64);
//   3. convert: dQ accumulator -> dQ in the element type.
// fp16/bf16 run on tensor cores (mma.sync m16n8k16, fp32 accumulation); fp32 on TF32 tensor cores
// (mma.sync m16n8k8) with the 3xTF32 split unless Fp32Math says otherwise (flash/fp32_math.h); fp64,
// and fp32 with Fp32Math::exact, on CUDA cores.
//
// dQ through atomics makes the summation order, and so the last bits of dQ, vary between runs; dK
// and dV are summed in a fixed order and repeat exactly.
#pragma once

#include <cstddef>

#include "attention.h"
#include "flash/fp32_math.h"

namespace fb::cuda::flash {

// nullptr when backward() can run these params, else why not. Without Fp32Math: fp32 as tf32x3.
const char* backward_unsupported(const AttentionParams& p);
const char* backward_unsupported(const AttentionParams& p, Fp32Math math);

// Bytes of p.workspace backward() needs (D, padded LSE, dQ accumulator).
std::size_t backward_workspace_bytes(const AttentionParams& p);

// The pre-pass every tiled backward starts with (one launch on ctx's stream): per query row,
// D = rowsum(dO o O) and LSE (times log2(e) when lse_log2) into [batch * heads,
// backward_padded_seq(seq_q)] arrays of the accumulator type (float; double for fp64), padding rows
// and rows with no visible key D = 0 and LSE = +inf (so that P = 0 there); and, when dq_acc is not
// null, zeros into dq_acc: [batch * heads, seq_q, head_dim] elements, or [batch * heads,
// backward_padded_seq(seq_q), head_dim] with dq_padded.
void backward_prepass(const AttentionParams& p, void* lse_pad, void* d_pad, void* dq_acc,
                      bool dq_padded, bool lse_log2, const Context& ctx);
// Rows per (batch, head) of the pre-pass arrays: seq (seq_q) rounded up to a multiple of 128.
int backward_padded_seq(int seq);

// Keys per block of the main kernel for these params (the byte model's key tile).
int backward_key_tile(const AttentionParams& p);
int backward_key_tile(const AttentionParams& p, Fp32Math math);

// Writes p.dq, p.dk, p.dv. Throws std::invalid_argument for unsupported params or a missing
// workspace, fb::CudaError for a failed launch.
void backward(const AttentionParams& p, const Context& ctx);
void backward(const AttentionParams& p, const Context& ctx, Fp32Math math);

}  // namespace fb::cuda::flash
